// aot/functionalize.cpp — removes copy_ nodes that write intermediates, and lifts writes
// into graph inputs out of an inference graph. The dispatcher already turns every in-place
// op into `copy_(self, functional(...))` (Note [registry]); when `self` is a value the
// graph made and nothing else aliases, that copy_ only renames the functional result, and
// removing it lets the result fuse with its readers. When `self` is a graph input (a
// parameter or optimizer state an optimizer step updates), the value last written becomes
// an extra output that the AOT runtime copies into the input after the call. Contracts in
// aot/aot.h; see Note [aot] (docs/notes/aot.md).
#include <map>
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

/// Whether `n` is a copy_ whose destination is a value of `target`.
bool copies_into(const Node& n, const Node* target) {
  return n.kind() == NodeKind::Call && n.target() == "aten::copy_" && n.args().at(0).kind == Arg::Kind::Value &&
         n.args().at(0).value.node == target;
}

/// The inputs whose writes can be lifted: each written only by copy_ of a source with its
/// geometry, read by no view, no output, and no copy_'s result read by anything.
std::set<const Node*> liftable_inputs(const Graph& g) {
  std::set<const Node*> written, bad;
  const std::set<const Node*> viewed = viewed_nodes(g);
  for (const Node* in : g.inputs()) {
    if (viewed.count(in)) bad.insert(in);
  }
  std::set<const Node*> input_set;
  for (const Node* in : g.inputs()) input_set.insert(in);
  std::set<const Node*> copies;  // copy_ nodes into inputs
  for (const auto& n : g.nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    const auto& schema = n->op()->schema;
    for (size_t i = 0; i < n->args().size() && i < schema.arguments.size(); ++i) {
      const Arg& a = n->args()[i];
      if (a.kind != Arg::Kind::Value || !input_set.count(a.value.node) || !schema.arguments[i].is_write) continue;
      const Node* in = a.value.node;
      const bool ok = i == 0 && n->target() == "aten::copy_" && n->args().at(1).kind == Arg::Kind::Value &&
                      same_geometry(in->meta().at(0), n->args()[1].value.node->meta().at(n->args()[1].value.index));
      (ok ? written : bad).insert(in);
      if (ok) copies.insert(n.get());
    }
  }
  // Nothing may read a copy_'s result (it is the input itself), and no output may be the input.
  for (const auto& n : g.nodes()) {
    for (const Arg& a : n->args()) {
      const auto check = [&](const ValueRef& v) {
        if (copies.count(v.node)) bad.insert(v.node->args().at(0).value.node);
        if (n->kind() == NodeKind::Output && input_set.count(v.node)) bad.insert(v.node);
      };
      if (a.kind == Arg::Kind::Value) check(a.value);
      if (a.kind == Arg::Kind::ValueList)
        for (const auto& v : a.values)
          if (v) check(*v);
    }
  }
  // A write of one lifted input's value into another would read it after its own write moved.
  for (const Node* c : copies)
    if (written.count(c->args().at(1).value.node)) bad.insert(c->args().at(0).value.node);
  std::set<const Node*> out;
  for (const Node* in : written)
    if (!bad.count(in)) out.insert(in);
  return out;
}

}  // namespace

std::unique_ptr<Graph> lift_input_writes(const Graph& g, std::vector<InputWrite>* writes) {
  writes->clear();
  const std::set<const Node*> liftable = liftable_inputs(g);
  if (liftable.empty()) return g.clone();
  // The value last written into each input becomes an extra output (names survive clone()).
  std::unique_ptr<Graph> with_outputs = g.clone();
  std::vector<ValueRef> outputs = with_outputs->outputs();
  const std::vector<Node*> inputs = g.inputs();
  std::set<std::string> lifted_names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!liftable.count(inputs[i])) continue;
    const Node* last = nullptr;
    for (const auto& n : g.nodes())
      if (copies_into(*n, inputs[i])) last = n.get();
    const ValueRef src = last->args().at(1).value;
    writes->push_back({i, outputs.size()});
    outputs.push_back(ValueRef{with_outputs->find(src.node->name()), src.index});
    lifted_names.insert(inputs[i]->name());
  }
  with_outputs->set_output(std::move(outputs));
  return graph::rewrite(
      *with_outputs,
      [&](const Node& n, const std::vector<Arg>& args, graph::GraphBuilder& b) -> std::optional<std::vector<ValueRef>> {
        if (n.target() != "aten::copy_") return std::nullopt;
        const Arg& dst = n.args().at(0);
        if (dst.kind != Arg::Kind::Value || !lifted_names.count(dst.value.node->name())) return std::nullopt;
        // Readers after this point read the written value; the input itself is written
        // after the call, by the runtime.
        b.redirect(dst.value, args.at(1).value);
        return std::vector<ValueRef>{args.at(1).value};
      });
}

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
