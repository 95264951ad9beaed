// ops/derivatives.cpp — derivative formulas of the elementwise, copy and view ops, one
// row per op (PyTorch's derivatives.yaml, as code). Formulas use ops only, never loops,
// so a traced backward pass is an ordinary graph. Autograd sums each returned gradient
// to its input's shape and converts it to the input's dtype (see Note [autograd]).
#include <cmath>
#include <numeric>

#include "core/shape.h"
#include "ember/ops/creation.h"
#include "ember/ops/fft.h"
#include "ember/ops/indexing.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/reduction.h"
#include "ember/ops/shape.h"
#include "ember/ops/view.h"
#include "ops/derivative_rows.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {

std::vector<SymInt> DerivativeContext::arg_sym_sizes(size_t i) const {
  const IntArrayRef sizes = arg_sizes(i);
  return std::vector<SymInt>(sizes.begin(), sizes.end());
}

std::vector<SymInt> DerivativeContext::output_sym_sizes(size_t i) const {
  const IntArrayRef sizes = output_sizes(i);
  return std::vector<SymInt>(sizes.begin(), sizes.end());
}

std::vector<SymInt> DerivativeContext::arg_sym_strides(size_t i) const {
  const IntArrayRef strides = arg_strides(i);
  return std::vector<SymInt>(strides.begin(), strides.end());
}

SymInt DerivativeContext::arg_sym_storage_offset(size_t i) const { return SymInt(arg_storage_offset(i)); }

Tensor DerivativeContext::grad_or_zeros(size_t i) const {
  if (grad(i).defined()) return grad(i);
  return zeros(SymIntArrayRef(output_sym_sizes(i)), TensorOptions(output_dtype(i)).device(output_device(i)));
}

Tensor zeros_as(IntArrayRef sizes, const Tensor& like) {
  return zeros(sizes, TensorOptions(like.dtype()).device(like.device()));
}

Tensor zeros_as(SymIntArrayRef sizes, const Tensor& like) {
  return zeros(sizes, TensorOptions(like.dtype()).device(like.device()));
}

Tensor sum_to(const Tensor& grad, SymIntArrayRef sizes) {
  auto same = [&sizes](const std::vector<SymInt>& have) {
    if (have.size() != sizes.size()) return false;
    for (size_t i = 0; i < have.size(); ++i)
      if (!identical(have[i], sizes[i])) return false;
    return true;
  };
  const std::vector<SymInt> have = sym_sizes(grad);
  if (same(have)) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(sizes.size());
  EMBER_INTERNAL_ASSERT(lead >= 0) << "sum_to: cannot sum a gradient of rank " << grad.dim() << " to rank "
                                   << sizes.size();
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  for (int64_t i = 0; i < static_cast<int64_t>(sizes.size()); ++i) {
    const SymInt& g = have[static_cast<size_t>(lead + i)];
    const SymInt& want = sizes[static_cast<size_t>(i)];
    // A size symbol's range starts at 2, so these comparisons record no guard.
    if (want == 1 && g != 1) {
      dims.push_back(lead + i);
    } else {
      EMBER_INTERNAL_ASSERT(want == g) << "sum_to: cannot sum size " << g << " to " << want << " in dim " << i;
    }
  }
  Tensor r = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return same(sym_sizes(r)) ? r : r.reshape(sizes);
}

Tensor sum_to(const Tensor& grad, IntArrayRef sizes) {
  if (grad.sizes() == sizes) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(sizes.size());
  EMBER_INTERNAL_ASSERT(lead >= 0) << "sum_to: cannot sum " << grad.sizes() << " to " << sizes;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  for (int64_t i = 0; i < static_cast<int64_t>(sizes.size()); ++i) {
    const int64_t g = grad.size(lead + i);
    if (sizes[i] == 1 && g != 1) {
      dims.push_back(lead + i);
    } else {
      EMBER_INTERNAL_ASSERT(sizes[i] == g) << "sum_to: cannot sum " << grad.sizes() << " to " << sizes;
    }
  }
  Tensor r = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return r.sizes() == sizes ? r : r.reshape(sizes);
}

namespace {

/// The larger of two sizes (a comparison the ranges do not decide is a guard).
SymInt sym_max(const SymInt& a, const SymInt& b) { return a < b ? b : a; }
SymInt sym_min(const SymInt& a, const SymInt& b) { return b < a ? b : a; }

/// The last storage position a geometry reaches (offset - 1 when it has no elements).
SymInt last_position(SymIntArrayRef sizes, SymIntArrayRef strides, const SymInt& offset) {
  SymInt last = offset;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return offset - 1;
    last = last + (sizes[d] - 1) * strides[d];
  }
  return last;
}

/// PyTorch's maybe-overlapping test: with dims sorted by stride, each stride must pass
/// the extent of the smaller ones, or two elements may share a position.
bool maybe_overlapping(SymIntArrayRef sizes, SymIntArrayRef strides) {
  std::vector<size_t> order;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 1) order.push_back(d);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  SymInt extent = 0;
  for (size_t d : order) {
    if (strides[d] <= extent) return true;
    extent = extent + (sizes[d] - 1) * strides[d];
  }
  return false;
}

/// Whether a geometry of `sizes` has elements.
bool has_elements(SymIntArrayRef sizes) {
  for (const SymInt& s : sizes)
    if (s == 0) return false;
  return true;
}

}  // namespace

Tensor as_strided_backward(const Tensor& grad, SymIntArrayRef in_sizes, SymIntArrayRef in_strides,
                           const SymInt& in_offset, SymIntArrayRef out_sizes, SymIntArrayRef out_strides,
                           const SymInt& out_offset) {
  const SymInt base = sym_min(in_offset, out_offset);
  const SymInt extent =
      sym_max(sym_max(last_position(in_sizes, in_strides, in_offset), last_position(out_sizes, out_strides, out_offset)) -
                  base + 1,
              0);
  // Each element's storage position (relative to base): a view of the positions 0 … extent - 1
  // at the element's geometry, so the positions follow the symbols as the view does.
  const Tensor positions = arange(extent, TensorOptions(kLong).device(grad.device()));
  Tensor storage = zeros_as(SymIntArrayRef({extent}), grad);
  if (has_elements(out_sizes)) {
    Tensor out_pos = positions.as_strided(out_sizes, out_strides, out_offset - base).reshape({-1});
    storage = index_put(storage, {out_pos}, grad.reshape({-1}), /*accumulate=*/true);
  }
  Tensor in_pos = positions.as_strided(in_sizes, in_strides, in_offset - base);
  if (maybe_overlapping(in_sizes, in_strides) && has_elements(in_sizes)) {
    Tensor flat = in_pos.reshape({-1});
    Tensor counts = index_put(zeros_as(SymIntArrayRef({extent}), grad), {flat}, ones_like(flat, grad.dtype()),
                              /*accumulate=*/true);
    storage = storage / counts;  // positions the input does not reach (0 / 0) are never read
  }
  return index(storage, {in_pos});
}

Tensor as_strided_backward(const Tensor& grad, IntArrayRef in_sizes, IntArrayRef in_strides, int64_t in_offset,
                           IntArrayRef out_sizes, IntArrayRef out_strides, int64_t out_offset) {
  auto sym = [](IntArrayRef v) { return std::vector<SymInt>(v.begin(), v.end()); };
  return as_strided_backward(grad, sym(in_sizes), sym(in_strides), SymInt(in_offset), sym(out_sizes),
                             sym(out_strides), SymInt(out_offset));
}

namespace {

using namespace derivative_rows;

Tensor zeros_of(const Tensor& g) { return zeros_like(g); }

/// pad list for constant_pad_nd that puts `before`/`after` zeros around dimension `dim`
/// (SymInts: a gradient padded back to a forward value's symbolic size).
std::vector<SymInt> pad_dim(int64_t ndim, int64_t dim, const SymInt& before, const SymInt& after) {
  std::vector<SymInt> pad(static_cast<size_t>(2 * (ndim - dim)), 0);
  pad[pad.size() - 2] = before;
  pad[pad.size() - 1] = after;
  return pad;
}

/// conj where derivatives.yaml has it (PyTorch's conjugate Wirtinger convention, Note
/// [complex dtypes]); a real tensor as it is, without a dispatch.
Tensor cj(const Tensor& t) { return is_complex(t.dtype()) ? conj(t) : t; }

void unary_rows(Registry& r) {
  row(r, "aten::abs", "AbsBackward0", [](const Ctx& c) -> Grads {
    const Tensor& self = c.input(0);
    if (!is_complex(self.dtype())) return {c.grad() * sign(self)};
    // grad * sgn(z), sgn(z) = z / |z| (0 at 0), with real ops on z's (real, imaginary)
    // pairs (Note [complex dtypes]).
    const Tensor modulus = abs(self);
    const Tensor scale = where(eq(modulus, Scalar(0)), Scalar(0), c.grad() / modulus);
    return {view_as_complex((view_as_real(self) * scale.unsqueeze(-1)).contiguous())};
  });
  row(r, "aten::neg", "NegBackward0", [](const Ctx& c) -> Grads { return {neg(c.grad())}; });
  // conj (cj) where derivatives.yaml has it: PyTorch's conjugate Wirtinger convention for
  // complex inputs (Note [complex dtypes]); the identity on real tensors.
  row(r, "aten::exp", "ExpBackward0", [](const Ctx& c) -> Grads { return {c.grad() * cj(c.output(0))}; });
  row(r, "aten::expm1", "Expm1Backward0", [](const Ctx& c) -> Grads { return {c.grad() * (c.output(0) + 1)}; });
  row(r, "aten::log", "LogBackward0", [](const Ctx& c) -> Grads { return {c.grad() / cj(c.input(0))}; });
  row(r, "aten::log1p", "Log1PBackward0", [](const Ctx& c) -> Grads { return {c.grad() / (c.input(0) + 1)}; });
  row(r, "aten::log2", "Log2Backward0", [](const Ctx& c) -> Grads { return {c.grad() / (c.input(0) * M_LN2)}; });
  row(r, "aten::sqrt", "SqrtBackward0",
      [](const Ctx& c) -> Grads { return {c.grad() / (cj(c.output(0)) * 2)}; });
  row(r, "aten::rsqrt", "RsqrtBackward0",
      [](const Ctx& c) -> Grads { return {c.grad() * pow(c.output(0), 3) * -0.5}; });
  row(r, "aten::reciprocal", "ReciprocalBackward0",
      [](const Ctx& c) -> Grads {
        // Complex: derivatives.yaml's -grad * (result * result).conj(), in its order (the
        // NaNs and infinities of PyTorch's gradient depend on it).
        if (is_complex(c.grad().dtype())) return {neg(c.grad()) * cj(c.output(0) * c.output(0))};
        return {neg(c.grad()) * c.output(0) * c.output(0)};
      });
  row(r, "aten::sin", "SinBackward0", [](const Ctx& c) -> Grads { return {c.grad() * cos(c.input(0))}; });
  row(r, "aten::cos", "CosBackward0", [](const Ctx& c) -> Grads { return {c.grad() * neg(sin(c.input(0)))}; });
  row(r, "aten::tanh", "TanhBackward0",
      [](const Ctx& c) -> Grads { return {c.grad() * (1 - c.output(0) * c.output(0))}; });
  row(r, "aten::sigmoid", "SigmoidBackward0",
      [](const Ctx& c) -> Grads { return {c.grad() * c.output(0) * (1 - c.output(0))}; });
  row(r, "aten::relu", "ReluBackward0",
      [](const Ctx& c) -> Grads { return {masked_fill(c.grad(), c.output(0) <= 0, 0)}; });
  row(r, "aten::silu", "SiluBackward0", [](const Ctx& c) -> Grads {
    const Tensor& x = c.input(0);
    Tensor s = sigmoid(x);
    return {c.grad() * s * (1 + x * (1 - s))};
  });
  row(r, "aten::erf", "ErfBackward0", [](const Ctx& c) -> Grads {
    const Tensor& x = c.input(0);
    return {c.grad() * exp(neg(x * x)) * M_2_SQRTPI};
  });
  // Piecewise-constant functions: zero almost everywhere.
  row(r, "aten::sign", "SignBackward0", [](const Ctx& c) -> Grads { return {zeros_of(c.grad())}; });
  row(r, "aten::floor", "FloorBackward0", [](const Ctx& c) -> Grads { return {zeros_of(c.grad())}; });
  row(r, "aten::ceil", "CeilBackward0", [](const Ctx& c) -> Grads { return {zeros_of(c.grad())}; });
  row(r, "aten::round", "RoundBackward0", [](const Ctx& c) -> Grads { return {zeros_of(c.grad())}; });
  row(r, "aten::trunc", "TruncBackward0", [](const Ctx& c) -> Grads { return {zeros_of(c.grad())}; });
  row(r, "aten::gelu", "GeluBackward0", [](const Ctx& c) -> Grads {
    const Tensor& x = c.input(0);
    if (c.arg(1).to_string_ref() == "tanh") {
      const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
      Tensor x_sq = x * x;
      Tensor t = tanh((x + x_sq * x * kappa) * beta);
      Tensor left_derivative = (t + 1) * 0.5;
      Tensor right_derivative = x * 0.5 * (1 - t * t) * ((x_sq * (3 * kappa) + 1) * beta);
      return {c.grad() * (left_derivative + right_derivative)};
    }
    Tensor cdf = (erf(x * M_SQRT1_2) + 1) * 0.5;
    Tensor pdf = exp(x * x * -0.5) * (M_2_SQRTPI * M_SQRT1_2 * 0.5);
    return {c.grad() * (cdf + x * pdf)};
  });
}

/// Core ATen ops: the trigonometric, hyperbolic and log10 rows, fill and copy (PyTorch's
/// derivatives.yaml).
void core_aten_rows(Registry& r) {
  row(r, "aten::acos", "AcosBackward0",
      [](const Ctx& c) -> Grads { return {neg(c.grad()) * rsqrt(1 - c.input(0) * c.input(0))}; });
  row(r, "aten::asin", "AsinBackward0",
      [](const Ctx& c) -> Grads { return {c.grad() * rsqrt(1 - c.input(0) * c.input(0))}; });
  row(r, "aten::atan", "AtanBackward0",
      [](const Ctx& c) -> Grads { return {c.grad() / (c.input(0) * c.input(0) + 1)}; });
  row(r, "aten::acosh", "AcoshBackward0",
      [](const Ctx& c) -> Grads { return {c.grad() * rsqrt(c.input(0) * c.input(0) - 1)}; });
  row(r, "aten::asinh", "AsinhBackward0",
      [](const Ctx& c) -> Grads { return {c.grad() * rsqrt(c.input(0) * c.input(0) + 1)}; });
  row(r, "aten::atanh", "AtanhBackward0",
      [](const Ctx& c) -> Grads { return {c.grad() / (1 - c.input(0) * c.input(0))}; });
  row(r, "aten::sinh", "SinhBackward0", [](const Ctx& c) -> Grads { return {c.grad() * cosh(c.input(0))}; });
  row(r, "aten::cosh", "CoshBackward0", [](const Ctx& c) -> Grads { return {c.grad() * sinh(c.input(0))}; });
  row(r, "aten::tan", "TanBackward0",
      [](const Ctx& c) -> Grads { return {c.grad() * (c.output(0) * c.output(0) + 1)}; });
  row(r, "aten::log10", "Log10Backward0", [](const Ctx& c) -> Grads { return {c.grad() / (c.input(0) * M_LN10)}; });
  // The functional fill and copy: self's values are overwritten, so its gradient is zero.
  row(r, "aten::fill.Scalar", "FillBackward0", [](const Ctx& c) -> Grads { return {zeros_of(c.grad())}; });
  row(r, "aten::copy", "CopyBackwards", [](const Ctx& c) -> Grads { return {zeros_of(c.grad()), c.grad()}; });
}

Tensor scaled(const Tensor& g, const Scalar& alpha) { return alpha.to_double() == 1.0 ? g : g * alpha; }

void binary_rows(Registry& r) {
  row(r, "aten::add.Tensor", "AddBackward0",
      [](const Ctx& c) -> Grads { return {c.grad(), scaled(c.grad(), c.arg(2).to_scalar())}; });
  row(r, "aten::add.Scalar", "AddBackward1", [](const Ctx& c) -> Grads { return {c.grad()}; });
  row(r, "aten::sub.Tensor", "SubBackward0",
      [](const Ctx& c) -> Grads { return {c.grad(), neg(scaled(c.grad(), c.arg(2).to_scalar()))}; });
  row(r, "aten::sub.Scalar", "SubBackward1", [](const Ctx& c) -> Grads { return {c.grad()}; });
  row(r, "aten::mul.Tensor", "MulBackward0", [](const Ctx& c) -> Grads {
    return {c.needs_grad(0) ? c.grad() * cj(c.input(1)) : Tensor(),
            c.needs_grad(1) ? c.grad() * cj(c.input(0)) : Tensor()};
  });
  row(r, "aten::mul.Scalar", "MulBackward1", [](const Ctx& c) -> Grads { return {c.grad() * c.arg(1).to_scalar()}; });
  row(r, "aten::div.Tensor", "DivBackward0", [](const Ctx& c) -> Grads {
    const Tensor& b = c.input(1);
    Tensor other;
    if (c.needs_grad(1)) {
      // Complex: derivatives.yaml's -grad * ((self / other) / other).conj(), in its order
      // (the NaNs and infinities of PyTorch's gradient depend on it).
      other = is_complex(c.grad().dtype()) ? neg(c.grad()) * cj(c.input(0) / b / b)
                                           : neg(c.grad()) * c.input(0) / (b * b);
    }
    return {c.needs_grad(0) ? c.grad() / cj(b) : Tensor(), other};
  });
  row(r, "aten::div.Scalar", "DivBackward1", [](const Ctx& c) -> Grads { return {c.grad() / c.arg(1).to_scalar()}; });
  row(r, "aten::pow.Tensor_Scalar", "PowBackward0", [](const Ctx& c) -> Grads {
    const Scalar e = c.arg(1).to_scalar();
    if (e.to_double() == 0.0) return {zeros_of(c.grad())};
    const Scalar e1 = e.is_integral() ? Scalar(e.to_long() - 1) : Scalar(e.to_double() - 1.0);
    return {c.grad() * pow(c.input(0), e1) * e};
  });
  row(r, "aten::pow.Tensor_Tensor", "PowBackward1", [](const Ctx& c) -> Grads {
    const Tensor& x = c.input(0);
    const Tensor& e = c.input(1);
    Grads g(2);
    if (c.needs_grad(0)) g[0] = where(e == 0, zeros_of(c.grad()), c.grad() * e * pow(x, e - 1));
    if (c.needs_grad(1)) {
      // d/de x^e = x^e log x, taken as 0 where x == 0 and e >= 0 (the limit).
      Tensor at_zero = logical_and(x == 0, e >= 0);
      g[1] = c.grad() * masked_fill(c.output(0) * log(x), at_zero, 0);
    }
    return g;
  });
  // Ties split the gradient evenly, as in PyTorch.
  auto extremum = [](bool max) {
    return [max](const Ctx& c) -> Grads {
      const Tensor& a = c.input(0);
      const Tensor& b = c.input(1);
      Tensor g = where(a == b, c.grad() / 2, c.grad());
      return {masked_fill(g, max ? a < b : a > b, 0), masked_fill(g, max ? a > b : a < b, 0)};
    };
  };
  row(r, "aten::maximum", "MaximumBackward0", extremum(true));
  row(r, "aten::minimum", "MinimumBackward0", extremum(false));
  // Rounding division is piecewise constant: zero almost everywhere (PyTorch's DivBackward2).
  auto zero_pair = [](const Ctx& c) -> Grads { return {zeros_of(c.grad()), zeros_of(c.grad())}; };
  row(r, "aten::_div_trunc", "DivBackward2", zero_pair);
  row(r, "aten::_div_floor", "DivBackward2", zero_pair);
  row(r, "aten::fmod.Tensor", "FmodBackward1", [](const Ctx& c) -> Grads {
    return {c.grad(), c.needs_grad(1) ? neg(c.grad()) * div(c.input(0), c.input(1), "trunc") : Tensor()};
  });
  row(r, "aten::fmod.Scalar", "FmodBackward0", [](const Ctx& c) -> Grads { return {c.grad()}; });
  row(r, "aten::remainder.Tensor", "RemainderBackward1", [](const Ctx& c) -> Grads {
    return {c.grad(), c.needs_grad(1) ? neg(c.grad()) * div(c.input(0), c.input(1), "floor") : Tensor()};
  });
  row(r, "aten::remainder.Scalar", "RemainderBackward0", [](const Ctx& c) -> Grads { return {c.grad()}; });
  row(r, "aten::atan2", "Atan2Backward0", [](const Ctx& c) -> Grads {
    const Tensor& a = c.input(0);
    const Tensor& b = c.input(1);
    Tensor recip = reciprocal(a * a + b * b);
    return {c.grad() * b * recip, c.grad() * neg(a) * recip};
  });
}

void select_rows(Registry& r) {
  row(r, "aten::where.self", "WhereBackward0", [](const Ctx& c) -> Grads {
    const Tensor& cond = c.input(0);
    return {Tensor(), where(cond, c.grad(), Scalar(0)), where(cond, Scalar(0), c.grad())};
  });
  row(r, "aten::where.ScalarSelf", "WhereBackward0",
      [](const Ctx& c) -> Grads { return {Tensor(), where(c.input(0), Scalar(0), c.grad())}; });
  row(r, "aten::where.ScalarOther", "WhereBackward0",
      [](const Ctx& c) -> Grads { return {Tensor(), where(c.input(0), c.grad(), Scalar(0))}; });
  row(r, "aten::clamp", "ClampBackward1", [](const Ctx& c) -> Grads {
    const Tensor& x = c.input(0);
    const std::optional<Scalar> lo = c.arg(1).to_optional_scalar(), hi = c.arg(2).to_optional_scalar();
    Tensor keep;
    if (lo) keep = x >= *lo;
    if (hi) keep = keep.defined() ? logical_and(keep, x <= *hi) : x <= *hi;
    return {where(keep, c.grad(), Scalar(0))};
  });
  row(r, "aten::clamp.Tensor", "ClampBackward0", [](const Ctx& c) -> Grads {
    const Tensor& x = c.input(0);
    const Tensor& g = c.grad();
    const bool has_min = !c.arg(1).is_none(), has_max = !c.arg(2).is_none();
    if (has_min && has_max) {
      const Tensor& lo = c.input(1);
      const Tensor& hi = c.input(2);
      Tensor above_min = x >= lo, below_max = x <= hi, max_above_min = hi > lo;
      return {where(logical_and(above_min, below_max), g, Scalar(0)),
              where(logical_and(logical_not(above_min), max_above_min), g, Scalar(0)),
              where(logical_or(logical_not(below_max), logical_not(max_above_min)), g, Scalar(0))};
    }
    if (has_min) {
      const Tensor& lo = c.input(1);
      return {where(x >= lo, g, Scalar(0)), where(x < lo, g, Scalar(0)), Tensor()};
    }
    const Tensor& hi = c.input(2);
    return {where(x <= hi, g, Scalar(0)), Tensor(), where(x > hi, g, Scalar(0))};
  });
  row(r, "aten::masked_fill.Scalar", "MaskedFillBackward0",
      [](const Ctx& c) -> Grads { return {masked_fill(c.grad(), c.input(1), 0), Tensor()}; });
  row(r, "aten::masked_fill.Tensor", "MaskedFillBackward1", [](const Ctx& c) -> Grads {
    const Tensor& mask = c.input(1);
    return {masked_fill(c.grad(), mask, 0), Tensor(), sum(where(mask, c.grad(), Scalar(0)))};
  });
}

void copy_rows(Registry& r) {
  // The overwritten value of self gets zero; src gets the gradient (summed over the
  // broadcast, converted to src's dtype by autograd).
  row(r, "aten::copy_", "CopyBackwards", [](const Ctx& c) -> Grads { return {zeros_of(c.grad()), c.grad()}; });
  row(r, "aten::fill_.Scalar", "FillBackward2", [](const Ctx& c) -> Grads { return {zeros_of(c.grad())}; });
  row(r, "aten::fill_.Tensor", "FillBackward3",
      [](const Ctx& c) -> Grads { return {zeros_of(c.grad()), sum(c.grad())}; });
  // A random draw does not depend smoothly on its probabilities.
  row(r, "aten::bernoulli", "BernoulliBackward0", [](const Ctx& c) -> Grads { return {zeros_of(c.grad())}; });
  // Outputs PyTorch never differentiates: fresh values that only borrow the input's shape.
  for (const char* op : {"aten::empty_like", "aten::full_like", "aten::rand_like", "aten::randn_like", "aten::bernoulli.p"})
    no_grad_row(r, op);
  row(r, "aten::_to_copy", "ToCopyBackward0", [](const Ctx& c) -> Grads { return {c.grad()}; });
  row(r, "aten::clone", "CloneBackward0", [](const Ctx& c) -> Grads { return {c.grad()}; });
}

void view_rows(Registry& r) {
  // Views that only regroup elements: the gradient takes the input's shape back.
  auto reshape_back = [](const Ctx& c) -> Grads { return {c.grad().reshape(SymIntArrayRef(c.arg_sym_sizes(0)))}; };
  row(r, "aten::view", "ViewBackward0", reshape_back);
  row(r, "aten::_reshape_alias", "ReshapeAliasBackward0", reshape_back);
  row(r, "aten::squeeze", "SqueezeBackward0", reshape_back);
  row(r, "aten::squeeze.dim", "SqueezeBackward1", reshape_back);
  row(r, "aten::squeeze.dims", "SqueezeBackward2", reshape_back);
  row(r, "aten::unsqueeze", "UnsqueezeBackward0", reshape_back);
  row(r, "aten::alias", "AliasBackward0", [](const Ctx& c) -> Grads { return {c.grad()}; });
  no_grad_row(r, "aten::detach");  // the point of detach: its output never carries a gradient
  row(r, "aten::expand", "ExpandBackward0",
      [](const Ctx& c) -> Grads { return {sum_to(c.grad(), SymIntArrayRef(c.arg_sym_sizes(0)))}; });
  row(r, "aten::permute", "PermuteBackward0", [](const Ctx& c) -> Grads {
    const auto& dims = c.arg(1).to_int_list();
    const int64_t n = static_cast<int64_t>(dims.size());
    std::vector<int64_t> inverse(dims.size());
    for (int64_t i = 0; i < n; ++i) inverse[static_cast<size_t>(core::wrap_dim(dims[i], n))] = i;
    return {c.grad().permute(inverse)};
  });
  row(r, "aten::transpose.int", "TransposeBackward0",
      [](const Ctx& c) -> Grads { return {c.grad().transpose(c.arg(1).to_int(), c.arg(2).to_int())}; });
  // Over SymInt sizes: a step-1 slice pads the gradient back to the input's symbolic size
  // (clamping the start compares it with that size: decided by the ranges, or a guard).
  row(r, "aten::slice.Tensor", "SliceBackward0", [](const Ctx& c) -> Grads {
    const std::vector<SymInt> sym = c.arg_sym_sizes(0);
    const int64_t ndim = static_cast<int64_t>(sym.size());
    const int64_t dim = core::wrap_dim(c.arg(1).to_int(), ndim);
    const int64_t step = c.arg(4).to_int();
    const int64_t start_arg = c.arg(2).to_optional_int().value_or(0);
    const Tensor& g = c.grad();
    if (step == 1) {
      const SymInt size = sym[static_cast<size_t>(dim)];
      SymInt start = start_arg < 0 ? size + start_arg : SymInt(start_arg);
      if (start < 0) start = 0;
      if (start > size) start = size;
      const SymInt n = sym_size(g, dim);
      return {constant_pad_nd(g, SymIntArrayRef(pad_dim(ndim, dim, start, size - start - n)))};
    }
    // Strided slice: grad written over the same slice of zeros of the input's symbolic
    // sizes (slice_scatter normalizes start and end as slice did, over SymInt).
    return {slice_scatter(zeros_as(SymIntArrayRef(sym), g), g, dim, c.arg(2).to_optional_sym_int(),
                          c.arg(3).to_optional_sym_int(), step)};
  });
  row(r, "aten::select.int", "SelectBackward0", [](const Ctx& c) -> Grads {
    const std::vector<SymInt> sizes = c.arg_sym_sizes(0);
    const int64_t ndim = static_cast<int64_t>(sizes.size());
    const int64_t dim = core::wrap_dim(c.arg(1).to_int(), ndim);
    const int64_t index_arg = c.arg(2).to_int();
    const SymInt size = sizes[static_cast<size_t>(dim)];
    const SymInt index = index_arg < 0 ? size + index_arg : SymInt(index_arg);
    return {constant_pad_nd(c.grad().unsqueeze(dim), SymIntArrayRef(pad_dim(ndim, dim, index, size - index - 1)))};
  });
  row(r, "aten::diagonal", "DiagonalBackward0", [](const Ctx& c) -> Grads {
    // The gradient put on the diagonal of zeros: the last dim of grad spread over
    // (dim1, dim2) by a mask of the diagonal, then those two moved back into place.
    // Over SymInt sizes: the mask and the pads follow the input's symbolic sizes.
    const std::vector<SymInt> sizes = c.arg_sym_sizes(0);
    const int64_t n = static_cast<int64_t>(sizes.size()), offset = c.arg(1).to_int();
    const int64_t d1 = core::wrap_dim(c.arg(2).to_int(), n), d2 = core::wrap_dim(c.arg(3).to_int(), n);
    const Tensor& g = c.grad();
    const SymInt rows = sizes[static_cast<size_t>(d1)], cols = sizes[static_cast<size_t>(d2)];
    const SymInt len = sym_size(g, -1);
    const TensorOptions idx = TensorOptions(kLong).device(g.device());
    const Tensor on_diagonal = eq(arange(cols, idx).unsqueeze(0) - arange(rows, idx).unsqueeze(1), Scalar(offset));
    const Tensor spread = offset >= 0 ? constant_pad_nd(g, {SymInt(0), rows - len}).unsqueeze(-1)
                                      : constant_pad_nd(g, {SymInt(0), cols - len}).unsqueeze(-2);
    std::vector<int64_t> perm;
    for (int64_t d = 0, rest = 0; d < n; ++d) perm.push_back(d == d1 ? n - 2 : d == d2 ? n - 1 : rest++);
    return {where(on_diagonal, spread, Scalar(0)).permute(perm)};
  });
  // Over SymInt as PyTorch's (the input's geometry and the view's arguments): a view of a
  // symbolic extent scatters its gradient into zeros of the storage's symbolic extent.
  row(r, "aten::as_strided", "AsStridedBackward0", [](const Ctx& c) -> Grads {
    const SymInt in_offset = c.arg_sym_storage_offset(0);
    const std::vector<SymInt> size = c.arg(1).to_sym_int_list(), stride = c.arg(2).to_sym_int_list();
    const SymInt offset = c.arg(3).is_none() ? in_offset : c.arg(3).to_sym_int();
    return {as_strided_backward(c.grad(), c.arg_sym_sizes(0), c.arg_sym_strides(0), in_offset, size, stride, offset)};
  });
  row(r, "aten::split_with_sizes", "SplitWithSizesBackward0", [](const Ctx& c) -> Grads {
    std::vector<Tensor> parts;
    for (size_t i = 0; i < c.num_outputs(); ++i) parts.push_back(c.grad_or_zeros(i));
    return {cat(parts, c.arg(2).to_int())};
  });
  row(r, "aten::unbind.int", "UnbindBackward0", [](const Ctx& c) -> Grads {
    std::vector<Tensor> parts;
    for (size_t i = 0; i < c.num_outputs(); ++i) parts.push_back(c.grad_or_zeros(i));
    return {stack(parts, c.arg(1).to_int())};
  });
}


void shape_rows(Registry& r) {
  row(r, "aten::cat", "CatBackward0", [](const Ctx& c) -> Grads {
    const std::vector<Tensor> ts = c.arg(0).to_tensor_list();
    const Tensor& g = c.grad();
    const int64_t dim = core::wrap_dim(c.arg(1).to_int(), g.dim());
    // Over SymInt sizes: each input's slice of the gradient starts at the sum of the sizes
    // before it (an expression over the symbols when they are symbolic).
    Grads out;
    SymInt offset = 0;
    for (const Tensor& t : ts) {
      // Legacy 1-D empty tensors are skipped by cat (and get no gradient).
      if (t.dim() == 1 && sym_size(t, 0) == 0 && g.dim() != 1) {
        out.push_back(Tensor());
        continue;
      }
      const SymInt n = sym_size(t, dim);
      out.push_back(g.narrow(dim, offset, n));
      offset = offset + n;
    }
    return out;
  });
  row(r, "aten::flip", "FlipBackward0", [](const Ctx& c) -> Grads { return {flip(c.grad(), c.arg(1).to_int_list())}; });
  // Over SymInt sizes: each repeated dim splits into (count, size) and the counts are summed.
  row(r, "aten::repeat", "RepeatBackward0", [](const Ctx& c) -> Grads {
    const std::vector<SymInt> sizes = c.arg_sym_sizes(0);
    const std::vector<int64_t> repeats = c.arg(1).to_int_list();
    const int64_t lead = static_cast<int64_t>(repeats.size() - sizes.size());
    std::vector<SymInt> split;
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < static_cast<int64_t>(repeats.size()); ++i) {
      const SymInt s = i < lead ? SymInt(1) : sizes[static_cast<size_t>(i - lead)];
      dims.push_back(static_cast<int64_t>(split.size()));
      split.push_back(repeats[static_cast<size_t>(i)]);
      split.push_back(s);
    }
    const Tensor& g = c.grad();
    if (const SymInt n = sym_numel(g); !n.is_symbolic() && n.hint() == 0) return {zeros_as(SymIntArrayRef(sizes), g)};
    return {sum(g.reshape(SymIntArrayRef(split)), dims).reshape(SymIntArrayRef(sizes))};
  });
  row(r, "aten::tril", "TrilBackward0", [](const Ctx& c) -> Grads { return {tril(c.grad(), c.arg(1).to_int())}; });
  row(r, "aten::triu", "TriuBackward0", [](const Ctx& c) -> Grads { return {triu(c.grad(), c.arg(1).to_int())}; });
  row(r, "aten::constant_pad_nd", "ConstantPadNdBackward0", [](const Ctx& c) -> Grads {
    std::vector<int64_t> pad = c.arg(1).to_int_list();
    for (int64_t& p : pad) p = -p;
    return {constant_pad_nd(c.grad(), pad)};
  });
}

/// index_put's index list that puts `index` (1-D) at dimension `dim`.
std::vector<std::optional<Tensor>> index_at(int64_t dim, const Tensor& index) {
  std::vector<std::optional<Tensor>> indices(static_cast<size_t>(dim), std::nullopt);
  indices.push_back(index);
  return indices;
}

/// `t` padded with zeros at the end of each dim up to `sizes` (a scatter's src elements
/// beyond the index's extent are not read: their gradient is zero). Over SymInt: a dim
/// whose two sizes are the same expression gets no padding and reads nothing; a symbolic
/// difference pads by that expression.
Tensor pad_to(const Tensor& t, const std::vector<SymInt>& sizes) {
  const std::vector<SymInt> have = sym_sizes(t);
  std::vector<SymInt> pad;
  bool any = false;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    const SymInt extra = sizes[static_cast<size_t>(d)] - have[static_cast<size_t>(d)];
    any = any || extra.is_symbolic() || extra.hint() != 0;
    pad.push_back(0);
    pad.push_back(extra);
  }
  return any ? constant_pad_nd(t, SymIntArrayRef(pad)) : t;
}

void indexing_rows(Registry& r) {
  // Over SymInt sizes: the gradient is accumulated into zeros of the input's symbolic sizes.
  row(r, "aten::index_select", "IndexSelectBackward0", [](const Ctx& c) -> Grads {
    const std::vector<SymInt> sizes = c.arg_sym_sizes(0);
    const Tensor& g = c.grad();
    if (sizes.empty()) return {g.reshape({}), Tensor()};
    const int64_t dim = core::wrap_dim(c.arg(1).to_int(), static_cast<int64_t>(sizes.size()));
    Tensor index = c.input(2).reshape({sym_numel(c.input(2))});
    return {index_put(zeros_as(SymIntArrayRef(sizes), g), index_at(dim, index), g, /*accumulate=*/true), Tensor()};
  });
  row(r, "aten::gather", "GatherBackward0", [](const Ctx& c) -> Grads {
    const Tensor& g = c.grad();
    return {scatter_add(zeros_as(SymIntArrayRef(c.arg_sym_sizes(0)), g), c.arg(1).to_int(), c.input(2), g), Tensor()};
  });
  row(r, "aten::scatter_add", "ScatterAddBackward0", [](const Ctx& c) -> Grads {
    const Tensor& g = c.grad();
    if (!c.needs_grad(2)) return {g, Tensor(), Tensor()};
    // src elements beyond index's extent are not read: zeros (PyTorch's backward raises on a shape mismatch here).
    return {g, Tensor(), pad_to(gather(g, c.arg(1).to_int(), c.input(2)), c.arg_sym_sizes(3))};
  });
  row(r, "aten::scatter.src", "ScatterBackward0", [](const Ctx& c) -> Grads {
    const int64_t dim = c.arg(1).to_int();
    const Tensor& index = c.input(2);
    Grads out{c.needs_grad(0) ? scatter(c.grad(), dim, index, Scalar(0)) : Tensor(), Tensor(), Tensor()};
    if (c.needs_grad(2)) out[2] = pad_to(gather(c.grad(), dim, index), c.arg_sym_sizes(3));
    return out;
  });
  row(r, "aten::scatter.value", "ScatterBackward1", [](const Ctx& c) -> Grads {
    return {scatter(c.grad(), c.arg(1).to_int(), c.input(2), Scalar(0)), Tensor()};
  });
  row(r, "aten::scatter_reduce.two", "ScatterReduceBackward0", [](const Ctx& c) -> Grads {
    // PyTorch's scatter_reduce_backward, reduction by reduction.
    const Tensor& g = c.grad();
    const Tensor &self = c.input(0), &index = c.input(2), &src = c.input(3), &result = c.output(0);
    const int64_t dim = c.arg(1).to_int();
    const std::string& reduce = c.arg(4).to_string_ref();
    const bool include_self = c.arg(5).to_bool();
    Tensor grad_self, grad_src;
    if (reduce == "sum") {
      grad_self = g;
      grad_src = gather(g, dim, index);
    } else if (reduce == "mean") {
      Tensor count = scatter_add(include_self ? ones_like(g) : zeros_like(g), dim, index, ones_like(src));
      count = masked_fill(count, eq(count, Scalar(0)), Scalar(1));
      grad_self = g / count;
      grad_src = gather(g, dim, index) / gather(count, dim, index);
    } else if (reduce == "prod") {
      // The products without each zero factor, computed explicitly where a zero sits.
      const Tensor masked_self = masked_fill(self, eq(self, Scalar(0)), Scalar(1));
      grad_self = g * scatter_reduce(masked_self, dim, index, src, reduce, include_self) / masked_self;
      const Tensor src_zero = eq(src, Scalar(0));
      const Tensor zeros_at = gather(scatter_add(zeros_like(self), dim, index, src_zero.to(self.dtype())), dim, index);
      const Tensor single_zero = logical_and(src_zero, eq(zeros_at, Scalar(1)));
      const Tensor without_zero = scatter_reduce(self, dim, index, masked_fill(src, single_zero, Scalar(1)), reduce,
                                                 include_self);
      grad_src = where(single_zero, gather(g * without_zero, dim, index),
                       gather(g * result, dim, index) / masked_fill(src, src_zero, Scalar(1)));
    } else {  // amax, amin: the gradient shared evenly among the values equal to the result
      // (masks multiplied in, as PyTorch: a NaN share spreads as it does there)
      const Tensor value = gather(result, dim, index);
      const Tensor self_is = eq(self, result), src_is = eq(src, value);
      const Tensor shares = scatter_add(self_is.to(self.dtype()), dim, index, src_is.to(self.dtype()));
      const Tensor share = g / shares;
      grad_self = self_is.to(self.dtype()) * share;
      grad_src = src_is.to(self.dtype()) * gather(share, dim, index);
    }
    if (!include_self) grad_self = scatter(grad_self, dim, index, Scalar(0));
    return {grad_self, Tensor(), pad_to(grad_src, c.arg_sym_sizes(3))};
  });
  row(r, "aten::masked_scatter", "MaskedScatterBackward0", [](const Ctx& c) -> Grads {
    // source's gradient: grad's masked elements, in order, at their running count (a
    // cumulative sum of the mask, so no size depends on the mask's values); past the
    // mask's ones, zeros. Slot 0 collects the unmasked positions and is dropped.
    const Tensor& g = c.grad();
    // Over SymInt sizes: the mask's expansion, the slots and source's gradient follow the
    // symbolic sizes of grad and source.
    const Tensor mask = c.input(1).to(kBool).expand(SymIntArrayRef(sym_sizes(g)));
    const std::vector<SymInt> source_sizes = c.arg_sym_sizes(2);
    SymInt n(1);
    for (const SymInt& s : source_sizes) n = n * s;
    Grads out{where(mask, Scalar(0), g), Tensor(), Tensor()};
    if (c.needs_grad(2)) {
      const Tensor flat_mask = mask.reshape({-1});
      const Tensor slot = where(flat_mask, cumsum(flat_mask, 0, kLong), Scalar(0));
      const Tensor picked = index_put(zeros_as(SymIntArrayRef({n + 1}), g), {slot},
                                      where(flat_mask, g.reshape({-1}), Scalar(0)), /*accumulate=*/true);
      out[2] = slice(picked, 0, 1).reshape(SymIntArrayRef(source_sizes));
    }
    return out;
  });
  row(r, "aten::index_put", "IndexPutBackward0", [](const Ctx& c) -> Grads {
    const auto indices = c.arg(1).to_optional_tensor_list();
    const Tensor& g = c.grad();
    Grads out;
    if (!c.needs_grad(0)) out.push_back(Tensor());
    else if (c.arg(3).to_bool()) out.push_back(g);
    else out.push_back(index_put(g, indices, zeros_as({}, g)));  // overwritten elements get nothing
    out.resize(1 + indices.size());
    const size_t values_slot = out.size();
    out.push_back(c.needs_grad(values_slot) ? index(g, indices) : Tensor());  // summed to values' shape
    return out;
  });
  row(r, "aten::index.Tensor", "IndexBackward0", [](const Ctx& c) -> Grads {
    const Tensor& g = c.grad();
    Grads out{index_put(zeros_as(SymIntArrayRef(c.arg_sym_sizes(0)), g), c.arg(1).to_optional_tensor_list(), g,
                        /*accumulate=*/true)};
    out.resize(1 + c.arg(1).to_optional_tensor_list().size());
    return out;
  });
}

}  // namespace

/// The complex views, the conjugate and the transforms (PyTorch's derivatives.yaml and its
/// fft_r2c_backward / fft_c2r_backward). Each transform is linear: its gradient is the
/// adjoint transform, written with the transforms and real ops only (no complex
/// arithmetic, Note [complex dtypes]).
void fft_rows(Registry& r) {
  row(r, "aten::_conj_physical", "ConjPhysicalBackward0",
      [](const Ctx& c) -> Grads { return {conj_physical(c.grad())}; });
  row(r, "aten::view_as_real", "ViewAsRealBackward0",
      [](const Ctx& c) -> Grads { return {view_as_complex(c.grad().contiguous())}; });
  row(r, "aten::view_as_complex", "ViewAsComplexBackward0",
      [](const Ctx& c) -> Grads { return {view_as_real(c.grad().contiguous())}; });
  row(r, "aten::_fft_c2c", "FftC2CBackward0", [](const Ctx& c) -> Grads {
    return {_fft_c2c(c.grad(), c.arg(1).to_int_list(), c.arg(2).to_int(), !c.arg(3).to_bool())};
  });
  // fft_r2c_backward: the onesided gradient padded with zeros to the full length along
  // dim.back(), an inverse c2c, its real part. Over SymInt as PyTorch's: the padding is
  // the difference of the input's and the gradient's symbolic lengths.
  row(r, "aten::_fft_r2c", "FftR2CBackward0", [](const Ctx& c) -> Grads {
    const std::vector<int64_t> dims = c.arg(1).to_int_list();
    const std::vector<SymInt> in_sizes = c.arg_sym_sizes(0);
    const int64_t nd = static_cast<int64_t>(in_sizes.size());
    const int64_t last = core::wrap_dim(dims.back(), nd);
    Tensor full = c.grad();
    const SymInt missing = in_sizes[static_cast<size_t>(last)] - sym_size(full, last);
    if (c.arg(3).to_bool() && missing > 0) {
      // Pad the real view (one more dim, of 2, last): pairs run from the last dim back.
      std::vector<SymInt> pad(static_cast<size_t>(2 * (nd - last + 1)), 0);
      pad.back() = missing;
      full = view_as_complex(constant_pad_nd(view_as_real(full), SymIntArrayRef(pad)));
    }
    return {real(_fft_c2c(full, dims, c.arg(2).to_int(), /*forward=*/false))};
  });
  // fft_c2r_backward: a onesided r2c of the gradient, the entries whose mirror images
  // the onesided input left out (1 … n - (n/2 + 1) along dim.back()) doubled. The weight
  // is 1, then `doubled` twos, then ones, a pad of twos over SymInt lengths.
  row(r, "aten::_fft_c2r", "FftC2RBackward0", [](const Ctx& c) -> Grads {
    const std::vector<int64_t> dims = c.arg(1).to_int_list();
    const Tensor& grad = c.grad();
    const int64_t last = core::wrap_dim(dims.back(), grad.dim());
    const Tensor g = _fft_r2c(grad, dims, c.arg(2).to_int(), /*onesided=*/true);
    const SymInt m = sym_size(g, last), doubled = sym_size(grad, last) - m;
    if (doubled <= 0) return {g};
    const Tensor twos = ones(SymIntArrayRef({doubled}), TensorOptions(grad.dtype()).device(grad.device()));
    const Tensor weight = constant_pad_nd(twos, {SymInt(1), m - 1 - doubled}) + 1;
    std::vector<SymInt> shape(static_cast<size_t>(grad.dim() + 1), 1);
    shape[static_cast<size_t>(last)] = m;
    return {view_as_complex((view_as_real(g) * weight.reshape(SymIntArrayRef(shape))).contiguous())};
  });
}

void register_derivatives(Registry& r) {
  unary_rows(r);
  core_aten_rows(r);
  binary_rows(r);
  select_rows(r);
  copy_rows(r);
  view_rows(r);
  shape_rows(r);
  indexing_rows(r);
  fft_rows(r);
}

}  // namespace ember::ops
