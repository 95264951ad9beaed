// aot/functionalize.cpp — removes copy_ nodes that write intermediates. The dispatcher
// already turns every in-place op into `copy_(self, functional(...))` (Note [registry]);
// when `self` is a value the graph made and nothing else aliases, that copy_ only renames
// the functional result, and removing it lets the result fuse with its readers. Contract in
// aot/aot.h; see Note [aot] (docs/notes/aot.md).
#include <set>

#include "aot/aot.h"
#include "core/shape.h"
#include "graph/rewrite.h"
#include "ops/registry.h"

namespace ember::aot {
namespace {

/// Same elements at the same places (strides of size-1 dims may differ: Note [inductor]).
bool same_geometry(const TensorMeta& a, const TensorMeta& b) {
  return a.sizes == b.sizes && core::strides_equivalent(a.sizes, a.strides, b.strides) && a.dtype == b.dtype &&
         a.device == b.device && a.storage_offset == b.storage_offset && !a.undefined && !b.undefined;
}

/// The nodes whose values some view reads, directly or through a chain of views: writing
/// one of them changes what the views see, so its copy_ must stay.
std::set<const Node*> viewed_nodes(const Graph& g) {
  std::set<const Node*> viewed;
  for (const auto& n : g.nodes()) {
    if (n->kind() != NodeKind::Call || n->op()->kind != ops::OpKind::View) continue;
    for (const Arg& a : n->args())
      if (a.kind == Arg::Kind::Value) viewed.insert(a.value.node);
  }
  return viewed;
}

}  // namespace

std::unique_ptr<Graph> functionalize(const Graph& g, size_t* removed) {
  const std::set<const Node*> viewed = viewed_nodes(g);
  return graph::rewrite(
      g,
      [&](const Node& n, const std::vector<Arg>& args, graph::GraphBuilder& b) -> std::optional<std::vector<ValueRef>> {
        if (n.target() != "aten::copy_") return std::nullopt;
        const Arg& dst = n.args().at(0);
        const Arg& src = n.args().at(1);
        if (dst.kind != Arg::Kind::Value || src.kind != Arg::Kind::Value) return std::nullopt;
        const Node* target = dst.value.node;
        if (target->kind() != NodeKind::Call || target->op()->kind == ops::OpKind::View) return std::nullopt;
        // A view of dst, or of the copy_'s result (another handle on dst), would see the write.
        if (viewed.count(target) || viewed.count(&n)) return std::nullopt;
        const TensorMeta& dm = target->meta().at(dst.value.index);
        const TensorMeta& sm = src.value.node->meta().at(src.value.index);
        if (!same_geometry(dm, sm)) return std::nullopt;
        // Readers after this point see the written value.
        b.redirect(dst.value, args.at(1).value);
        return std::vector<ValueRef>{args.at(1).value};
      },
      removed);
}

}  // namespace ember::aot
