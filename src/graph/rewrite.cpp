// graph/rewrite.cpp — GraphBuilder (new calls with meta-derived geometry), rewrite() (a
// graph rebuilt with replacements) and verify() (the invariants every pass keeps).
#include "graph/rewrite.h"

#include <map>
#include <set>

#include "ops/registry.h"

namespace ember::graph {
namespace {

/// A tensor on the meta device with `m`'s geometry: what a meta function reads.
Tensor meta_tensor(const TensorMeta& m) {
  auto impl = std::make_shared<TensorImpl>();
  int64_t extent = m.storage_offset + 1;
  for (size_t d = 0; d < m.sizes.size(); ++d) extent += m.sizes[d] == 0 ? 0 : (m.sizes[d] - 1) * m.strides[d];
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(extent) * element_size(m.dtype), kMeta);
  impl->sizes = m.sizes;
  impl->strides = m.strides;
  impl->storage_offset = m.storage_offset;
  // Symbolic geometry too, so that a meta function written over SymInt gives the new
  // node's geometry over the same symbols (Note [dynamic shapes]).
  impl->sym = m.sym;
  impl->dtype = m.dtype;
  impl->device = kMeta;
  impl->refresh();
  return Tensor(std::move(impl));
}

/// A literal as the schema's type wants it (numbers for Scalar arguments become Scalars).
IValue typed_literal(const ops::Argument& a, IValue v) {
  if (a.type.base == ops::BaseType::Scalar && !a.type.is_list && !v.is_none() && !v.is_scalar()) {
    if (v.is_double()) return IValue(Scalar(v.to_double()));
    if (v.is_int()) return IValue(Scalar(v.to_int()));
    if (v.is_bool()) return IValue(Scalar(v.to_bool()));
  }
  return v;
}

}  // namespace

Node* GraphBuilder::call_node(std::string_view op_name, std::vector<BuildArg> given) {
  const ops::OpDef& op = ops::registry().get(op_name);
  const auto& schema = op.schema.arguments;
  EMBER_INTERNAL_ASSERT(given.size() <= schema.size())
      << "GraphBuilder: " << op.name << " takes " << schema.size() << " arguments, got " << given.size();
  EMBER_INTERNAL_ASSERT(op.kind != ops::OpKind::Composite && op.kind != ops::OpKind::Dynamic && op.meta)
      << "GraphBuilder: " << op.name << " has no meta function (composite or data-dependent)";
  std::vector<Arg> args;
  Stack stack;
  Device device = kCPU;
  bool device_known = false;
  for (size_t i = 0; i < schema.size(); ++i) {
    Arg a;
    if (i < given.size()) {
      a = std::move(given[i].arg);
    } else {
      EMBER_INTERNAL_ASSERT(schema[i].default_value.has_value())
          << "GraphBuilder: " << op.name << " needs argument " << schema[i].name;
      a = Arg::of_literal(*schema[i].default_value);
    }
    switch (a.kind) {
      case Arg::Kind::Value: {
        const TensorMeta& m = meta(a.value);
        if (!device_known) device = m.device, device_known = true;
        stack.push_back(meta_tensor(m));
        break;
      }
      case Arg::Kind::ValueList: {
        std::vector<std::optional<Tensor>> opt;
        std::vector<Tensor> plain;
        for (const auto& v : a.values) {
          opt.push_back(v ? std::optional<Tensor>(meta_tensor(meta(*v))) : std::nullopt);
          if (v) plain.push_back(*opt.back());
        }
        stack.push_back(schema[i].type.element_optional ? IValue(std::move(opt)) : IValue(std::move(plain)));
        break;
      }
      case Arg::Kind::Literal:
        a.literal = typed_literal(schema[i], std::move(a.literal));
        stack.push_back(a.literal);
        break;
    }
    args.push_back(std::move(a));
  }
  std::vector<TensorMeta> metas = op.meta(stack);
  for (TensorMeta& m : metas) m.device = device;
  Node* n = g_.add_call(op, std::move(args), std::move(metas), loc_);
  n->set_grad_enabled(grad_);
  return n;
}

ValueRef GraphBuilder::constant(std::string_view name_hint, Tensor value) {
  return g_.add_constant(name_hint, std::move(value))->out(0);
}

ValueRef GraphBuilder::call(std::string_view op, std::vector<BuildArg> args, uint32_t index) {
  Node* n = call_node(op, std::move(args));
  EMBER_INTERNAL_ASSERT(index < n->num_outputs()) << "GraphBuilder: " << n->target() << " has no output " << index;
  return n->out(index);
}

void GraphBuilder::redirect(ValueRef old_value, ValueRef new_value) {
  EMBER_INTERNAL_ASSERT(mapped_) << "GraphBuilder::redirect outside of rewrite()";
  mapped_->at(old_value.node).at(old_value.index) = new_value;
}

std::unique_ptr<Graph> rewrite(const Graph& g, const Replacement& replace, size_t* changed) {
  auto out = std::make_unique<Graph>(g.name());
  std::vector<std::string> names;
  for (const auto& n : g.nodes()) names.push_back(n->name());
  out->reserve_names(std::move(names));
  std::map<const Node*, std::vector<ValueRef>> mapped;  // old node -> new values, per output
  auto map_ref = [&](const ValueRef& v) {
    const auto& outs = mapped.at(v.node);
    EMBER_INTERNAL_ASSERT(v.index < outs.size() && outs[v.index].node)
        << "rewrite: output " << v.index << " of %" << v.node->name() << " is read but its replacement has none";
    return outs[v.index];
  };
  size_t replaced = 0;
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    std::vector<Arg> args;
    for (const Arg& a : n.args()) {
      Arg m = a;
      if (a.kind == Arg::Kind::Value) m.value = map_ref(a.value);
      if (a.kind == Arg::Kind::ValueList)
        for (auto& v : m.values)
          if (v) v = map_ref(*v);
      args.push_back(std::move(m));
    }
    if (n.kind() == NodeKind::Output) {
      std::vector<ValueRef> outs;
      for (const Arg& a : args) outs.push_back(a.value);
      out->set_output(std::move(outs));
      continue;
    }
    if (n.kind() == NodeKind::Call) {
      GraphBuilder b(*out, n.loc(), n.grad_enabled());
      b.mapped_ = &mapped;
      if (auto values = replace(n, args, b)) {
        EMBER_INTERNAL_ASSERT(values->size() == n.num_outputs())
            << "rewrite: the replacement of %" << n.name() << " gives " << values->size() << " values for "
            << n.num_outputs() << " outputs";
        for (size_t i = 0; i < values->size(); ++i) {
          if (!(*values)[i].node) continue;
          const TensorMeta& want = n.meta()[i];
          const TensorMeta& got = GraphBuilder::meta((*values)[i]);
          EMBER_INTERNAL_ASSERT(want.undefined || (want.sizes == got.sizes && want.dtype == got.dtype))
              << "rewrite: the replacement of %" << n.name() << " (" << n.target() << ") changes output " << i
              << " from " << scalar_type_name(want.dtype) << IntArrayRef(want.sizes) << " to "
              << scalar_type_name(got.dtype) << IntArrayRef(got.sizes);
        }
        mapped[&n] = std::move(*values);
        ++replaced;
        continue;
      }
    }
    Node* copy = out->add_named(n.kind(), n.name(), n.target(), n.op(), std::move(args), n.meta(), n.loc(),
                                n.grad_enabled());
    if (n.kind() == NodeKind::Constant) out->set_constant(n.target(), g.constants().at(n.target()));
    std::vector<ValueRef> outs;
    for (uint32_t i = 0; i < std::max<size_t>(1, n.num_outputs()); ++i) outs.push_back(copy->out(i));
    mapped[&n] = std::move(outs);
  }
  out->eliminate_dead_code();
  verify(*out);
  if (changed) *changed = replaced;
  return out;
}

void verify(const Graph& g) {
  std::set<const Node*> seen;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = *g.nodes()[i];
    EMBER_INTERNAL_ASSERT(n.kind() != NodeKind::Output || i + 1 == g.nodes().size())
        << "graph " << g.name() << ": the output node %" << n.name() << " is not last";
    if (n.kind() == NodeKind::Call) {
      EMBER_INTERNAL_ASSERT(n.op() && n.args().size() == n.op()->schema.arguments.size())
          << "graph " << g.name() << ": %" << n.name() << " does not match its schema";
    }
    auto check = [&](const ValueRef& v) {
      EMBER_INTERNAL_ASSERT(v.node && seen.count(v.node) && v.index < std::max<size_t>(1, v.node->num_outputs()))
          << "graph " << g.name() << ": %" << n.name() << " reads a value that is not an earlier node's output";
    };
    for (const Arg& a : n.args()) {
      if (a.kind == Arg::Kind::Value) check(a.value);
      if (a.kind == Arg::Kind::ValueList)
        for (const auto& v : a.values)
          if (v) check(*v);
    }
    seen.insert(&n);
  }
}

}  // namespace ember::graph
