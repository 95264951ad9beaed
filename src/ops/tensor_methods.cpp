// ops/tensor_methods.cpp — Tensor's methods and operators for view, copy and pointwise
// ops; each forwards to the free function of the same name. (Methods of other families
// are defined in that family's file.)
#include "core/cuda.h"
#include "core/shape.h"
#include "ember/ops/creation.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/view.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "support/call_context.h"

namespace ember {

Tensor Tensor::view(IntArrayRef size, Loc loc) const { return ember::view(*this, size, loc); }
Tensor Tensor::reshape(IntArrayRef shape, Loc loc) const { return ember::reshape(*this, shape, loc); }
Tensor Tensor::view(std::initializer_list<SymInt> size, Loc loc) const {
  return ember::view(*this, SymIntArrayRef(size), loc);
}
Tensor Tensor::view(SymIntArrayRef size, Loc loc) const { return ember::view(*this, size, loc); }
Tensor Tensor::reshape(std::initializer_list<SymInt> shape, Loc loc) const {
  return ember::reshape(*this, SymIntArrayRef(shape), loc);
}
Tensor Tensor::reshape(SymIntArrayRef shape, Loc loc) const { return ember::reshape(*this, shape, loc); }
Tensor Tensor::permute(IntArrayRef dims, Loc loc) const { return ember::permute(*this, dims, loc); }
Tensor Tensor::transpose(int64_t d0, int64_t d1, Loc loc) const { return ember::transpose(*this, d0, d1, loc); }
Tensor Tensor::t(Loc loc) const { return ember::t(*this, loc); }
Tensor Tensor::expand(IntArrayRef size, Loc loc) const { return ember::expand(*this, size, loc); }
Tensor Tensor::expand(std::initializer_list<SymInt> size, Loc loc) const {
  return ember::expand(*this, SymIntArrayRef(size), loc);
}
Tensor Tensor::expand(SymIntArrayRef size, Loc loc) const { return ember::expand(*this, size, loc); }
Tensor Tensor::expand_as(const Tensor& other, Loc loc) const { return ember::expand(*this, other.sizes(), loc); }
Tensor Tensor::slice(int64_t dim, std::optional<SymInt> start, std::optional<SymInt> end, int64_t step,
                     Loc loc) const {
  return ember::slice(*this, dim, start, end, step, loc);
}
Tensor Tensor::narrow(int64_t dim, SymInt start, SymInt length, Loc loc) const {
  return ember::narrow(*this, dim, start, length, loc);
}
Tensor Tensor::select(int64_t dim, SymInt index, Loc loc) const { return ember::select(*this, dim, index, loc); }
Tensor Tensor::squeeze(Loc loc) const { return ember::squeeze(*this, loc); }
Tensor Tensor::squeeze(int64_t dim, Loc loc) const { return ember::squeeze(*this, dim, loc); }
Tensor Tensor::unsqueeze(int64_t dim, Loc loc) const { return ember::unsqueeze(*this, dim, loc); }
Tensor Tensor::as_strided(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> offset, Loc loc) const {
  return ember::as_strided(*this, size, stride, offset, loc);
}
Tensor Tensor::as_strided(std::initializer_list<SymInt> size, std::initializer_list<SymInt> stride,
                          std::optional<SymInt> offset, Loc loc) const {
  return ember::as_strided(*this, SymIntArrayRef(size), SymIntArrayRef(stride), offset, loc);
}
Tensor Tensor::as_strided(SymIntArrayRef size, SymIntArrayRef stride, std::optional<SymInt> offset, Loc loc) const {
  return ember::as_strided(*this, size, stride, offset, loc);
}
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim, Loc loc) const {
  return ember::flatten(*this, start_dim, end_dim, loc);
}
Tensor Tensor::unflatten(int64_t dim, IntArrayRef sizes, Loc loc) const { return ember::unflatten(*this, dim, sizes, loc); }
Tensor Tensor::unflatten(int64_t dim, std::initializer_list<SymInt> sizes, Loc loc) const {
  return ember::unflatten(*this, dim, SymIntArrayRef(sizes), loc);
}
Tensor Tensor::unflatten(int64_t dim, SymIntArrayRef sizes, Loc loc) const {
  return ember::unflatten(*this, dim, sizes, loc);
}
Tensor Tensor::contiguous(Loc loc) const { return ember::contiguous(*this, loc); }
Tensor Tensor::clone(Loc loc) const { return ember::clone(*this, loc); }
Tensor Tensor::to(ScalarType dtype, Loc loc) const { return ember::to(*this, dtype, loc); }
Tensor Tensor::to(Device device, Loc loc) const { return to(device, false, loc); }
Tensor Tensor::to(Device device, bool non_blocking, Loc loc) const {
  support::UserLocScope scope(loc);
  device = core::cuda::normalize_device(device);
  if (device == this->device()) return *this;
  static const ops::OpDef& to_copy = ops::registry().get("aten::_to_copy");
  return ops::call_tensor(to_copy, {*this, None{}, None{}, device, None{}, non_blocking}, loc);
}
Tensor Tensor::cuda(int device, bool non_blocking, Loc loc) const {
  return to(Device(DeviceType::CUDA, static_cast<int8_t>(device)), non_blocking, loc);
}
Tensor Tensor::cpu(Loc loc) const { return to(kCPU, false, loc); }
Tensor Tensor::pin_memory(Loc loc) const {
  support::UserLocScope scope(loc);
  EMBER_CHECK(is_cpu()) << "cannot pin '" << device() << "' memory: only dense CPU tensors can be pinned";
  if (is_pinned()) return *this;
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = sizes().vec();
  impl->strides = core::contiguous_strides(sizes());
  impl->dtype = dtype();
  impl->device = kCPU;
  impl->refresh();
  const size_t bytes = static_cast<size_t>(numel()) * element_size();
  impl->storage = std::make_shared<Storage>(core::cuda::pinned_alloc(bytes), bytes, kCPU, core::cuda::pinned_free);
  Tensor pinned(std::move(impl));
  ember::copy_(pinned, *this, loc);
  return pinned;
}
Tensor Tensor::operator[](int64_t index) const { return ember::select(*this, 0, index); }

// One method per row of ember/tensor_methods.def, each calling its registry op by name.
#define EMBER_TENSOR_UNARY(name)                                                                          \
  Tensor Tensor::name(Loc loc) const { return ops::call_tensor(EMBER_OP("aten::" #name), {*this}, loc); } \
  Tensor& Tensor::name##_(Loc loc) { return ops::call_inplace(EMBER_OP("aten::" #name "_"), *this, {*this}, loc); }
#define EMBER_TENSOR_UNARY_FUNCTIONAL(name) \
  Tensor Tensor::name(Loc loc) const { return ops::call_tensor(EMBER_OP("aten::" #name), {*this}, loc); }
#define EMBER_TENSOR_BINARY(name)                                                              \
  Tensor Tensor::name(const Tensor& other, Loc loc) const {                                    \
    return ops::call_tensor(EMBER_OP("aten::" #name ".Tensor"), {*this, other}, loc);          \
  }                                                                                            \
  Tensor Tensor::name(const Scalar& other, Loc loc) const {                                    \
    return ops::call_tensor(EMBER_OP("aten::" #name ".Scalar"), {*this, other}, loc);          \
  }                                                                                            \
  Tensor& Tensor::name##_(const Tensor& other, Loc loc) {                                      \
    return ops::call_inplace(EMBER_OP("aten::" #name "_.Tensor"), *this, {*this, other}, loc); \
  }                                                                                            \
  Tensor& Tensor::name##_(const Scalar& other, Loc loc) {                                      \
    return ops::call_inplace(EMBER_OP("aten::" #name "_.Scalar"), *this, {*this, other}, loc); \
  }
#define EMBER_TENSOR_BINARY_ALPHA(name)                                                               \
  Tensor Tensor::name(const Tensor& other, const Scalar& alpha, Loc loc) const {                      \
    return ops::call_tensor(EMBER_OP("aten::" #name ".Tensor"), {*this, other, alpha}, loc);          \
  }                                                                                                   \
  Tensor Tensor::name(const Scalar& other, const Scalar& alpha, Loc loc) const {                      \
    return ops::call_tensor(EMBER_OP("aten::" #name ".Scalar"), {*this, other, alpha}, loc);          \
  }                                                                                                   \
  Tensor& Tensor::name##_(const Tensor& other, const Scalar& alpha, Loc loc) {                        \
    return ops::call_inplace(EMBER_OP("aten::" #name "_.Tensor"), *this, {*this, other, alpha}, loc); \
  }                                                                                                   \
  Tensor& Tensor::name##_(const Scalar& other, const Scalar& alpha, Loc loc) {                        \
    return ops::call_inplace(EMBER_OP("aten::" #name "_.Scalar"), *this, {*this, other, alpha}, loc); \
  }
#define EMBER_TENSOR_BINARY_TENSOR(name)                                                \
  Tensor Tensor::name(const Tensor& other, Loc loc) const {                             \
    return ops::call_tensor(EMBER_OP("aten::" #name), {*this, other}, loc);             \
  }                                                                                     \
  Tensor& Tensor::name##_(const Tensor& other, Loc loc) {                               \
    return ops::call_inplace(EMBER_OP("aten::" #name "_"), *this, {*this, other}, loc); \
  }
#define EMBER_TENSOR_BINARY_TENSOR_FUNCTIONAL(name)                         \
  Tensor Tensor::name(const Tensor& other, Loc loc) const {                 \
    return ops::call_tensor(EMBER_OP("aten::" #name), {*this, other}, loc); \
  }
#include "ember/tensor_methods.def"
#undef EMBER_TENSOR_UNARY
#undef EMBER_TENSOR_UNARY_FUNCTIONAL
#undef EMBER_TENSOR_BINARY
#undef EMBER_TENSOR_BINARY_ALPHA
#undef EMBER_TENSOR_BINARY_TENSOR
#undef EMBER_TENSOR_BINARY_TENSOR_FUNCTIONAL

Tensor Tensor::pow(const Scalar& exponent, Loc loc) const { return ember::pow(*this, exponent, loc); }
Tensor Tensor::pow(const Tensor& exponent, Loc loc) const { return ember::pow(*this, exponent, loc); }
Tensor& Tensor::pow_(const Scalar& exponent, Loc loc) {
  return ops::call_inplace(EMBER_OP("aten::pow_.Scalar"), *this, {*this, exponent}, loc);
}
Tensor& Tensor::pow_(const Tensor& exponent, Loc loc) {
  return ops::call_inplace(EMBER_OP("aten::pow_.Tensor"), *this, {*this, exponent}, loc);
}
Tensor Tensor::where(const Tensor& condition, const Tensor& other, Loc loc) const {
  return ember::where(condition, *this, other, loc);
}
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max, Loc loc) const {
  return ember::clamp(*this, min, max, loc);
}
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max, Loc loc) {
  return ops::call_inplace(EMBER_OP("aten::clamp_"), *this, {*this, min, max}, loc);
}
Tensor& Tensor::copy_(const Tensor& src, Loc loc) { return ember::copy_(*this, src, loc); }
Tensor& Tensor::copy_(const Tensor& src, bool non_blocking, Loc loc) {
  return ops::call_inplace(EMBER_OP("aten::copy_"), *this, {*this, src, non_blocking}, loc);
}
Tensor& Tensor::fill_(const Scalar& value, Loc loc) { return ember::fill_(*this, value, loc); }
Tensor& Tensor::zero_(Loc loc) { return ember::zero_(*this, loc); }

Tensor operator+(TensorArg a, const Tensor& b) { return add(a.t, b, 1, a.loc); }
Tensor operator-(TensorArg a, const Tensor& b) { return sub(a.t, b, 1, a.loc); }
Tensor operator*(TensorArg a, const Tensor& b) { return mul(a.t, b, a.loc); }
Tensor operator/(TensorArg a, const Tensor& b) { return div(a.t, b, std::nullopt, a.loc); }
Tensor operator+(TensorArg a, const Scalar& b) { return add(a.t, b, 1, a.loc); }
Tensor operator-(TensorArg a, const Scalar& b) { return sub(a.t, b, 1, a.loc); }
Tensor operator*(TensorArg a, const Scalar& b) { return mul(a.t, b, a.loc); }
Tensor operator/(TensorArg a, const Scalar& b) { return div(a.t, b, std::nullopt, a.loc); }
// Scalar on the left: PyTorch's __radd__ and friends.
Tensor operator+(const Scalar& a, TensorArg b) { return add(b.t, a, 1, b.loc); }
Tensor operator-(const Scalar& a, TensorArg b) { return add(neg(b.t, b.loc), a, 1, b.loc); }
Tensor operator*(const Scalar& a, TensorArg b) { return mul(b.t, a, b.loc); }
Tensor operator/(const Scalar& a, TensorArg b) { return mul(reciprocal(b.t, b.loc), a, b.loc); }
Tensor operator-(TensorArg a) { return neg(a.t, a.loc); }
Tensor operator==(TensorArg a, const Tensor& b) { return eq(a.t, b, a.loc); }
Tensor operator!=(TensorArg a, const Tensor& b) { return ne(a.t, b, a.loc); }
Tensor operator<(TensorArg a, const Tensor& b) { return lt(a.t, b, a.loc); }
Tensor operator<=(TensorArg a, const Tensor& b) { return le(a.t, b, a.loc); }
Tensor operator>(TensorArg a, const Tensor& b) { return gt(a.t, b, a.loc); }
Tensor operator>=(TensorArg a, const Tensor& b) { return ge(a.t, b, a.loc); }
Tensor operator==(TensorArg a, const Scalar& b) { return eq(a.t, b, a.loc); }
Tensor operator!=(TensorArg a, const Scalar& b) { return ne(a.t, b, a.loc); }
Tensor operator<(TensorArg a, const Scalar& b) { return lt(a.t, b, a.loc); }
Tensor operator<=(TensorArg a, const Scalar& b) { return le(a.t, b, a.loc); }
Tensor operator>(TensorArg a, const Scalar& b) { return gt(a.t, b, a.loc); }
Tensor operator>=(TensorArg a, const Scalar& b) { return ge(a.t, b, a.loc); }
Tensor operator&(TensorArg a, const Tensor& b) { return bitwise_and(a.t, b, a.loc); }
Tensor operator|(TensorArg a, const Tensor& b) { return bitwise_or(a.t, b, a.loc); }
Tensor operator^(TensorArg a, const Tensor& b) { return bitwise_xor(a.t, b, a.loc); }
Tensor operator~(TensorArg a) { return bitwise_not(a.t, a.loc); }

}  // namespace ember
