// ops/linalg.cpp — matrix products: mm, bmm, addmm, mv and dot run the batched GEMM of
// kernels/cpu/gemm (on CUDA, cuBLASLt's through kernels/cuda/gemm); matmul and linear are
// composites that fold to them the way ATen's matmul does (so exported graphs and eager
// agree op for op).
#include <cstring>

#include "core/shape.h"
#include "core/shape_rules.h"
#include "core/sym_geometry.h"
#include "ember/config.h"
#include "ember/ops/linalg.h"
#include "kernels/cpu/copy.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/loops.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/loops.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

/// The dtype as caffe2's TypeMeta prints it (mm's dtype message uses that spelling).
const char* typemeta_name(ScalarType t) {
  switch (t) {
    case kFloat: return "float";
    case kDouble: return "double";
    case kHalf: return "c10::Half";
    case kBFloat16: return "c10::BFloat16";
    case kInt64: return "long int";
    case kInt32: return "int";
    case kInt16: return "short int";
    case kInt8: return "signed char";
    case kUInt8: return "unsigned char";
    case kBool: return "bool";
    case kComplexFloat: return "c10::complex<float>";
    case kComplexDouble: return "c10::complex<double>";
  }
  return "unknown";
}

void check_gemm_dtype(ScalarType t) {
  EMBER_CHECK_KIND(ErrorKind::NotImplementedError, t != kBool)
      << "\"addmm_impl_cpu_\" not implemented for '" << scalar_type_name(t) << "'";
}

/// ATen's "expected scalar type X but found Y".
void check_same_scalar_type(ScalarType expected, ScalarType found) {
  EMBER_CHECK(expected == found) << "expected scalar type " << scalar_type_name(expected) << " but found "
                                 << scalar_type_name(found);
}

/// Raises expand's errors unless `sizes` broadcasts to `target` (no new leading dims
/// missing, non-1 dims equal).
template <typename Int>
void check_expandable(const Tensor& t, const std::vector<Int>& target) {
  const int64_t nd = static_cast<int64_t>(target.size());
  EMBER_CHECK(t.dim() <= nd) << "expand(torch." << scalar_type_name(t.dtype()) << "Tensor{" << t.sizes()
                             << "}, size=" << IntArrayRef(core::rules::shown(ArrayRef<Int>(target)))
                             << "): the number of sizes provided (" << nd << ") must be greater or equal to the number of dimensions in the tensor (" << t.dim()
                             << ")";
  for (int64_t i = t.dim() - 1; i >= 0; --i) {  // innermost first, as expand reports
    const int64_t d = nd - t.dim() + i;
    const Int size = core::Geometry<Int>::size(t, i);
    EMBER_CHECK(size == 1 || size == target[d])
        << "The expanded size of the tensor (" << core::rules::shown(target[d]) << ") must match the existing size ("
        << core::rules::shown(size) << ") at non-singleton dimension " << d << ".  Target sizes: "
        << IntArrayRef(core::rules::shown(ArrayRef<Int>(target))) << ".  Tensor sizes: " << t.sizes();
  }
}

/// An alias of t's memory with other sizes/strides, made without dispatch (kernels only).
Tensor restrided(const Tensor& t, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->refresh();
  return Tensor(std::move(impl));
}

/// A matrix as a batch of one.
Tensor as_batch(const Tensor& m) { return restrided(m, {1, m.size(0), m.size(1)}, {0, m.stride(0), m.stride(1)}); }

/// dst = src broadcast to dst's shape; both of one dtype. copy_into copies whole rows
/// (a bias broadcast over a GEMM's rows is one memcpy per row).
void broadcast_copy(const Tensor& dst, const Tensor& src) { kernels::cpu::copy_into(dst, src); }

// --- meta functions ---------------------------------------------------------------------

// mm, bmm and addmm are written once over core::Geometry's integer type: SymInt when an
// input has symbolic sizes (Note [dynamic shapes]), else int64_t. Messages read example
// values.
std::vector<TensorMeta> mm_meta(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const Tensor& mat2 = a[1].to_tensor();
  EMBER_CHECK(self.dim() == 2) << "self must be a matrix";
  EMBER_CHECK(mat2.dim() == 2) << "mat2 must be a matrix";
  EMBER_CHECK(self.dtype() == mat2.dtype()) << "expected m1 and m2 to have the same dtype, but got: "
                                            << typemeta_name(self.dtype()) << " != " << typemeta_name(mat2.dtype());
  return metas(core::over_geometry({&self, &mat2}, [&]<typename Int>() {
    using G = core::Geometry<Int>;
    EMBER_CHECK(G::size(self, 1) == G::size(mat2, 0))
        << "mat1 and mat2 shapes cannot be multiplied (" << self.size(0) << "x" << self.size(1) << " and "
        << mat2.size(0) << "x" << mat2.size(1) << ")";
    check_gemm_dtype(self.dtype());
    return core::contiguous_meta_over(std::vector<Int>{G::size(self, 0), G::size(mat2, 1)}, self.dtype(),
                                      self.device());
  }));
}

std::vector<TensorMeta> bmm_meta(const Stack& a) {
  const Tensor& b1 = a[0].to_tensor();
  const Tensor& b2 = a[1].to_tensor();
  EMBER_CHECK(b1.dim() == 3) << "batch1 must be a 3D tensor";
  EMBER_CHECK(b2.dim() == 3) << "batch2 must be a 3D tensor";
  return metas(core::over_geometry({&b1, &b2}, [&]<typename Int>() {
    using G = core::Geometry<Int>;
    EMBER_CHECK(G::size(b2, 0) == G::size(b1, 0) && G::size(b2, 1) == G::size(b1, 2))
        << "Expected size for first two dimensions of batch2 tensor to be: [" << b1.size(0) << ", " << b1.size(2)
        << "] but got: [" << b2.size(0) << ", " << b2.size(1) << "].";
    check_same_scalar_type(b1.dtype(), b2.dtype());
    check_gemm_dtype(b1.dtype());
    return core::contiguous_meta_over(std::vector<Int>{G::size(b1, 0), G::size(b1, 1), G::size(b2, 2)}, b1.dtype(),
                                      b1.device());
  }));
}

std::vector<TensorMeta> addmm_meta(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const Tensor& m1 = a[1].to_tensor();
  const Tensor& m2 = a[2].to_tensor();
  EMBER_CHECK(m1.dim() == 2) << "mat1 must be a matrix, got " << m1.dim() << "-D tensor";
  EMBER_CHECK(m2.dim() == 2) << "mat2 must be a matrix, got " << m2.dim() << "-D tensor";
  EMBER_CHECK(self.dtype() == m2.dtype()) << "self and mat2 must have the same dtype, but got "
                                          << scalar_type_name(self.dtype()) << " and " << scalar_type_name(m2.dtype());
  EMBER_CHECK(m1.dtype() == m2.dtype()) << "mat1 and mat2 must have the same dtype, but got "
                                        << scalar_type_name(m1.dtype()) << " and " << scalar_type_name(m2.dtype());
  return metas(core::over_geometry({&self, &m1, &m2}, [&]<typename Int>() {
    using G = core::Geometry<Int>;
    EMBER_CHECK(G::size(m1, 1) == G::size(m2, 0))
        << "mat1 and mat2 shapes cannot be multiplied (" << m1.size(0) << "x" << m1.size(1) << " and " << m2.size(0)
        << "x" << m2.size(1) << ")";
    std::vector<Int> out = {G::size(m1, 0), G::size(m2, 1)};
    check_expandable<Int>(self, out);
    check_gemm_dtype(m1.dtype());
    return core::contiguous_meta_over(std::move(out), m1.dtype(), m1.device());
  }));
}

std::vector<TensorMeta> mv_meta(const Stack& a) {
  const Tensor& mat = a[0].to_tensor();
  const Tensor& vec = a[1].to_tensor();
  EMBER_CHECK(mat.dim() == 2 && vec.dim() == 1)
      << "vector + matrix @ vector expected, got 1, " << mat.dim() << ", " << vec.dim();
  check_same_scalar_type(mat.dtype(), vec.dtype());
  check_gemm_dtype(mat.dtype());
  return metas(core::over_geometry({&mat, &vec}, [&]<typename Int>() {
    using G = core::Geometry<Int>;
    EMBER_CHECK(G::size(mat, 1) == G::size(vec, 0)) << "size mismatch, got " << mat.size(0) << ", " << mat.size(0)
                                                    << "x" << mat.size(1) << "," << vec.size(0);
    return core::contiguous_meta_over(std::vector<Int>{G::size(mat, 0)}, mat.dtype(), mat.device());
  }));
}

std::vector<TensorMeta> dot_meta(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const Tensor& other = a[1].to_tensor();
  EMBER_CHECK(self.dim() == 1 && other.dim() == 1)
      << "1D tensors expected, but got " << self.dim() << "D and " << other.dim() << "D tensors";
  EMBER_CHECK(self.dtype() == other.dtype()) << "dot : expected both vectors to have same dtype, but found "
                                             << scalar_type_name(self.dtype()) << " and "
                                             << scalar_type_name(other.dtype());
  core::over_geometry({&self, &other}, [&]<typename Int>() {
    using G = core::Geometry<Int>;
    EMBER_CHECK(G::size(self, 0) == G::size(other, 0))
        << "inconsistent tensor size, expected tensor [" << self.numel() << "] and src [" << other.numel()
        << "] to have the same number of elements, but got " << self.numel() << " and " << other.numel()
        << " elements respectively";
    return 0;
  });
  check_gemm_dtype(self.dtype());
  return metas(contiguous_meta({}, self.dtype(), self.device()));
}

// --- composites ---------------------------------------------------------------------------

Tensor op(const char* name, Stack args) { return call_op_tensor(name, std::move(args)); }
Tensor mT(const Tensor& t) { return op("aten::transpose.int", {t, int64_t{-2}, int64_t{-1}}); }

// matmul and linear are written once over the integer type of their operands' geometry
// (core::Geometry): over SymInt for traced values with symbolic sizes, so their reshapes
// and views keep the symbols in their size lists (Note [dynamic shapes]).
template <typename Int>
using Ints = std::vector<Int>;
using core::SymInt;
namespace rules = core::rules;

template <typename Int>
Ints<Int> sizes_of(const Tensor& t) {
  const auto s = core::Geometry<Int>::sizes(t);
  return Ints<Int>(s.begin(), s.end());
}

/// ATen's should_fold: the larger operand (>= 3-D) can be folded into a matrix by a view,
/// the other being a vector or matrix.
template <typename Int>
bool should_fold(const Tensor& t1_in, const Tensor& t2_in) {
  using G = core::Geometry<Int>;
  const bool t1_larger = t1_in.dim() >= t2_in.dim();
  const Tensor t1 = t1_larger ? t1_in : mT(t2_in);
  const int64_t dim_t1 = t1.dim();
  const int64_t dim_t2 = t1_larger ? t2_in.dim() : t1_in.dim();
  if (!(dim_t1 >= 3 && dim_t2 <= 2)) return false;
  if (G::numel(t1) == 0) return true;
  for (int64_t i = 0; i < dim_t1 - 2; ++i)
    if (G::stride(t1, i) != G::stride(t1, i + 1) * G::size(t1, i + 1)) return false;
  return true;
}

template <typename Int>
Tensor matmul_over(const Tensor& t1, const Tensor& t2) {
  using G = core::Geometry<Int>;
  const int64_t d1 = t1.dim(), d2 = t2.dim();
  auto list = [](const Ints<Int>& v) { return core::size_list_value(v); };
  if (should_fold<Int>(t1, t2)) {
    // Fold the larger operand's batch into the rows of one mm (or mv).
    const bool transpose = d2 > d1;
    const Tensor a = transpose ? mT(t2) : t1;
    const Tensor b = !transpose ? t2 : (d1 == 2 ? op("aten::t", {t1}) : t1);
    const Ints<Int> a_sizes = sizes_of<Int>(a);
    Ints<Int> output_shape(a_sizes.begin(), a_sizes.end() - 1);
    const Int folded = rules::numel_of(ArrayRef<Int>(output_shape));
    const Tensor a_folded = op("aten::reshape", {a, list({folded, a_sizes.back()})});
    if (b.dim() == 2) {
      output_shape.push_back(G::size(b, 1));
      Tensor output = op("aten::view", {op("aten::mm", {a_folded, b}), list(output_shape)});
      return transpose ? op("aten::contiguous", {mT(output)}) : output;
    }
    return op("aten::view", {op("aten::mv", {a_folded, b}), list(output_shape)});
  }
  // Batched: broadcast the batch dims, flatten them, bmm, and restore them.
  const Ints<Int> s1 = sizes_of<Int>(t1), s2 = sizes_of<Int>(t2);
  const Int n = d1 > 1 ? s1[d1 - 2] : Int(1);
  const Int m1 = s1[d1 - 1];
  const ArrayRef<Int> batch1(s1.data(), static_cast<size_t>(std::max<int64_t>(d1 - 2, 0)));
  const Int m2 = d2 > 1 ? s2[d2 - 2] : s2[0];
  const Int p = d2 > 1 ? s2[d2 - 1] : Int(1);
  const ArrayRef<Int> batch2(s2.data(), static_cast<size_t>(std::max<int64_t>(d2 - 2, 0)));
  Ints<Int> output_shape = rules::broadcast_shapes(batch1, batch2);
  const Int batch = rules::numel_of(ArrayRef<Int>(output_shape));

  Ints<Int> size1 = output_shape;
  size1.insert(size1.end(), {n, m1});
  const Tensor a = op("aten::reshape", {op("aten::expand", {t1, list(size1)}), list({batch, n, m1})});
  const bool vector_rhs = d2 == 1;
  Ints<Int> size2 = output_shape;
  if (vector_rhs) size2.push_back(m2);
  else size2.insert(size2.end(), {m2, p});
  Tensor b = op("aten::expand", {t2, list(size2)});
  b = vector_rhs ? op("aten::unsqueeze", {op("aten::reshape", {b, list({batch, m2})}), int64_t{2}})
                 : op("aten::reshape", {b, list({batch, m2, p})});
  if (d1 > 1) output_shape.push_back(n);
  if (d2 > 1) output_shape.push_back(p);
  Tensor product = op("aten::bmm", {a, b});
  if (vector_rhs) product = op("aten::squeeze.dim", {product, int64_t{-1}});
  return op("aten::view", {product, list(output_shape)});
}

Tensor matmul_impl(const Tensor& t1, const Tensor& t2) {
  const int64_t d1 = t1.dim(), d2 = t2.dim();
  EMBER_CHECK(d1 != 0 && d2 != 0) << "both arguments to matmul need to be at least 1D, but they are " << d1 << "D and "
                                  << d2 << "D";
  if (d1 == 1 && d2 == 1) return op("aten::dot", {t1, t2});
  if (d1 == 2 && d2 == 1) return op("aten::mv", {t1, t2});
  if (d1 == 1 && d2 == 2)
    return op("aten::squeeze.dim", {op("aten::mm", {op("aten::unsqueeze", {t1, int64_t{0}}), t2}), int64_t{0}});
  if (d1 == 2 && d2 == 2) return op("aten::mm", {t1, t2});
  return core::over_geometry({&t1, &t2}, [&]<typename Int>() { return matmul_over<Int>(t1, t2); });
}

Tensor linear_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  const Tensor wt = op("aten::t", {weight});
  if (input.dim() == 2 && bias) return op("aten::addmm", {*bias, input, wt});
  if (input.dim() == 3 && bias && input.is_contiguous()) {
    // Fused path for contiguous 3-D input, as ATen takes it.
    return core::over_geometry({&input}, [&]<typename Int>() {
      using G = core::Geometry<Int>;
      const Int b = G::size(input, 0), t = G::size(input, 1);
      const Tensor flat = op("aten::view", {input, core::size_list_value(Ints<Int>{b * t, G::size(input, 2)})});
      const Tensor result = op("aten::addmm", {*bias, flat, wt});
      return op("aten::view", {result, core::size_list_value(Ints<Int>{b, t, G::size(result, 1)})});
    });
  }
  Tensor output = matmul_impl(input, wt);
  if (bias) call_op("aten::add_.Tensor", {output, *bias});
  return output;
}

/// The CUDA kernels (cuBLASLt; Note [cuda], "GEMM"): integer products raise as PyTorch's
/// CUDA kernels do; float32 mm/bmm/addmm use TF32 only when
/// config().backends.cuda.matmul.allow_tf32, and mv/dot never (PyTorch's gemv and dot).
void register_linalg_cuda(Registry& r) {
  namespace kc = kernels::cuda;
  auto floating = [](const Tensor& t, const char* kernel) {
    if (!is_floating_point(t.dtype())) not_implemented(kernel, t.dtype());
  };
  auto tf32 = [] { return config().backends.cuda.matmul.allow_tf32; };
  r.edit("aten::mm").set_cuda([=](const Stack& a, std::vector<Tensor>& out) {
    floating(out[0], "addmm_cuda");
    kc::gemm(as_batch(a[0].to_tensor()), as_batch(a[1].to_tensor()), as_batch(out[0]), 1, 0, tf32());
  });
  r.edit("aten::bmm").set_cuda([=](const Stack& a, std::vector<Tensor>& out) {
    floating(out[0], "bmm_cuda");
    kc::gemm(a[0].to_tensor(), a[1].to_tensor(), out[0], 1, 0, tf32());
  });
  r.edit("aten::addmm").set_cuda([=](const Stack& a, std::vector<Tensor>& out) {
    floating(out[0], "addmm_cuda");
    const double beta = a[3].to_scalar().to_double(), alpha = a[4].to_scalar().to_double();
    // A bias vector with beta 1 rides cuBLASLt's bias epilogue, as PyTorch's addmm: no copy
    // of it into out first.
    if (beta == 1 && kc::gemm_bias(as_batch(a[1].to_tensor()), as_batch(a[2].to_tensor()), a[0].to_tensor(),
                                   as_batch(out[0]), alpha, tf32()))
      return;
    // With beta == 0 self is not read at all: NaN in it does not propagate.
    if (beta != 0) kc::copy_into(out[0], a[0].to_tensor());
    kc::gemm(as_batch(a[1].to_tensor()), as_batch(a[2].to_tensor()), as_batch(out[0]), alpha, beta, tf32());
  });
  r.edit("aten::mv").set_cuda([=](const Stack& a, std::vector<Tensor>& out) {
    floating(out[0], "addmv_impl_cuda");
    const Tensor& mat = a[0].to_tensor();
    const Tensor& vec = a[1].to_tensor();
    kc::gemm(as_batch(mat), restrided(vec, {1, vec.size(0), 1}, {0, vec.stride(0), 1}),
             restrided(out[0], {1, mat.size(0), 1}, {0, 1, 1}), 1, 0, false);
  });
  r.edit("aten::dot").set_cuda([=](const Stack& a, std::vector<Tensor>& out) {
    floating(out[0], "dot");
    const Tensor& x = a[0].to_tensor();
    const Tensor& y = a[1].to_tensor();
    kc::gemm(restrided(x, {1, 1, x.size(0)}, {0, 1, x.stride(0)}), restrided(y, {1, y.size(0), 1}, {0, y.stride(0), 1}),
             restrided(out[0], {1, 1, 1}, {1, 1, 1}), 1, 0, false);
  });
}

}  // namespace

void register_linalg_ops(Registry& r) {
  using kernels::cpu::gemm_batched;
  r.def("mm(Tensor self, Tensor mat2) -> Tensor").set_meta(mm_meta).set_cpu([](const Stack& a, std::vector<Tensor>& out) {
    Tensor o = as_batch(out[0]);
    gemm_batched(as_batch(a[0].to_tensor()), as_batch(a[1].to_tensor()), o, 1, 0);
  });
  r.def("bmm(Tensor self, Tensor mat2) -> Tensor").set_meta(bmm_meta).set_cpu([](const Stack& a, std::vector<Tensor>& out) {
    gemm_batched(a[0].to_tensor(), a[1].to_tensor(), out[0], 1, 0);
  });
  r.def("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor")
      .set_meta(addmm_meta)
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Scalar beta = a[3].to_scalar(), alpha = a[4].to_scalar();
        const bool use_self = is_floating_point(out[0].dtype()) ? beta.to_double() != 0 : beta.to_long() != 0;
        // With beta == 0 self is not read at all: NaN in it does not propagate.
        if (use_self) broadcast_copy(out[0], a[0].to_tensor());
        Tensor o = as_batch(out[0]);
        gemm_batched(as_batch(a[1].to_tensor()), as_batch(a[2].to_tensor()), o, alpha, use_self ? beta : Scalar(0));
      });
  r.def("mv(Tensor self, Tensor vec) -> Tensor").set_meta(mv_meta).set_cpu([](const Stack& a, std::vector<Tensor>& out) {
    const Tensor& mat = a[0].to_tensor();
    const Tensor& vec = a[1].to_tensor();
    Tensor o = restrided(out[0], {1, mat.size(0), 1}, {0, 1, 1});
    gemm_batched(as_batch(mat), restrided(vec, {1, vec.size(0), 1}, {0, vec.stride(0), 1}), o, 1, 0);
  });
  r.def("dot(Tensor self, Tensor tensor) -> Tensor").set_meta(dot_meta).set_cpu([](const Stack& a, std::vector<Tensor>& out) {
    const Tensor& x = a[0].to_tensor();
    const Tensor& y = a[1].to_tensor();
    Tensor o = restrided(out[0], {1, 1, 1}, {1, 1, 1});
    gemm_batched(restrided(x, {1, 1, x.size(0)}, {0, 1, x.stride(0)}),
                 restrided(y, {1, y.size(0), 1}, {0, y.stride(0), 1}), o, 1, 0);
  });
  r.def("matmul(Tensor self, Tensor other) -> Tensor").set_decomposition([](const Stack& a) -> Stack {
    return {matmul_impl(a[0].to_tensor(), a[1].to_tensor())};
  });
  r.def("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor").set_decomposition([](const Stack& a) -> Stack {
    return {linear_impl(a[0].to_tensor(), a[1].to_tensor(), a[2].to_optional_tensor())};
  });
  register_linalg_cuda(r);
}

}  // namespace ember::ops

namespace ember {
using ops::call_tensor;

Tensor mm(const Tensor& self, const Tensor& mat2, Loc loc) {
  return call_tensor(EMBER_OP("aten::mm"), {self, mat2}, loc);
}
Tensor bmm(const Tensor& self, const Tensor& mat2, Loc loc) {
  return call_tensor(EMBER_OP("aten::bmm"), {self, mat2}, loc);
}
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha,
             Loc loc) {
  return call_tensor(EMBER_OP("aten::addmm"), {self, mat1, mat2, beta, alpha}, loc);
}
Tensor mv(const Tensor& self, const Tensor& vec, Loc loc) {
  return call_tensor(EMBER_OP("aten::mv"), {self, vec}, loc);
}
Tensor dot(const Tensor& self, const Tensor& tensor, Loc loc) {
  return call_tensor(EMBER_OP("aten::dot"), {self, tensor}, loc);
}
Tensor matmul(const Tensor& self, const Tensor& other, Loc loc) {
  return call_tensor(EMBER_OP("aten::matmul"), {self, other}, loc);
}
Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, Loc loc) {
  return call_tensor(EMBER_OP("aten::linear"), {input, weight, bias}, loc);
}
Tensor Tensor::matmul(const Tensor& other, Loc loc) const { return ember::matmul(*this, other, loc); }

}  // namespace ember
