// ops/op_utils.cpp — see op_utils.h.
#include "ops/op_utils.h"

#include <algorithm>
#include <numeric>

#include "core/shape.h"
#include "core/shape_rules.h"
#include "core/sym_geometry.h"
#include "ember/ops/creation.h"
#include "kernels/cuda/loops.h"
#include "ops/dispatch.h"

namespace ember::ops {
namespace {

enum Category { kNoneCat = -1 };

ScalarType combine_categories(std::optional<ScalarType> higher, std::optional<ScalarType> lower) {
  if (!higher) return *lower;
  if (!lower) return *higher;
  // c10's combine_categories: complex ranks above floating, which ranks above integral;
  // a floating dim tensor beside a complex scalar keeps its precision (Note [complex dtypes]).
  if (is_complex(*higher)) return *higher;
  if (is_complex(*lower)) return is_floating_point(*higher) ? *to_complex_type(*higher) : *lower;
  if (is_floating_point(*higher)) return *higher;
  if (*higher == kBool || is_floating_point(*lower)) return promote_types(*higher, *lower);
  return *higher;
}

void update(std::optional<ScalarType>& slot, ScalarType t) { slot = slot ? promote_types(*slot, t) : t; }

}  // namespace

ScalarType result_type(std::initializer_list<const IValue*> values) {
  std::optional<ScalarType> dim_result, zero_result, wrapped_result;
  for (const IValue* v : values) {
    if (v->is_tensor()) {
      const Tensor& t = v->to_tensor();
      if (!t.defined()) continue;
      update(t.dim() > 0 ? dim_result : zero_result, t.dtype());
    } else if (!v->is_none()) {
      Scalar s = v->to_scalar();
      // Python floats are wrapped as the default float type, ints as int64.
      update(wrapped_result, s.is_floating_point() ? kDefaultFloat : s.type());
    }
  }
  EMBER_INTERNAL_ASSERT(dim_result || zero_result || wrapped_result) << "result_type of no values";
  if (!zero_result && !wrapped_result) return *dim_result;
  std::optional<ScalarType> lower =
      zero_result || wrapped_result ? std::optional<ScalarType>(combine_categories(zero_result, wrapped_result))
                                    : std::nullopt;
  return combine_categories(dim_result, lower);
}

namespace {

/// pointwise_meta over int64_t (static inputs) or SymInt (core::Geometry).
template <typename Int>
TensorMeta pointwise_meta_over(const std::vector<const Tensor*>& inputs, ScalarType dtype) {
  using G = core::Geometry<Int>;
  std::vector<Int> shape;
  Device device = kCPU;
  bool first = true;
  for (const Tensor* t : inputs) {
    const auto sizes = G::sizes(*t);
    shape = first ? std::vector<Int>(sizes.begin(), sizes.end())
                  : core::rules::broadcast_shapes(ArrayRef<Int>(shape), ArrayRef<Int>(sizes));
    if (first || t->dim() > 0) device = t->device();
    first = false;
  }
  // A 0-dim CPU tensor beside a CUDA tensor is a CPU scalar: the result is on the GPU.
  for (const Tensor* t : inputs)
    if (t->is_cuda()) device = t->device();
  const int nd = static_cast<int>(shape.size());

  // Broadcast strides of each input that has the full rank.
  std::vector<std::vector<Int>> strides;
  for (const Tensor* t : inputs) {
    if (t->dim() == 0) continue;
    const auto sizes = G::sizes(*t);
    const auto in_strides = G::strides(*t);
    strides.push_back(core::rules::broadcast_strides(ArrayRef<Int>(sizes), ArrayRef<Int>(in_strides), ArrayRef<Int>(shape)));
  }
  // Fast path: one layout shared by every full-shape input.
  bool all_contiguous = true;
  for (const Tensor* t : inputs)
    if (t->dim() > 0 && !t->is_contiguous()) all_contiguous = false;
  if (all_contiguous || strides.empty()) {
    std::vector<Int> out_strides = core::rules::contiguous_strides(ArrayRef<Int>(shape));
    return G::meta(std::move(shape), std::move(out_strides), Int(0), dtype, device);
  }
  // TensorIterator's reorder_dimensions: sort dims from fastest to slowest by the
  // inputs' strides (ties: smaller size first), skipping broadcast dims.
  std::vector<int> perm(static_cast<size_t>(nd));
  for (int i = 0; i < nd; ++i) perm[i] = nd - 1 - i;
  auto should_swap = [&](int d0, int d1) {
    for (const auto& s : strides) {
      const Int& s0 = s[d0];
      const Int& s1 = s[d1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (shape[d0] > shape[d1]) return 1;
    }
    return 0;
  };
  for (int i = 1; i < nd; ++i) {
    int dim1 = i;
    for (int dim0 = i - 1; dim0 >= 0; dim0--) {
      int cmp = should_swap(perm[dim0], perm[dim1]);
      if (cmp > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (cmp < 0) {
        break;
      }
    }
  }
  std::vector<Int> out_strides(static_cast<size_t>(nd), Int(0));
  Int next = 1;
  for (int i = 0; i < nd; ++i) {
    out_strides[perm[i]] = next;
    next = next * core::rules::at_least_one(shape[perm[i]]);
  }
  return G::meta(std::move(shape), std::move(out_strides), Int(0), dtype, device);
}

}  // namespace

TensorMeta pointwise_meta(const std::vector<const Tensor*>& inputs, ScalarType dtype) {
  // Note [dynamic shapes]: written once, over SymInt when an input has symbolic sizes.
  for (const Tensor* t : inputs)
    if (core::is_symbolic(*t)) return pointwise_meta_over<core::SymInt>(inputs, dtype);
  return pointwise_meta_over<int64_t>(inputs, dtype);
}

std::vector<int64_t> dense_dim_order(IntArrayRef sizes, IntArrayRef strides) {
  return dense_dim_order_over(sizes.vec(), strides.vec());
}

std::vector<int64_t> infer_dense_strides(IntArrayRef sizes, IntArrayRef strides) {
  std::vector<int64_t> out(sizes.size(), 1);
  int64_t next = 1;
  for (int64_t d : dense_dim_order(sizes, strides)) {
    out[static_cast<size_t>(d)] = next;
    if (sizes[d] > 1) next *= sizes[d];
  }
  return out;
}

TensorMeta contiguous_meta(IntArrayRef sizes, ScalarType dtype, Device device) {
  TensorMeta m;
  m.sizes = sizes.vec();
  m.strides = core::contiguous_strides(sizes);
  m.dtype = dtype;
  m.device = device;
  return m;
}

TensorMeta contiguous_over(const Tensor& self, ScalarType dtype, Device device) {
  return core::over_geometry({&self}, [&]<typename Int>() {
    const auto s = core::Geometry<Int>::sizes(self);
    return core::contiguous_meta_over(std::vector<Int>(s.begin(), s.end()), dtype, device);
  });
}

Tensor scalar_tensor(const Scalar& value, ScalarType dtype, Device device) {
  Tensor t = empty_from_meta(contiguous_meta({}, dtype, device));
  if (device.is_cpu()) {
    // A complex dtype gets the value as its real part (Scalar holds no complex number).
    EMBER_DISPATCH_ALL_TYPES_AND_COMPLEX(dtype, "scalar_tensor", [&] { *t.data_ptr<scalar_t>() = value.to<scalar_t>(); });
  } else if (device.is_cuda()) {
    kernels::cuda::copy_into(t, scalar_tensor(value, dtype, kCPU));
  }
  return t;
}

Tensor cast(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  return call_op_tensor("aten::_to_copy", {t, dtype});
}

void not_implemented(const char* kernel, ScalarType t) {
  EMBER_FAIL_KIND(ErrorKind::NotImplementedError)
      << "\"" << kernel << "\" not implemented for '" << scalar_type_name(t) << "'";
}

KernelFn via_host(KernelFn cpu) {
  return [cpu = std::move(cpu)](const Stack& args, std::vector<Tensor>& outs) {
    std::vector<Tensor> host;
    for (const Tensor& o : outs) host.push_back(o.defined() ? empty_from_meta(contiguous_meta(o.sizes(), o.dtype(), kCPU)) : Tensor());
    cpu(args, host);
    for (size_t i = 0; i < outs.size(); ++i)
      if (outs[i].defined()) kernels::cuda::copy_into(outs[i], host[i]);
  };
}

void check_defined(const Tensor& t, const char* what) { EMBER_CHECK(t.defined()) << what << " is an undefined tensor"; }

Stack call_op(const char* name, Stack args) { return call(registry().get(name), std::move(args)); }

Tensor call_op_tensor(const char* name, Stack args) {
  Stack out = call(registry().get(name), std::move(args));
  return std::move(out.at(0).to_tensor());
}

void with_contiguous_outputs(std::vector<Tensor>& out, const std::function<void(std::vector<Tensor>&)>& kernel) {
  std::vector<Tensor> slots = out;
  for (Tensor& t : slots)
    if (t.defined() && !t.is_contiguous()) t = empty_from_meta(contiguous_meta(t.sizes(), t.dtype(), t.device()));
  kernel(slots);
  for (size_t i = 0; i < out.size(); ++i)
    if (slots[i].defined() && !slots[i].is_same(out[i])) out[i].copy_(slots[i]);
}

bool suggests_channels_last(const Tensor& t) {
  if (t.dim() != 4) return false;
  // A fake over size symbols: the rule over its SymInts, so that no size is specialized.
  if (core::is_symbolic(t)) return core::sym_is_channels_last_strides_2d(core::sym_sizes(t), core::sym_strides(t));
  return core::is_channels_last_strides_2d(t.sizes(), t.strides());
}

TensorMeta layout_meta(IntArrayRef sizes, ScalarType dtype, Device device, bool channels_last) {
  TensorMeta m = contiguous_meta(sizes, dtype, device);
  if (channels_last) m.strides = core::channels_last_strides(sizes);
  return m;
}

TensorMeta layout_meta_of(const Tensor& t, ScalarType dtype, Device device, bool channels_last) {
  if (!core::is_symbolic(t)) return layout_meta(t.sizes(), dtype, device, channels_last);
  const core::SymInts sizes = core::sym_sizes(t);
  if (!channels_last) return core::contiguous_sym_meta(sizes, dtype, device);
  return core::make_meta(sizes, core::sym_channels_last_strides(sizes), core::SymInt(0), dtype, device);
}

Tensor without_symbols(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->sym = nullptr;
  impl->autograd_meta = nullptr;
  return Tensor(std::move(impl));
}

Tensor channels_last_dense(const Tensor& t) {
  const bool five = t.dim() == 5;
  const std::vector<int64_t> to_last = five ? std::vector<int64_t>{0, 2, 3, 4, 1} : std::vector<int64_t>{0, 2, 3, 1};
  const std::vector<int64_t> back = five ? std::vector<int64_t>{0, 4, 1, 2, 3} : std::vector<int64_t>{0, 3, 1, 2};
  const Tensor nhwc = call_op_tensor("aten::permute", {t, to_last});
  if (nhwc.is_contiguous()) return t;
  return call_op_tensor("aten::permute",
                        {call_op_tensor("aten::clone", {nhwc, std::string("contiguous_format")}), back});
}

bool is_channels_last_dense(const Tensor& t) {
  if (t.dim() != 4 && t.dim() != 5) return false;
  const std::vector<int64_t> to_last =
      t.dim() == 5 ? std::vector<int64_t>{0, 2, 3, 4, 1} : std::vector<int64_t>{0, 2, 3, 1};
  return t.permute(to_last).is_contiguous();
}

bool same_sizes(const Tensor& a, const Tensor& b) { return core::sym_sizes(a) == core::sym_sizes(b); }

Tensor size_tensor(const SymInt& n, Device device) {
  return arange(n, n + 1, SymInt(1), TensorOptions(kLong).device(device)).select(0, 0);
}

Tensor size_tensor(const SymInt& n, Device device, ScalarType dtype) { return cast(size_tensor(n, device), dtype); }

}  // namespace ember::ops
