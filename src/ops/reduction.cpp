// ops/reduction.cpp — reductions: sum, mean, prod, amax/amin, max/min (all and along a
// dim, with indices), argmax/argmin, var/std (var.dim too), any/all (any.dims too), cumsum, logsumexp. Schemas and
// dtype rules follow ATen; the kernels live in kernels/cpu/reduce.cpp (CPU) and
// kernels/cuda/reduce.cpp (CUDA: sum, mean, prod, amax/amin, max/min, var, any/all) and
// kernels/cuda/arg_reduce.cpp (max.dim/min.dim, argmax/argmin) and kernels/cuda/scan.cpp
// (cumsum). std and logsumexp are
// composites, as in ATen.
#include <cmath>
#include <limits>

#include "core/shape.h"
#include "core/shape_rules.h"
#include "core/sym_geometry.h"
#include "ember/ops/reduction.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cuda/arg_reduce.h"
#include "kernels/cuda/loops.h"
#include "kernels/cuda/reduce.h"
#include "kernels/cuda/scan.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

namespace k = kernels::cpu;

// --- shapes and dtypes ---------------------------------------------------------------------

/// Reduced dims as a mask; no dims (None or []) means every dim.
std::vector<bool> mask_of(const Tensor& self, const std::optional<std::vector<int64_t>>& dims) {
  if (!dims || dims->empty()) return std::vector<bool>(static_cast<size_t>(self.dim()), true);
  return core::dim_mask(*dims, self.dim(), true);
}

std::vector<bool> mask_of_dim(const Tensor& self, int64_t dim) {
  const int64_t d = core::wrap_dim(dim, self.dim());
  std::vector<bool> mask(static_cast<size_t>(self.dim()), false);
  if (self.dim() > 0) mask[d] = true;
  return mask;
}

/// Over int64_t or SymInt (core::Geometry): a reduction keeps the symbolic sizes it does
/// not reduce.
template <typename Int>
TensorMeta reduce_meta_over(const Tensor& self, const std::vector<bool>& mask, bool keepdim, ScalarType dtype) {
  using G = core::Geometry<Int>;
  std::vector<Int> sizes;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!mask[d]) sizes.push_back(G::size(self, d));
    else if (keepdim) sizes.push_back(1);
  }
  std::vector<Int> strides = core::rules::contiguous_strides(ArrayRef<Int>(sizes));
  return G::meta(std::move(sizes), std::move(strides), Int(0), dtype, self.device());
}

TensorMeta reduce_meta(const Tensor& self, const std::vector<bool>& mask, bool keepdim, ScalarType dtype) {
  return core::is_symbolic(self) ? reduce_meta_over<core::SymInt>(self, mask, keepdim, dtype)
                                 : reduce_meta_over<int64_t>(self, mask, keepdim, dtype);
}

/// sum/prod/cumsum: an explicit dtype wins; integers and bool accumulate as int64.
ScalarType sum_dtype(const Tensor& self, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  return is_integral(self.dtype(), true) ? kInt64 : self.dtype();
}

ScalarType mean_dtype(const Tensor& self, std::optional<ScalarType> dtype) {
  if (dtype) {
    EMBER_CHECK(is_floating_point(*dtype))
        << "mean(): could not infer output dtype. Optional dtype must be either a floating point or complex dtype. "
           "Got: "
        << scalar_type_name(*dtype);
    return *dtype;
  }
  EMBER_CHECK(is_floating_point(self.dtype()))
      << "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: "
      << scalar_type_name(self.dtype());
  return self.dtype();
}

void check_var_dtype(const Tensor& self) {
  EMBER_CHECK(is_floating_point(self.dtype())) << "std and var only support floating point and complex dtypes";
}

/// ATen's zero_numel_check_dims: reductions without an identity need a non-empty range.
void check_nonempty(const Tensor& self, IntArrayRef dims, const char* name, bool index_error_when_unspecified) {
  if (core::sym_numel(self) != 0) return;
  if (dims.empty()) {
    if (index_error_when_unspecified) {
      EMBER_FAIL_KIND(ErrorKind::IndexError)
          << name << "(): Expected reduction dim to be specified for input.numel() == 0.";
    }
    EMBER_FAIL() << name
                 << "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
                    "with the 'dim' argument.";
  }
  for (int64_t d : dims) {
    const int64_t w = core::wrap_dim(d, self.dim());
    EMBER_CHECK_INDEX(self.dim() == 0 || core::sym_size(self, w) != 0)
        << name << "(): Expected reduction dim " << d << " to have non-zero size.";
  }
}

void check_arg_dtype(const Tensor& self, bool is_max) {
  EMBER_CHECK(self.dtype() != kBool) << (is_max ? "\"argmax_cpu\"" : "\"argmin_cpu\"") << " not implemented for 'Bool'";
}

// --- CUDA kernels ----------------------------------------------------------------------------

namespace kc = kernels::cuda;

/// Which dims a reduction's arguments name: every dim, the `int[1]? dim` list at a[1], or
/// the one `int dim` at a[1].
enum class Dims { All, List, One };

std::vector<bool> dims_of(const Tensor& self, const Stack& a, Dims dims) {
  switch (dims) {
    case Dims::All: return mask_of(self, {});
    case Dims::List: return mask_of(self, a[1].to_optional_int_list());
    case Dims::One: return mask_of_dim(self, a[1].to_int());
  }
  EMBER_INTERNAL_ASSERT(false) << "unknown reduction dims";
}

/// The CUDA kernel of a reduction (kernels/cuda/reduce.h); the meta function has already
/// given out[0] its sizes and result dtype and raised where the op has no answer.
KernelFn cuda_reduce(kc::Reduction op, Dims dims) {
  return [op, dims](const Stack& a, std::vector<Tensor>& out) {
    const Tensor& self = a[0].to_tensor();
    kc::reduce(op, self, dims_of(self, a, dims), out[0]);
  };
}

/// any/all on CUDA: the max/min row kernels over the input's truth values (each element
/// converted to bool, so NaN is true); a uint8 result gets them as 0/1.
void any_all_cuda(bool is_all, const Tensor& self, const std::vector<bool>& mask, const Tensor& out) {
  const kc::Reduction op = is_all ? kc::Reduction::Min : kc::Reduction::Max;
  if (out.dtype() == kBool) return kc::reduce(op, self, mask, out);
  const Tensor truth = kc::empty_device(out.sizes(), kBool, out.device());
  kc::reduce(op, self, mask, truth);
  kc::copy_into(out, truth);
}
KernelFn cuda_any_all(bool is_all, Dims dims) {
  return [is_all, dims](const Stack& a, std::vector<Tensor>& out) {
    const Tensor& self = a[0].to_tensor();
    any_all_cuda(is_all, self, dims_of(self, a, dims), out[0]);
  };
}

// --- registration ----------------------------------------------------------------------------

void register_sum_mean_prod(Registry& r) {
  r.def("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        return metas(reduce_meta(self, mask_of(self, {}), false, sum_dtype(self, a[1].to_optional_scalar_type())));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        k::sum_kernel(cast(self, out[0].dtype()), mask_of(self, {}), out[0], false);
      })
      .set_cuda(cuda_reduce(kc::Reduction::Sum, Dims::All));
  r.def("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        return metas(reduce_meta(self, mask_of(self, a[1].to_optional_int_list()), a[2].to_bool(),
                                 sum_dtype(self, a[3].to_optional_scalar_type())));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        k::sum_kernel(cast(self, out[0].dtype()), mask_of(self, a[1].to_optional_int_list()), out[0], false);
      })
      .set_cuda(cuda_reduce(kc::Reduction::Sum, Dims::List));
  r.def("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        return metas(reduce_meta(self, mask_of(self, {}), false, mean_dtype(self, a[1].to_optional_scalar_type())));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        k::sum_kernel(cast(self, out[0].dtype()), mask_of(self, {}), out[0], true);
      })
      .set_cuda(cuda_reduce(kc::Reduction::Mean, Dims::All));
  r.def("mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        return metas(reduce_meta(self, mask_of(self, a[1].to_optional_int_list()), a[2].to_bool(),
                                 mean_dtype(self, a[3].to_optional_scalar_type())));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        k::sum_kernel(cast(self, out[0].dtype()), mask_of(self, a[1].to_optional_int_list()), out[0], true);
      })
      .set_cuda(cuda_reduce(kc::Reduction::Mean, Dims::List));
  r.def("prod(Tensor self, *, ScalarType? dtype=None) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        return metas(reduce_meta(self, mask_of(self, {}), false, sum_dtype(self, a[1].to_optional_scalar_type())));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        k::prod_kernel(cast(self, out[0].dtype()), mask_of(self, {}), out[0]);
      })
      .set_cuda(cuda_reduce(kc::Reduction::Prod, Dims::All));
  r.def("prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        return metas(reduce_meta(self, mask_of_dim(self, a[1].to_int()), a[2].to_bool(),
                                 sum_dtype(self, a[3].to_optional_scalar_type())));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        k::prod_kernel(cast(self, out[0].dtype()), mask_of_dim(self, a[1].to_int()), out[0]);
      })
      .set_cuda(cuda_reduce(kc::Reduction::Prod, Dims::One));
}

void register_min_max(Registry& r) {
  for (const bool is_max : {true, false}) {
    const char* name = is_max ? "amax" : "amin";
    r.def(std::string(name) + "(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor")
        .set_meta([name](const Stack& a) {
          const Tensor& self = a[0].to_tensor();
          const auto& dims = a[1].to_int_list();
          const std::vector<bool> mask = mask_of(self, dims);
          check_nonempty(self, dims, name, false);
          return metas(reduce_meta(self, mask, a[2].to_bool(), self.dtype()));
        })
        .set_cpu([is_max](const Stack& a, std::vector<Tensor>& out) {
          const Tensor& self = a[0].to_tensor();
          k::minmax_kernel(self, mask_of(self, a[1].to_int_list()), out[0], is_max);
        })
        .set_cuda(cuda_reduce(is_max ? kc::Reduction::Max : kc::Reduction::Min, Dims::List));
    const std::string short_name = is_max ? "max" : "min";
    r.def(short_name + "(Tensor self) -> Tensor")
        .set_meta([name = is_max ? "max" : "min"](const Stack& a) {
          const Tensor& self = a[0].to_tensor();
          check_nonempty(self, {}, name, false);
          return metas(reduce_meta(self, mask_of(self, {}), false, self.dtype()));
        })
        .set_cpu([is_max](const Stack& a, std::vector<Tensor>& out) {
          const Tensor& self = a[0].to_tensor();
          k::minmax_kernel(self, mask_of(self, {}), out[0], is_max);
        })
        .set_cuda(cuda_reduce(is_max ? kc::Reduction::Max : kc::Reduction::Min, Dims::All));
    r.def(short_name + ".dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
        .set_meta([name = is_max ? "max" : "min"](const Stack& a) {
          const Tensor& self = a[0].to_tensor();
          const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
          check_nonempty(self, {dim}, name, false);
          const std::vector<bool> mask = mask_of_dim(self, dim);
          return std::vector<TensorMeta>{reduce_meta(self, mask, a[2].to_bool(), self.dtype()),
                                         reduce_meta(self, mask, a[2].to_bool(), kInt64)};
        })
        .set_cpu([is_max](const Stack& a, std::vector<Tensor>& out) {
          const Tensor& self = a[0].to_tensor();
          k::arg_minmax_kernel(self, core::wrap_dim(a[1].to_int(), self.dim()), out[0], out[1], is_max);
        })
        .set_cuda([is_max](const Stack& a, std::vector<Tensor>& out) {
          const Tensor& self = a[0].to_tensor();
          kc::arg_reduce(self, mask_of_dim(self, a[1].to_int()), out[0], out[1], is_max);
        });
    const char* arg_name = is_max ? "argmax" : "argmin";
    r.def(std::string(arg_name) + "(Tensor self, int? dim=None, bool keepdim=False) -> Tensor")
        .set_meta([arg_name, is_max](const Stack& a) {
          const Tensor& self = a[0].to_tensor();
          const std::optional<int64_t> dim = a[1].to_optional_int();
          const bool keepdim = a[2].to_bool();
          check_arg_dtype(self, is_max);
          if (!dim) {
            check_nonempty(self, {}, arg_name, true);
            return metas(reduce_meta(self, mask_of(self, {}), keepdim, kInt64));
          }
          const int64_t d = core::wrap_dim(*dim, self.dim());
          check_nonempty(self, {d}, arg_name, true);
          return metas(reduce_meta(self, mask_of_dim(self, d), keepdim, kInt64));
        })
        .set_cpu([is_max](const Stack& a, std::vector<Tensor>& out) {
          const Tensor& self = a[0].to_tensor();
          const std::optional<int64_t> dim = a[1].to_optional_int();
          if (!dim) {
            // The index into the flattened (row-major) input.
            Tensor flat = call_op_tensor("aten::reshape", {self, std::vector<int64_t>{-1}});
            Tensor idx = out[0].dim() == 0 ? out[0] : call_op_tensor("aten::view", {out[0], std::vector<int64_t>{}});
            k::arg_minmax_kernel(flat, 0, Tensor(), idx, is_max);
            return;
          }
          k::arg_minmax_kernel(self, core::wrap_dim(*dim, self.dim()), Tensor(), out[0], is_max);
        })
        .set_cuda([is_max](const Stack& a, std::vector<Tensor>& out) {
          // Every dim reduced, the row-major index among them is the flattened input's.
          const Tensor& self = a[0].to_tensor();
          const std::optional<int64_t> dim = a[1].to_optional_int();
          kc::arg_reduce(self, dim ? mask_of_dim(self, *dim) : mask_of(self, {}), Tensor(), out[0], is_max);
        });
  }
}

void register_var_std(Registry& r) {
  r.def("var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        check_var_dtype(self);
        return metas(reduce_meta(self, mask_of(self, a[1].to_optional_int_list()), a[3].to_bool(), self.dtype()));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        const double correction = a[2].is_none() ? 1.0 : a[2].to_scalar().to_double();
        k::var_kernel(self, mask_of(self, a[1].to_optional_int_list()), out[0], correction);
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        const double correction = a[2].is_none() ? 1.0 : a[2].to_scalar().to_double();
        kc::reduce(kc::Reduction::Var, self, dims_of(self, a, Dims::List), out[0], correction);
      });
  r.def("std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor")
      .set_decomposition([](const Stack& a) {
        check_var_dtype(a[0].to_tensor());
        Tensor var = call_op_tensor("aten::var.correction", {a[0], a[1], a[2], a[3]});
        return call_op("aten::sqrt", {var});
      });
  // var.dim: unbiased is correction 1 (Bessel's), else 0.
  r.def("var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor")
      .set_decomposition([](const Stack& a) {
        return call_op("aten::var.correction", {a[0], a[1], Scalar(a[2].to_bool() ? 1 : 0), a[3]});
      });
}

void register_any_all(Registry& r) {
  for (const bool is_all : {false, true}) {
    const std::string name = is_all ? "all" : "any";
    auto out_dtype = [](const Tensor& self) { return self.dtype() == kUInt8 ? kUInt8 : kBool; };
    r.def(name + "(Tensor self) -> Tensor")
        .set_meta([out_dtype](const Stack& a) {
          const Tensor& self = a[0].to_tensor();
          return metas(reduce_meta(self, mask_of(self, {}), false, out_dtype(self)));
        })
        .set_cpu([is_all](const Stack& a, std::vector<Tensor>& out) {
          const Tensor& self = a[0].to_tensor();
          k::any_all_kernel(self, mask_of(self, {}), out[0], is_all);
        })
        .set_cuda(cuda_any_all(is_all, Dims::All));
    r.def(name + ".dim(Tensor self, int dim, bool keepdim=False) -> Tensor")
        .set_meta([out_dtype](const Stack& a) {
          const Tensor& self = a[0].to_tensor();
          return metas(reduce_meta(self, mask_of_dim(self, a[1].to_int()), a[2].to_bool(), out_dtype(self)));
        })
        .set_cpu([is_all](const Stack& a, std::vector<Tensor>& out) {
          const Tensor& self = a[0].to_tensor();
          k::any_all_kernel(self, mask_of_dim(self, a[1].to_int()), out[0], is_all);
        })
        .set_cuda(cuda_any_all(is_all, Dims::One));
  }
  // any over a dim list: None reduces every dim, [] none (each element's truth value).
  auto dims_mask = [](const Tensor& self, const IValue& dims) {
    return dims.is_none() ? mask_of(self, {}) : core::dim_mask(dims.to_int_list(), self.dim(), false);
  };
  r.def("any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor")
      .set_meta([dims_mask](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        return metas(reduce_meta(self, dims_mask(self, a[1]), a[2].to_bool(), self.dtype() == kUInt8 ? kUInt8 : kBool));
      })
      .set_cpu([dims_mask](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        k::any_all_kernel(self, dims_mask(self, a[1]), out[0], false);
      })
      .set_cuda([dims_mask](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        any_all_cuda(false, self, dims_mask(self, a[1]), out[0]);
      });
}

void register_cumsum(Registry& r) {
  r.def("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        core::wrap_dim(a[1].to_int(), self.dim());
        const ScalarType dtype = sum_dtype(self, a[2].to_optional_scalar_type());
        // Over the symbols when self has them: the result has its sizes, contiguous.
        if (core::is_symbolic(self))
          return metas(core::contiguous_sym_meta(core::sym_sizes(self), dtype, self.device()));
        return metas(contiguous_meta(self.sizes(), dtype, self.device()));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        Tensor x = cast(self, out[0].dtype()).contiguous();
        k::cumsum_kernel(x, core::wrap_dim(a[1].to_int(), self.dim()), out[0]);
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) { kc::cumsum(a[0].to_tensor(), a[1].to_int(), out[0]); });
}

/// ATen's logsumexp: max-shifted so exp cannot overflow; rows whose max is ±inf use a
/// shift of 0 so that all -inf gives -inf (not nan) and +inf gives +inf.
void register_logsumexp(Registry& r) {
  r.def("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor").set_decomposition([](const Stack& a) {
    Tensor self = a[0].to_tensor();
    const std::vector<int64_t>& dims = a[1].to_int_list();
    const bool keepdim = a[2].to_bool();
    if (is_integral(self.dtype(), true)) self = cast(self, kDefaultFloat);
    if (core::sym_numel(self) == core::SymInt(0)) {  // as SymInts: a symbolic size stays one
      Tensor s = call_op_tensor("aten::sum.dim_IntList", {call_op_tensor("aten::exp", {self}), dims, keepdim});
      return call_op("aten::log", {s});
    }
    Tensor maxes = call_op_tensor("aten::amax", {self, dims, true});
    Tensor infinite = call_op_tensor("aten::eq.Scalar", {call_op_tensor("aten::abs", {maxes}),
                                                         Scalar(std::numeric_limits<double>::infinity())});
    maxes = call_op_tensor("aten::masked_fill.Scalar", {maxes, infinite, Scalar(0.0)});
    Tensor shifted = call_op_tensor("aten::exp", {call_op_tensor("aten::sub.Tensor", {self, maxes})});
    Tensor result = call_op_tensor("aten::log", {call_op_tensor("aten::sum.dim_IntList", {shifted, dims, keepdim})});
    if (!keepdim) {
      std::vector<int64_t> squeeze_dims = dims;
      if (squeeze_dims.empty())
        for (int64_t d = 0; d < self.dim(); ++d) squeeze_dims.push_back(d);
      maxes = call_op_tensor("aten::squeeze.dims", {maxes, squeeze_dims});
    }
    return call_op("aten::add.Tensor", {result, maxes});
  });
}

/// ATen's linalg_vector_norm: max|x| for ord=inf, min|x| for -inf, the count of nonzeros
/// for 0, and (sum |x|^ord)^(1/ord) otherwise, computed in `dtype` when given. Written
/// with ops (they run inside the kernel, unrecorded), so one body serves every device.
Tensor vector_norm_value(const Stack& a) {
  Tensor self = a[0].to_tensor();
  const double ord = a[1].to_scalar().to_double();
  const std::vector<int64_t> dims = a[2].is_none() ? std::vector<int64_t>{} : a[2].to_int_list();
  const bool keepdim = a[3].to_bool();
  if (!a[4].is_none()) self = cast(self, a[4].to_scalar_type());
  Tensor abs = call_op_tensor("aten::abs", {self});
  if (std::isinf(ord)) return call_op_tensor(ord > 0 ? "aten::amax" : "aten::amin", {abs, dims, keepdim});
  if (ord == 0) {
    Tensor nonzero = cast(call_op_tensor("aten::ne.Scalar", {abs, Scalar(0.0)}), self.dtype());
    return call_op_tensor("aten::sum.dim_IntList", {nonzero, dims, keepdim});
  }
  if (ord == 1) return call_op_tensor("aten::sum.dim_IntList", {abs, dims, keepdim});
  if (ord == 2) {
    Tensor sq = call_op_tensor("aten::mul.Tensor", {abs, abs});
    return call_op_tensor("aten::sqrt", {call_op_tensor("aten::sum.dim_IntList", {sq, dims, keepdim})});
  }
  Tensor powed = call_op_tensor("aten::pow.Tensor_Scalar", {abs, Scalar(ord)});
  Tensor total = call_op_tensor("aten::sum.dim_IntList", {powed, dims, keepdim});
  return call_op_tensor("aten::pow.Tensor_Scalar", {total, Scalar(1.0 / ord)});
}

// Note [vector norm]: linalg_vector_norm is an op of its own, not a composite, because its
// gradient is PyTorch's norm_backward (0 where the norm is 0, 0 for ord 0, an infinity
// norm's gradient split between tied maxima), which autograd through the formula above
// does not give (sqrt's gradient at 0 makes NaN). The code generator still sees the
// formula: aot/decompositions.cpp expands the op back into it.
void register_vector_norm(Registry& r) {
  const KernelFn kernel = [](const Stack& a, std::vector<Tensor>& out) {
    call_op("aten::copy_", {out[0], vector_norm_value(a)});
  };
  r.def("linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
        "ScalarType? dtype=None) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        EMBER_CHECK_TYPE(is_floating_point(self.dtype()))
            << "linalg.vector_norm: expected a floating point input, got " << self.dtype();
        const double ord = a[1].to_scalar().to_double();
        const std::vector<int64_t> dims = a[2].is_none() ? std::vector<int64_t>{} : a[2].to_int_list();
        if (std::isinf(ord)) check_nonempty(self, dims, ord > 0 ? "amax" : "amin", false);
        const ScalarType dtype = a[4].is_none() ? self.dtype() : a[4].to_scalar_type();
        return metas(reduce_meta(self, mask_of(self, dims), a[3].to_bool(), dtype));
      })
      .set_cpu(kernel)
      .set_cuda(kernel);
}

}  // namespace

void register_reduction_ops(Registry& r) {
  register_vector_norm(r);
  register_sum_mean_prod(r);
  register_min_max(r);
  register_var_std(r);
  register_any_all(r);
  register_cumsum(r);
  register_logsumexp(r);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_at;
using ops::call_tensor;

Tensor sum(const Tensor& self, std::optional<ScalarType> dtype, Loc loc) {
  return call_tensor(EMBER_OP("aten::sum"), {self, dtype}, loc);
}
Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype, Loc loc) {
  return call_tensor(EMBER_OP("aten::sum.dim_IntList"), {self, dim.vec(), keepdim, dtype}, loc);
}
Tensor mean(const Tensor& self, std::optional<ScalarType> dtype, Loc loc) {
  return call_tensor(EMBER_OP("aten::mean"), {self, dtype}, loc);
}
Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype, Loc loc) {
  return call_tensor(EMBER_OP("aten::mean.dim"), {self, dim.vec(), keepdim, dtype}, loc);
}
Tensor prod(const Tensor& self, std::optional<ScalarType> dtype, Loc loc) {
  return call_tensor(EMBER_OP("aten::prod"), {self, dtype}, loc);
}
Tensor prod(const Tensor& self, int64_t dim, bool keepdim, std::optional<ScalarType> dtype, Loc loc) {
  return call_tensor(EMBER_OP("aten::prod.dim_int"), {self, dim, keepdim, dtype}, loc);
}
Tensor amax(const Tensor& self, IntArrayRef dim, bool keepdim, Loc loc) {
  return call_tensor(EMBER_OP("aten::amax"), {self, dim.vec(), keepdim}, loc);
}
Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim, Loc loc) {
  return call_tensor(EMBER_OP("aten::amin"), {self, dim.vec(), keepdim}, loc);
}
Tensor max(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::max"), {self}, loc); }
Tensor min(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::min"), {self}, loc); }
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim, Loc loc) {
  return ops::tuple2(call_at(EMBER_OP("aten::max.dim"), {self, dim, keepdim}, loc));
}
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim, Loc loc) {
  return ops::tuple2(call_at(EMBER_OP("aten::min.dim"), {self, dim, keepdim}, loc));
}
Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim, Loc loc) {
  return call_tensor(EMBER_OP("aten::argmax"), {self, dim, keepdim}, loc);
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim, Loc loc) {
  return call_tensor(EMBER_OP("aten::argmin"), {self, dim, keepdim}, loc);
}
Tensor linalg_vector_norm(const Tensor& self, const Scalar& ord, std::optional<std::vector<int64_t>> dim, bool keepdim,
                          std::optional<ScalarType> dtype, Loc loc) {
  return call_tensor(EMBER_OP("aten::linalg_vector_norm"), {self, ord, dim, keepdim, dtype}, loc);
}
Tensor var(const Tensor& self, std::optional<std::vector<int64_t>> dim, std::optional<Scalar> correction, bool keepdim,
           Loc loc) {
  return call_tensor(EMBER_OP("aten::var.correction"), {self, dim, correction, keepdim}, loc);
}
Tensor std(const Tensor& self, std::optional<std::vector<int64_t>> dim, std::optional<Scalar> correction, bool keepdim,
           Loc loc) {
  return call_tensor(EMBER_OP("aten::std.correction"), {self, dim, correction, keepdim}, loc);
}
Tensor any(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::any"), {self}, loc); }
Tensor any(const Tensor& self, const std::optional<std::vector<int64_t>>& dims, bool keepdim, Loc loc) {
  return call_tensor(EMBER_OP("aten::any.dims"), {self, dims ? IValue(*dims) : IValue(), keepdim}, loc);
}
Tensor any(const Tensor& self, int64_t dim, bool keepdim, Loc loc) {
  return call_tensor(EMBER_OP("aten::any.dim"), {self, dim, keepdim}, loc);
}
Tensor all(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::all"), {self}, loc); }
Tensor all(const Tensor& self, int64_t dim, bool keepdim, Loc loc) {
  return call_tensor(EMBER_OP("aten::all.dim"), {self, dim, keepdim}, loc);
}
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, Loc loc) {
  return call_tensor(EMBER_OP("aten::cumsum"), {self, dim, dtype}, loc);
}
Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim, Loc loc) {
  return call_tensor(EMBER_OP("aten::logsumexp"), {self, dim.vec(), keepdim}, loc);
}

Tensor Tensor::sum(Loc loc) const { return ember::sum(*this, std::nullopt, loc); }
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, Loc loc) const { return ember::sum(*this, dim, keepdim, std::nullopt, loc); }
Tensor Tensor::mean(Loc loc) const { return ember::mean(*this, std::nullopt, loc); }
Tensor Tensor::mean(IntArrayRef dim, bool keepdim, Loc loc) const {
  return ember::mean(*this, dim, keepdim, std::nullopt, loc);
}

}  // namespace ember
