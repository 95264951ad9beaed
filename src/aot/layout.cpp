// aot/layout.cpp — layout optimization of training and inference graphs (PyTorch
// inductor's layout_optimization): 2-D float convolutions on the CPU run over channels_last
// (NHWC) activations inside a compiled graph, so that oneDNN reads and writes them without
// the NCHW <-> blocked reorders, and the batch norms, relus, adds and max poolings between
// them stay NHWC; what the graph returns keeps eager's strides (a training graph's by
// copies, an inference graph's by leaving the graph alone when an output would change).
// A training graph's runs on the forward graph before the joint graph is traced, so the
// backward's formulas, and with them the saved tensors, see the forward's strides.
// Contract in aot/joint.h; see Note [aot] (docs/notes/aot.md), "Layout optimization".
#include <map>

#include "aot/joint.h"
#include "core/shape.h"
#include "core/sym_geometry.h"
#include "graph/rewrite.h"
#include "ops/registry.h"
#include "support/logging.h"

namespace ember::aot {
namespace {

using graph::BuildArg;
using graph::GraphBuilder;

// The rules read a value's geometry as the shape environment knows it (core::SymInt:
// plain for a static value, expressions over the size symbols for a symbolic one), and
// compare sizes and strides as expressions, so a training graph traced with dynamic
// shapes gets the static rule's answer for every size without reading a size as an
// integer; the channels_last test is c10's over SymInt (core::rules), whose comparisons
// the ranges decide (Note [dynamic shapes], "memory format").

core::SymInts sizes_of(const TensorMeta& m) {
  if (!m.sym) return core::to_sym(m.sizes);
  core::SymInts out;
  for (const core::SymInt& s : m.sym->sizes) out.push_back(core::current(s));
  return out;
}

core::SymInts strides_of(const TensorMeta& m) {
  if (!m.sym) return core::to_sym(m.strides);
  core::SymInts out;
  for (const core::SymInt& s : m.sym->strides) out.push_back(core::current(s));
  return out;
}

core::SymInt offset_of(const TensorMeta& m) { return m.sym ? core::current(m.sym->storage_offset) : m.storage_offset; }

/// Whether `a` and `b` are the same value for every size (equal expressions); no guard.
bool same(const core::SymInt& a, const core::SymInt& b) { return a.expr() == b.expr(); }
bool same(const core::SymInts& a, const core::SymInts& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}
bool is_constant(const core::SymInt& s, int64_t value) { return !s.is_symbolic() && s.hint() == value; }

/// Whether strides `strides` equal `want` on every dim whose size is not the constant 1
/// (the stride of a size-1 dim does not change where any element is).
bool same_strides(const core::SymInts& sizes, const core::SymInts& strides, const core::SymInts& want) {
  for (size_t d = 0; d < sizes.size(); ++d)
    if (!is_constant(sizes[d], 1) && !same(strides[d], want[d])) return false;
  return true;
}

/// Whether `m` is a dense 4-D tensor laid out NHWC (channels fastest), as clone(x,
/// memory_format=channels_last) makes it.
bool dense_nhwc(const TensorMeta& m) {
  if (m.undefined || m.sizes.size() != 4 || !is_constant(offset_of(m), 0)) return false;
  const core::SymInts sizes = sizes_of(m), strides = strides_of(m);
  return same(strides, core::sym_channels_last_strides(sizes)) &&
         core::sym_is_channels_last_strides_2d(sizes, strides);
}

/// Whether `m` is a contiguous 4-D tensor (NCHW).
bool dense_nchw(const TensorMeta& m) {
  if (m.undefined || m.sizes.size() != 4 || !is_constant(offset_of(m), 0)) return false;
  const core::SymInts sizes = sizes_of(m);
  return same_strides(sizes, strides_of(m), core::sym_contiguous_strides(sizes));
}

const TensorMeta& meta_of(const Arg& a) { return a.value.node->meta().at(a.value.index); }

/// Whether the pass runs convolution `n` over NHWC: a 2-D, not transposed float32
/// convolution on the CPU (the case kernels/cpu/conv.cpp runs on oneDNN over NHWC) whose
/// input and weight are contiguous or already channels_last, with a non-empty input.
bool nhwc_convolution(const Node& n) {
  if (n.target() != "aten::convolution") return false;
  const auto& a = n.args();
  if (a[0].kind != Arg::Kind::Value || a[1].kind != Arg::Kind::Value) return false;
  if (a[6].kind != Arg::Kind::Literal || a[6].literal.to_bool()) return false;  // transposed
  const TensorMeta &x = meta_of(a[0]), &w = meta_of(a[1]);
  if (x.dtype != kFloat || w.dtype != kFloat || x.device.type != DeviceType::CPU) return false;
  if (!(dense_nchw(x) || dense_nhwc(x)) || !(dense_nchw(w) || dense_nhwc(w))) return false;
  const core::SymInts sizes = sizes_of(x);
  for (const core::SymInt& s : sizes)
    if (is_constant(s, 0)) return false;  // a size symbol is never 0
  // Over size symbols, any dim may be symbolic but the channels (which meet the weight's,
  // so a trace has made them static): the nodes rebuilt after the clone get their
  // geometry from meta functions (GraphBuilder), and convolution's, pooling's and batch
  // norm's are over SymInt in every dim (ops/spatial_meta.cpp), channels_last included.
  return !sizes[1].is_symbolic();
}

}  // namespace

/// Whether `a` and `b` have the same strides on every dim of size above 1 (the strides
/// of a size-1 dim do not change where any element is).
bool same_layout(const TensorMeta& a, const TensorMeta& b) {
  const core::SymInts sizes = sizes_of(a);
  return same(sizes, sizes_of(b)) && same_strides(sizes, strides_of(a), strides_of(b)) &&
         same(offset_of(a), offset_of(b));
}

/// The memory format whose clone gives `m`'s strides, or nullopt when neither does.
bool arguments_moved(const Node& n, const std::vector<Arg>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& was = n.args()[i];
    if (args[i].kind == Arg::Kind::Value &&
        !same_layout(was.value.node->meta().at(was.value.index), GraphBuilder::meta(args[i].value)))
      return true;
    if (args[i].kind == Arg::Kind::ValueList)
      for (size_t k = 0; k < args[i].values.size(); ++k)
        if (args[i].values[k] &&
            !same_layout(was.values[k]->node->meta().at(was.values[k]->index), GraphBuilder::meta(*args[i].values[k])))
          return true;
  }
  return false;
}

bool geometry_recomputable(const Node& n) {
  const ops::OpDef* op = n.op();
  return op && op->kind != ops::OpKind::Composite && op->kind != ops::OpKind::Dynamic && op->meta;
}

std::optional<std::string> memory_format_of(const TensorMeta& m) {
  const core::SymInts sizes = sizes_of(m), strides = strides_of(m);
  if (!is_constant(offset_of(m), 0)) return std::nullopt;
  if (same_strides(sizes, strides, core::sym_contiguous_strides(sizes))) return std::string("contiguous_format");
  if (sizes.size() == 4 && same_strides(sizes, strides, core::sym_channels_last_strides(sizes)))
    return std::string("channels_last");
  return std::nullopt;
}

std::unique_ptr<Graph> channels_last_convolutions(const Graph& g, size_t* changed) {
  size_t converted = 0;
  bool stuck = false;  // a node whose strides change but whose meta cannot be recomputed
  std::map<std::pair<const Node*, uint32_t>, ValueRef> nhwc_copy;  // a value -> its channels_last clone
  auto copy_of = [&](const Arg& a) -> const ValueRef* {
    if (a.kind != Arg::Kind::Value) return nullptr;
    auto it = nhwc_copy.find({a.value.node, a.value.index});
    return it == nhwc_copy.end() ? nullptr : &it->second;
  };
  std::unique_ptr<Graph> out = graph::rewrite(
      g, [&](const Node& n, const std::vector<Arg>& args, GraphBuilder& b) -> std::optional<std::vector<ValueRef>> {
        std::vector<BuildArg> build(args.begin(), args.end());
        if (nhwc_convolution(n) && !dense_nhwc(GraphBuilder::meta(args[0].value))) {
          if (!copy_of(args[0]))
            nhwc_copy[{args[0].value.node, args[0].value.index}] =
                b.call("aten::clone", {args[0].value, IValue(std::string("channels_last"))});
          build[0] = *copy_of(args[0]);
          ++converted;
        } else {
          // A node reading a value whose strides the pass changed: its own output strides
          // come again from its meta function (a pointwise op follows its input's layout).
          if (!arguments_moved(n, args)) return std::nullopt;
          if (!geometry_recomputable(n)) {
            stuck = true;
            return std::nullopt;
          }
          const ops::OpDef* op = n.op();
          bool reads_nhwc = false;
          for (const Arg& a : args)
            if (a.kind == Arg::Kind::Value) reads_nhwc |= dense_nhwc(GraphBuilder::meta(a.value));
          // A functional op reading an NHWC value and a value that has an NHWC copy (the
          // block's input read again by the residual add) reads the copy: the same
          // elements, and the op's loop then runs along one layout.
          if (reads_nhwc && op->kind == ops::OpKind::Functional)
            for (size_t i = 0; i < args.size(); ++i)
              if (const ValueRef* copy = copy_of(args[i])) build[i] = *copy;
        }
        Node* call = b.call_node(n.target(), std::move(build));
        std::vector<ValueRef> values;
        for (uint32_t i = 0; i < n.num_outputs(); ++i) values.push_back(call->out(i));
        return values;
      });
  if (changed) *changed = converted;
  if (converted == 0 || stuck) return nullptr;
  return out;
}

bool restore_output_strides(Graph& g, const Graph& reference, std::vector<Node*>* copies) {
  const std::vector<ValueRef> outs = g.outputs(), want = reference.outputs();
  EMBER_INTERNAL_ASSERT(outs.size() == want.size())
      << "restore_output_strides: " << outs.size() << " outputs against the reference's " << want.size();
  std::vector<std::optional<std::string>> formats(outs.size());
  bool any = false;
  for (size_t i = 0; i < outs.size(); ++i) {
    const TensorMeta &got = outs[i].node->meta().at(outs[i].index), &ref = want[i].node->meta().at(want[i].index);
    if (got.undefined || ref.undefined || same_layout(got, ref)) continue;
    formats[i] = memory_format_of(ref);
    if (!formats[i] || !same(sizes_of(got), sizes_of(ref))) return false;
    any = true;
  }
  if (copies) copies->assign(outs.size(), nullptr);
  if (!any) return true;
  g.erase(g.output_node());
  GraphBuilder b(g, {}, false);
  std::vector<ValueRef> restored = outs;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!formats[i]) continue;
    restored[i] = b.call("aten::clone", {outs[i], IValue(*formats[i])});
    if (copies) (*copies)[i] = restored[i].node;
  }
  g.set_output(std::move(restored));
  return true;
}

bool restore_output_strides(JointGraph& joint, const JointGraph& reference) {
  std::vector<Node*> copies;
  if (!restore_output_strides(*joint.graph, *reference.graph, &copies)) return false;
  // A forward output's copy belongs to the forward, a gradient's to the backward.
  for (size_t i = 0; i < copies.size() && i < joint.num_forward_outputs; ++i)
    if (copies[i]) joint.forward_nodes.insert(copies[i]);
  return true;
}

std::unique_ptr<Graph> layout_optimized_inference_graph(const Graph& g) {
  size_t converted = 0;
  std::unique_ptr<Graph> nhwc = channels_last_convolutions(g, &converted);
  if (!nhwc) return nullptr;
  const std::vector<ValueRef> outs = nhwc->outputs(), want = g.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    const TensorMeta &got = outs[i].node->meta().at(outs[i].index), &ref = want[i].node->meta().at(want[i].index);
    if (got.undefined || ref.undefined || same_layout(got, ref)) continue;
    EMBER_LOG(aot, INFO) << "aot: layout optimization of inference graph " << g.name() << " left out: output " << i
                         << " would need its eager layout back (Note [aot], \"Layout optimization\")";
    return nullptr;
  }
  EMBER_LOG(aot, INFO) << "aot: layout optimization of inference graph " << g.name() << ": " << converted
                       << " convolution inputs made channels_last";
  return nhwc;
}

JointGraph make_layout_optimized_joint_graph(const Graph& forward, const std::vector<bool>& requires_grad,
                                             JointGraph reference) {
  size_t converted = 0;
  std::unique_ptr<Graph> nhwc = channels_last_convolutions(forward, &converted);
  if (!nhwc) return reference;
  JointGraph joint = make_joint_graph(*nhwc, requires_grad);
  if (!restore_output_strides(joint, reference)) {
    EMBER_LOG(aot, INFO) << "aot: layout optimization of graph " << forward.name()
                         << " left out: an output's eager strides are neither contiguous nor channels_last";
    return reference;
  }
  EMBER_LOG(aot, INFO) << "aot: layout optimization of graph " << forward.name() << ": " << converted
                       << " convolution inputs made channels_last";
  return joint;
}

}  // namespace ember::aot
