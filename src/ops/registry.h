// ops/registry.h — THE operator registry. Each op is one OpDef, named as the ATen op it
// mirrors, holding every facet of the op: schema, meta function, CPU kernel or
// decomposition, derivative (attached in derivatives*.cpp, one row per op) and, later, its
// lowering. Registration
// records the file:line of each facet so `ember ops NAME` can say where it lives.
//
// How an op runs (see dispatch.h):
//   composite   decompose(args) — calls other ops; never reaches a kernel
//   in-place    the functional op, then copy_ into `self` (functionalized at dispatch)
//   view        meta(args) gives sizes/strides/offset; the output shares self's storage
//   functional  meta(args) gives outputs; they are allocated; cpu(args, outputs) fills them
//               (cuda(args, outputs) when an argument or output lives on a CUDA device)
//   dynamic     the output shape depends on data: cpu_dynamic(args) allocates itself
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "ember/ivalue.h"
#include "ops/schema.h"

namespace ember::ops {

/// What a meta function says about one output (ember/tensor.h).
using ember::TensorMeta;

using MetaFn = std::function<std::vector<TensorMeta>(const Stack& args)>;
using KernelFn = std::function<void(const Stack& args, std::vector<Tensor>& outputs)>;
using DynamicKernelFn = std::function<Stack(const Stack& args)>;
using DecompFn = std::function<Stack(const Stack& args)>;

/// What a derivative formula sees of the forward call (implemented by the autograd
/// library). Saved tensors are checked against in-place changes when read; sizes and
/// dtypes are always available. See Note [autograd].
class DerivativeContext {
 public:
  virtual ~DerivativeContext() = default;
  /// Argument `i` of the forward call (after defaults were filled in).
  virtual const IValue& arg(size_t i) const = 0;
  const Tensor& input(size_t i) const { return arg(i).to_tensor(); }
  /// Sizes and dtype of tensor argument `i` as it was at the call. In a joint graph traced
  /// over size symbols (Note [aot]) reading a symbolic argument's sizes as integers
  /// specializes them (a guard); arg_sym_sizes reads them without.
  virtual IntArrayRef arg_sizes(size_t i) const = 0;
  /// Sizes of tensor argument `i` as SymInts: over the trace's size symbols where the
  /// forward value is symbolic (a joint graph traced with dynamic shapes), plain otherwise
  /// (eager: arg_sizes). What a formula passes to reshape, expand, zeros or sum_to to
  /// keep the gradient's geometry symbolic.
  virtual std::vector<SymInt> arg_sym_sizes(size_t i) const;
  virtual ScalarType arg_dtype(size_t i) const = 0;
  /// Strides and storage offset of tensor argument `i` at the call (as_strided's
  /// gradient places its input within the storage by them).
  virtual IntArrayRef arg_strides(size_t i) const = 0;
  virtual int64_t arg_storage_offset(size_t i) const = 0;
  /// Strides and storage offset of tensor argument `i` as SymInts (see arg_sym_sizes):
  /// over the trace's size symbols without a guard, plain otherwise.
  virtual std::vector<SymInt> arg_sym_strides(size_t i) const;
  virtual SymInt arg_sym_storage_offset(size_t i) const;
  /// Output `i` of the forward call, and its geometry (readable without the saved value).
  virtual const Tensor& output(size_t i) const = 0;
  virtual IntArrayRef output_sizes(size_t i) const = 0;
  /// Sizes of output `i` as SymInts (see arg_sym_sizes).
  virtual std::vector<SymInt> output_sym_sizes(size_t i) const;
  virtual ScalarType output_dtype(size_t i) const = 0;
  virtual Device output_device(size_t i) const = 0;
  virtual size_t num_outputs() const = 0;
  /// The gradient flowing into output `i`; undefined when none did.
  virtual const Tensor& grad(size_t i = 0) const = 0;
  /// grad(i), or zeros of output i's sizes (output_sym_sizes) when undefined.
  Tensor grad_or_zeros(size_t i) const;
  /// Whether tensor input `slot` (see DerivativeFn) needs a gradient; formulas may skip the others.
  virtual bool needs_grad(size_t slot) const = 0;
};

/// A derivative formula: one gradient (or an undefined Tensor) per tensor input. Tensor
/// inputs ("slots") are the Tensor and Tensor? arguments in schema order (a None one
/// still has a slot), a Tensor[] argument giving one slot per element. Written with ops
/// only, so that a traced backward pass is an ordinary graph. Gradients may be returned
/// in the broadcast shape and any dtype: autograd sums them to the input's shape
/// (sum_to) and converts them to the input's dtype.
using DerivativeFn = std::function<std::vector<Tensor>(const DerivativeContext& ctx)>;

enum class OpKind { Functional, View, InPlace, Composite, Dynamic };

/// Where a facet was registered.
struct FacetSite {
  const char* file = nullptr;
  unsigned line = 0;
  bool present() const { return file != nullptr; }
};

struct OpDef {
  Schema schema;
  std::string name;  // "aten::add.Tensor"
  OpKind kind = OpKind::Functional;

  MetaFn meta;
  KernelFn cpu;
  /// The kernel for CUDA devices (Note [cuda]); unset: the op raises PyTorch's "Could not
  /// run 'aten::…' with arguments from the 'CUDA' backend".
  KernelFn cuda;
  DynamicKernelFn cpu_dynamic;
  DecompFn decomposition;
  /// For in-place ops: the functional op computing the new value of self.
  const OpDef* functional = nullptr;
  std::string functional_name;
  /// Copies between devices (copy_, _to_copy): tensors on different devices are allowed,
  /// and the CUDA kernel runs when any of them is on a CUDA device.
  bool cross_device = false;
  /// index and index_put: index tensors on the CPU may sit beside a tensor on another
  /// device (the kernel moves them), as PyTorch accepts `x_cuda[cpu_index]`.
  bool host_indices = false;
  /// Random ops read the generator; capture and codegen treat them specially.
  bool nondeterministic_seeded = false;
  /// The kernel takes complex tensors (Note [complex dtypes]). A kernel without this mark
  /// is never called with one: the backend raises "\"<op>\" not implemented for
  /// 'ComplexFloat'" first (views and composites need no mark: they run no kernel).
  bool complex = false;
  /// Only the CPU kernel takes complex tensors (set_complex_on_cpu): a call that runs on
  /// CUDA with a complex argument raises the same error, naming CUDA, before any kernel.
  bool complex_cpu_only = false;
  /// resize_: the op changes its argument's sizes and may grow its storage, on every
  /// device, meta included. Capture ends the graph before it, autograd refuses an argument
  /// that requires grad, and the backend runs its `cpu` kernel for any device (Note [resize_]).
  bool resizes = false;
  /// The kernel reads its tensors' values on the host (a check of argument values on a
  /// CUDA device synchronizes with it), so a graph holding the op is not captured into a
  /// CUDA graph.
  bool reads_on_host = false;
  /// Ember's own ops (namespace "ember"): the ATen op a program exported for PyTorch holds
  /// in its place, called with the op's first argument alone (Note [registry]).
  const char* exported_as = nullptr;

  /// The derivative formula and the name of its grad_fn node ("AddBackward0", as PyTorch).
  DerivativeFn derivative;
  std::string backward_name;
  /// Ops whose floating outputs never carry gradients, as in PyTorch (empty_like,
  /// rand_like, …): the autograd layer records nothing for them.
  bool not_differentiable = false;

  FacetSite schema_site, meta_site, cpu_site, cuda_site, decomposition_site, derivative_site;

  // --- builder ------------------------------------------------------------------
  OpDef& set_meta(MetaFn f, std::source_location loc = std::source_location::current());
  OpDef& set_cpu(KernelFn f, std::source_location loc = std::source_location::current());
  OpDef& set_cuda(KernelFn f, std::source_location loc = std::source_location::current());
  OpDef& set_cpu_dynamic(DynamicKernelFn f, std::source_location loc = std::source_location::current());
  OpDef& set_decomposition(DecompFn f, std::source_location loc = std::source_location::current());
  /// Marks a view op: meta gives the view geometry, outputs alias argument 0.
  OpDef& set_view(MetaFn f, std::source_location loc = std::source_location::current());
  /// Marks an in-place op computed by `functional_op` then copied into argument 0.
  OpDef& set_inplace_of(std::string functional_op);
  OpDef& set_derivative(std::string node_name, DerivativeFn f,
                        std::source_location loc = std::source_location::current());
  OpDef& set_not_differentiable(std::source_location loc = std::source_location::current());
  OpDef& set_cross_device() {
    cross_device = true;
    return *this;
  }
  OpDef& set_host_indices() {
    host_indices = true;
    return *this;
  }
  OpDef& set_random() {
    nondeterministic_seeded = true;
    return *this;
  }
  OpDef& set_complex() {
    complex = true;
    return *this;
  }
  OpDef& set_complex_on_cpu() {
    complex = complex_cpu_only = true;
    return *this;
  }
  OpDef& set_resizes() {
    resizes = true;
    return *this;
  }
  OpDef& set_reads_on_host() {
    reads_on_host = true;
    return *this;
  }
  OpDef& set_exported_as(const char* aten_op) {
    exported_as = aten_op;
    return *this;
  }
};

class Registry {
 public:
  /// Registers an op from its ATen schema text. Raises if the name is taken.
  OpDef& def(std::string_view schema, std::source_location loc = std::source_location::current());
  /// The op named "aten::add.Tensor" (or "add.Tensor"); nullptr if unknown.
  const OpDef* find(std::string_view name) const;
  /// Like find, but raises an error listing close names when unknown.
  const OpDef& get(std::string_view name) const;
  /// The op to attach a facet to from a file other than its family's (derivatives.cpp).
  OpDef& edit(std::string_view name);
  /// Every op, sorted by name.
  std::vector<const OpDef*> all() const;

 private:
  friend Registry& registry();
  void finalize();
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_;
};

/// Zeros of `sizes` with `like`'s dtype and device: what a derivative formula scatters or
/// accumulates a gradient into (on the gradient's device, so formulas run on CUDA too).
Tensor zeros_as(IntArrayRef sizes, const Tensor& like);
/// zeros_as over SymInt sizes (a forward value's `arg_sym_sizes` in a joint graph traced
/// over size symbols): nothing is specialized.
Tensor zeros_as(SymIntArrayRef sizes, const Tensor& like);
/// zeros_as of a braced list of plain sizes (`zeros_as({n}, g)`).
inline Tensor zeros_as(std::initializer_list<int64_t> sizes, const Tensor& like) {
  return zeros_as(IntArrayRef(sizes), like);
}

/// Sums `grad` down to `sizes` over the dimensions that broadcasting expanded (the
/// inverse of expand). Raises an internal error unless `sizes` expands to grad's shape.
Tensor sum_to(const Tensor& grad, IntArrayRef sizes);
/// sum_to over SymInt sizes (a gradient of a joint graph traced over size symbols): the
/// same dims are summed, decided by the symbols' ranges (a symbolic size is never 1), so
/// nothing is specialized; plain sizes give what the IntArrayRef form gives.
Tensor sum_to(const Tensor& grad, SymIntArrayRef sizes);

/// The gradient of as_strided: `grad` (of the view with out_* geometry) placed into the
/// storage positions it was read from, summed where positions repeat, and read back at
/// the input's geometry (split evenly where the input's own elements share storage, as
/// PyTorch's as_strided_backward). Written with ops only, over SymInt as PyTorch's: the
/// storage's extent, the positions and the overlap test follow the symbols (comparisons
/// the ranges do not decide become guards; nothing is specialized).
Tensor as_strided_backward(const Tensor& grad, SymIntArrayRef in_sizes, SymIntArrayRef in_strides,
                           const SymInt& in_offset, SymIntArrayRef out_sizes, SymIntArrayRef out_strides,
                           const SymInt& out_offset);
/// as_strided_backward of plain geometries (eager's view replay).
Tensor as_strided_backward(const Tensor& grad, IntArrayRef in_sizes, IntArrayRef in_strides, int64_t in_offset,
                           IntArrayRef out_sizes, IntArrayRef out_strides, int64_t out_offset);

/// The process-wide registry, built on first use from every op family.
Registry& registry();

}  // namespace ember::ops
