// ops/distance.cpp — _cdist_forward and _pdist_forward as composites of pointwise ops,
// reductions and (cdist's Euclidean shortcut) matmul, computed as ATen's CPU kernels
// compute them: the p-norm of the row differences with p = 0 (a count of nonzero
// differences), 1, 2, ∞ (the largest) and any other p ≥ 0, and for p = 2 with many rows
// ATen's matmul form |a|² - 2 a·b + |b|². pdist takes the pairs i < j of its rows in
// row-major order, their indices computed from an arange in closed form. The gradients
// come from the ops (sign(|d|) counts nonzeros with a zero gradient, as _cdist_backward
// gives for p = 0). float16/bfloat16 are computed in float and rounded. ATen's checks and
// messages. cdist compares and broadcasts its sizes as SymInts, so a trace with dynamic
// shapes keeps every dim symbolic; pdist reads its row count (its pair indices are
// computed from it in closed form). See Note [nn].
#include <cmath>
#include <utility>
#include <vector>

#include "core/sym_geometry.h"
#include "ember/ops/creation.h"
#include "ember/ops/indexing.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/reduction.h"
#include "ember/ops/shape.h"
#include "ops/api.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

/// The p-norm over the last dim of the differences `d`.
Tensor pnorm_last(const Tensor& d, double p) {
  if (p == 0) return sum(sign(abs(d)), {-1});
  if (p == 1) return sum(abs(d), {-1});
  if (p == 2) return sqrt(sum(d * d, {-1}));
  if (std::isinf(p)) return amax(abs(d), {-1});
  return pow(sum(pow(abs(d), Scalar(p)), {-1}), Scalar(1.0 / p));
}

/// ATen's _euclidean_dist: the distances of the rows of x1 and x2 by one matmul.
Tensor euclidean_dist(const Tensor& x1, const Tensor& x2) {
  const Tensor x1_norm = sum(x1 * x1, {-1}, /*keepdim=*/true), x2_norm = sum(x2 * x2, {-1}, /*keepdim=*/true);
  const Tensor x1_pad = ones_like(x1_norm), x2_pad = ones_like(x2_norm);
  const Tensor a = cat({x1 * Scalar(-2.0), x1_norm, x1_pad}, -1), b = cat({x2, x2_pad, x2_norm}, -1);
  return sqrt(clamp_min(matmul(a, b.transpose(-2, -1)), Scalar(0.0)));
}

Stack cdist_forward(const Stack& a) {
  const Tensor &x1 = a[0].to_tensor(), &x2 = a[1].to_tensor();
  const double p = a[2].to_double();
  const std::optional<int64_t> compute_mode = a[3].to_optional_int();
  EMBER_CHECK(x1.dim() >= 2) << "cdist only supports at least 2D tensors, X1 got: " << x1.dim() << "D";
  EMBER_CHECK(x2.dim() >= 2) << "cdist only supports at least 2D tensors, X2 got: " << x2.dim() << "D";
  // Sizes are compared as SymInts throughout: a symbolic one is compared (a guard where
  // its range does not decide), never read as an integer.
  EMBER_CHECK(sym_size(x1, -1) == sym_size(x2, -1))
      << "X1 and X2 must have the same number of columns. X1: " << x1.size(-1) << " X2: " << x2.size(-1);
  EMBER_CHECK(is_floating_point(x1.dtype())) << "cdist only supports floating-point dtypes, X1 got: "
                                             << scalar_type_name(x1.dtype());
  EMBER_CHECK(is_floating_point(x2.dtype())) << "cdist only supports floating-point dtypes, X2 got: "
                                             << scalar_type_name(x2.dtype());
  EMBER_CHECK(p >= 0) << "cdist only supports non-negative p values";
  const int64_t mode = compute_mode.value_or(0);
  EMBER_CHECK(mode >= 0 && mode <= 2) << "possible modes: 0, 1, 2, but was: " << mode;
  EMBER_CHECK(x1.dtype() == x2.dtype()) << "expected scalar type " << scalar_type_name(x1.dtype())
                                        << " but found " << scalar_type_name(x2.dtype());
  // broadcast the batch dims (ATen's expand_batch_portion)
  const core::SymInts s1 = core::sym_sizes(x1), s2 = core::sym_sizes(x2);
  const core::SymInts batch =
      core::sym_broadcast_shapes(core::SymInts(s1.begin(), s1.end() - 2), core::SymInts(s2.begin(), s2.end() - 2));
  std::vector<SymInt> e1, e2;
  for (const core::SymInt& b : batch) {
    e1.emplace_back(b);
    e2.emplace_back(b);
  }
  for (size_t d = s1.size() - 2; d < s1.size(); ++d) e1.emplace_back(s1[d]);
  for (size_t d = s2.size() - 2; d < s2.size(); ++d) e2.emplace_back(s2[d]);
  const ScalarType dt = x1.dtype(), acc = is_reduced_float(dt) ? kFloat : dt;  // float16/bfloat16 in float
  const Tensor a1 = cast(x1.expand(SymIntArrayRef(e1)), acc), a2 = cast(x2.expand(SymIntArrayRef(e2)), acc);
  // ATen's choice of the matmul form: a symbolic row count is compared with 25 (a guard
  // that narrows its range to one side).
  const SymInt r1 = sym_size(x1, -2), r2 = sym_size(x2, -2);
  if (p == 2 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25)))) return {cast(euclidean_dist(a1, a2), dt)};
  return {cast(pnorm_last(a1.unsqueeze(-2) - a2.unsqueeze(-3), p), dt)};
}

/// Row indices (i, j) of the pairs i < j of n rows, in row-major order: pair k has
/// i = n - 2 - ⌊√(4n(n-1) - 8k - 7) / 2 - 1/2⌋ and j = k + i + 1 - n(n-1)/2 + (n-i)(n-i-1)/2,
/// with n and the pair count P as numbers (N = double) or, over size symbols, as 0-dim
/// float64 tensors (N = Tensor): the same float64 operations in the same order either way.
template <typename N>
std::pair<Tensor, Tensor> pair_rows_over(const Tensor& k, const N& nn, const N& pairs) {
  const Tensor i = (nn - 2.0) - floor(sqrt(k * -8.0 + (4.0 * nn * (nn - 1.0) - 7.0)) * 0.5 - 0.5);
  const Tensor j = k + i + (1.0 - pairs) + (nn - i) * (nn - i - 1.0) * 0.5;
  return {i.to(kLong), j.to(kLong)};
}

std::pair<Tensor, Tensor> pair_rows(const SymInt& n, Device device) {
  const SymInt pairs = n * (n - SymInt(1)) / SymInt(2);
  const Tensor k = arange(pairs, TensorOptions(kDouble).device(device));
  if (!n.is_symbolic()) return pair_rows_over(k, static_cast<double>(n.hint()), static_cast<double>(pairs.hint()));
  return pair_rows_over(k, size_tensor(n, device, kDouble), size_tensor(pairs, device, kDouble));
}

Stack pdist_forward(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const double p = a[1].to_double();
  EMBER_CHECK(self.is_contiguous()) << "_pdist_forward requires contiguous input";
  EMBER_CHECK(self.dim() == 2) << "pdist only supports 2D tensors, got: " << self.dim() << "D";
  const ScalarType dt = self.dtype();
  if (!is_floating_point(dt)) not_implemented("pdist", dt);
  const Tensor x = cast(self, is_reduced_float(dt) ? kFloat : dt);  // float16/bfloat16 in float
  // The pairs' row indices in closed form over the row count, a SymInt (never read as an integer).
  const auto [i, j] = pair_rows(sym_size(self, 0), self.device());
  return {cast(pnorm_last(index_select(x, 0, i) - index_select(x, 0, j), p), dt)};
}

}  // namespace

void register_distance_ops(Registry& r) {
  r.def("_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor").set_decomposition(cdist_forward);
  r.def("_pdist_forward(Tensor self, float p=2.) -> Tensor").set_decomposition(pdist_forward);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_tensor;

Tensor _cdist_forward(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> compute_mode, Loc loc) {
  return call_tensor(EMBER_OP("aten::_cdist_forward"), {x1, x2, p, compute_mode}, loc);
}
Tensor _pdist_forward(const Tensor& self, double p, Loc loc) {
  return call_tensor(EMBER_OP("aten::_pdist_forward"), {self, p}, loc);
}

}  // namespace ember
