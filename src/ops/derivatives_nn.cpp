// ops/derivatives_nn.cpp — derivative formulas of reductions, matrix products and the
// nn primitives (softmax, layer norm, embedding), one row per op, written with ops only.
// Composite ops (matmul, linear, softmax.int, layer_norm, …) need none: they decompose
// into these before the autograd layer sees them.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/shape.h"
#include "core/sym_geometry.h"
#include "ember/ops/creation.h"
#include "ember/ops/indexing.h"
#include "ember/ops/linalg.h"
#include "ember/ops/loss.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/reduction.h"
#include "ember/ops/shape.h"
#include "ember/ops/view.h"
#include "ops/derivative_rows.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

using namespace derivative_rows;

/// The reduced dims of a reduction over `dims` of a tensor of rank `ndim` (empty = all), sorted.
std::vector<int64_t> reduced_dims(const std::optional<std::vector<int64_t>>& dims, int64_t ndim) {
  std::vector<int64_t> out;
  if (!dims || dims->empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : *dims) out.push_back(core::wrap_dim(d, std::max<int64_t>(ndim, 1)));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (ndim == 0) out.clear();
  return out;
}

/// A reduction's result (or gradient) with the reduced dims put back as size 1.
Tensor restore_reduced_dims(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim) {
  if (keepdim) return t;
  Tensor r = t;
  for (int64_t d : dims) r = r.unsqueeze(d);
  return r;
}

/// `g` divided by the number of elements of `sizes` over `dims` less `correction`, as
/// mean's (correction 0) and var's gradients divide: by a double when every such size is
/// plain; when some are size symbols (a joint graph traced with dynamic shapes) the count
/// is each call's, so it is computed in the graph as the sum of ones of the symbolic
/// factors' product (a length as small as that product), times the static factors, less
/// the correction.
Tensor divide_by_count(const Tensor& g, const std::vector<SymInt>& sizes, const std::vector<int64_t>& dims,
                       double correction = 0.0) {
  double fixed = 1.0;
  SymInt symbolic = 1;
  bool any = false;
  for (int64_t d : dims) {
    const SymInt& n = sizes[static_cast<size_t>(d)];
    if (n.is_symbolic()) {
      symbolic = symbolic * n;
      any = true;
    } else {
      fixed *= static_cast<double>(n.hint());
    }
  }
  if (!any) return g / (fixed - correction);
  Tensor count = ones({symbolic}, TensorOptions(g.dtype()).device(g.device())).sum();
  if (fixed != 1.0) count = count * fixed;
  if (correction != 0.0) count = count - correction;
  return g / count;
}

void reduction_rows(Registry& r) {
  // Over SymInt sizes (arg_sym_sizes): in a joint graph traced with dynamic shapes the
  // gradient keeps the input's symbolic sizes.
  row(r, "aten::sum", "SumBackward0",
      [](const Ctx& c) -> Grads { return {c.grad().expand(SymIntArrayRef(c.arg_sym_sizes(0)))}; });
  row(r, "aten::sum.dim_IntList", "SumBackward1", [](const Ctx& c) -> Grads {
    const std::vector<SymInt> sizes = c.arg_sym_sizes(0);
    auto dims = reduced_dims(c.arg(1).to_optional_int_list(), static_cast<int64_t>(sizes.size()));
    return {restore_reduced_dims(c.grad(), dims, c.arg(2).to_bool()).expand(SymIntArrayRef(sizes))};
  });
  row(r, "aten::mean", "MeanBackward0", [](const Ctx& c) -> Grads {
    const std::vector<SymInt> sizes = c.arg_sym_sizes(0);
    std::vector<int64_t> all(sizes.size());
    std::iota(all.begin(), all.end(), 0);
    return {divide_by_count(c.grad().expand(SymIntArrayRef(sizes)), sizes, all)};
  });
  row(r, "aten::mean.dim", "MeanBackward1", [](const Ctx& c) -> Grads {
    const std::vector<SymInt> sizes = c.arg_sym_sizes(0);
    auto dims = reduced_dims(c.arg(1).to_optional_int_list(), static_cast<int64_t>(sizes.size()));
    Tensor g = restore_reduced_dims(c.grad(), dims, c.arg(2).to_bool()).expand(SymIntArrayRef(sizes));
    return {divide_by_count(g, sizes, dims)};
  });
  // The gradient is shared evenly among the elements equal to the extremum.
  auto extremum = [](const Ctx& c) -> Grads {
    const Tensor& x = c.input(0);
    auto dims = reduced_dims(c.arg(1).to_int_list(), x.dim());
    const bool keepdim = c.arg(2).to_bool();
    Tensor mask = (x == restore_reduced_dims(c.output(0), dims, keepdim)).to(x.dtype());
    Tensor count = dims.empty() ? mask : sum(mask, dims, /*keepdim=*/true);
    return {restore_reduced_dims(c.grad(), dims, keepdim) * mask / count};
  };
  row(r, "aten::amax", "AmaxBackward0", extremum);
  row(r, "aten::amin", "AminBackward0", extremum);
  // PyTorch's norm_backward (Note [vector norm]): 0 where the norm is 0, 0 for ord 0, an
  // infinity norm's gradient split between the elements at the norm (or NaN).
  row(r, "aten::linalg_vector_norm", "LinalgVectorNormBackward0", [](const Ctx& c) -> Grads {
    const Tensor& x = c.input(0);
    const double p = c.arg(1).to_scalar().to_double();
    const auto dims = reduced_dims(c.arg(2).to_optional_int_list(), x.dim());
    const bool keepdim = c.arg(3).to_bool();
    if (p == 0.0) return {zeros_like(x)};
    const Tensor g = restore_reduced_dims(c.grad(), dims, keepdim);
    const Tensor norm = restore_reduced_dims(c.output(0), dims, keepdim);
    if (p == 1.0) return {sign(x) * g};
    if (p == 2.0) return {g * masked_fill(x / norm, norm == 0, 0)};
    if (std::isinf(p)) {
      const Tensor ax = abs(x);
      const Tensor at_norm = logical_or(ax == norm, isnan(ax));
      const Tensor count = dims.empty() ? at_norm.to(x.dtype()) : sum(at_norm, dims, /*keepdim=*/true);
      return {sign(x) * (g / count * at_norm)};
    }
    if (p < 1.0) return {sign(x) * masked_fill(pow(abs(x), p - 1), x == 0, 0) * g * pow(norm, 1 - p)};
    const Tensor scaled = p < 2.0 ? sign(x) * pow(abs(x), p - 1) : x * pow(abs(x), p - 2);
    return {scaled * masked_fill(g / pow(norm, p - 1), norm == 0, 0)};
  });
}


/// prod's gradient along `dims` (keepdim shape `g`), exact where x has zeros: with no zero
/// in a reduced slice it is prod/x; with one, only the zero gets the product of the others.
Tensor prod_grad(const Tensor& g, const Tensor& x, const std::vector<int64_t>& dims) {
  Tensor is_zero = x == 0;
  Tensor x_nz = masked_fill(x, is_zero, 1);
  Tensor p_nz = x_nz, zc = is_zero.to(kInt64);
  if (!dims.empty()) {
    for (int64_t d : dims) p_nz = prod(p_nz, d, /*keepdim=*/true);
    zc = sum(zc, dims, /*keepdim=*/true);
  }
  Tensor no_zero = (p_nz / x_nz) * (zc == 0);
  Tensor one_zero = p_nz * logical_and(zc == 1, is_zero);
  return g * (no_zero + one_zero);
}

void more_reduction_rows(Registry& r) {
  // Over SymInt sizes: the count (less the correction) divides as in mean's gradient.
  row(r, "aten::var.correction", "VarBackward0", [](const Ctx& c) -> Grads {
    const Tensor& x = c.input(0);
    const std::vector<SymInt> sizes = c.arg_sym_sizes(0);
    auto dims = reduced_dims(c.arg(1).to_optional_int_list(), x.dim());
    const double correction = c.arg(2).is_none() ? 1.0 : c.arg(2).to_scalar().to_double();
    const bool keepdim = c.arg(3).to_bool();
    Tensor centered = dims.empty() ? x - x : x - ember::mean(x, dims, /*keepdim=*/true);
    return {divide_by_count(restore_reduced_dims(c.grad(), dims, keepdim) * centered * 2.0, sizes, dims, correction)};
  });
  row(r, "aten::cumsum", "CumsumBackward0", [](const Ctx& c) -> Grads {
    const Tensor& g = c.grad();
    if (g.dim() == 0) return {g};
    const int64_t dim = core::wrap_dim(c.arg(1).to_int(), g.dim());
    return {flip(cumsum(flip(g, {dim}), dim), {dim})};
  });
  // Over SymInt sizes: flattened to the input's symbolic numel and reshaped back.
  row(r, "aten::prod", "ProdBackward0", [](const Ctx& c) -> Grads {
    const Tensor& x = c.input(0);
    const std::vector<SymInt> sizes = c.arg_sym_sizes(0);
    Tensor flat = x.reshape({sym_numel(x)});
    return {prod_grad(c.grad(), flat, {0}).reshape(SymIntArrayRef(sizes))};
  });
  row(r, "aten::prod.dim_int", "ProdBackward1", [](const Ctx& c) -> Grads {
    const Tensor& x = c.input(0);
    if (x.dim() == 0) return {c.grad()};
    const int64_t dim = core::wrap_dim(c.arg(1).to_int(), x.dim());
    Tensor g = c.arg(2).to_bool() ? c.grad() : c.grad().unsqueeze(dim);
    return {prod_grad(g, x, {dim})};
  });
  // The gradient goes to the element each index names (scattered into zeros).
  auto value_selecting = [](const Ctx& c) -> Grads {
    const std::vector<SymInt> sizes = c.arg_sym_sizes(0);
    const Tensor& g = c.grad(0);
    if (!g.defined()) return {Tensor()};
    if (sizes.empty()) return {g};
    const int64_t dim = core::wrap_dim(c.arg(1).to_int(), static_cast<int64_t>(sizes.size()));
    const bool keepdim = c.arg(2).to_bool();
    Tensor idx = keepdim ? c.output(1) : c.output(1).unsqueeze(dim);
    Tensor gk = keepdim ? g : g.unsqueeze(dim);
    return {scatter(zeros_as(SymIntArrayRef(sizes), g), dim, idx, gk)};
  };
  row(r, "aten::max.dim", "MaxBackward0", value_selecting);
  row(r, "aten::min.dim", "MinBackward0", value_selecting);
  // Sorting ops: each value's gradient goes back to where its index says it came from.
  auto sorted_back = [](size_t dim_arg) {
    return [dim_arg](const Ctx& c) -> Grads {
      const std::vector<SymInt> sizes = c.arg_sym_sizes(0);
      const Tensor& g = c.grad(0);
      if (!g.defined()) return {Tensor()};
      if (sizes.empty()) return {g};
      const int64_t dim = core::wrap_dim(c.arg(dim_arg).to_int(), static_cast<int64_t>(sizes.size()));
      return {scatter(zeros_as(SymIntArrayRef(sizes), g), dim, c.output(1), g)};
    };
  };
  row(r, "aten::sort", "SortBackward0", sorted_back(1));
  row(r, "aten::sort.stable", "SortBackward1", sorted_back(2));
  row(r, "aten::topk", "TopkBackward0", sorted_back(2));
  // Full max/min: shared evenly among the elements equal to the result (NaN equals NaN).
  auto evenly_distributed = [](const Ctx& c) -> Grads {
    const Tensor& x = c.input(0);
    const Tensor& v = c.output(0);
    Tensor mask = logical_or(x == v, logical_and(isnan(x), isnan(v)));
    return {mask * (c.grad() / sum(mask))};
  };
  row(r, "aten::max", "MaxBackward1", evenly_distributed);
  row(r, "aten::min", "MinBackward1", evenly_distributed);
}

/// Whether a matrix is stored column by column (the transpose of a contiguous one), as a
/// Linear's weight.t() is.
/// Asked over SymInt (core::over_geometry), so a symbolic operand is not specialized.
bool column_major(const Tensor& m) {
  return core::over_geometry({&m}, [&]<typename Int>() {
    using G = core::Geometry<Int>;
    return G::stride(m, 0) == 1 && G::stride(m, 1) == G::size(m, 0);
  });
}

/// The gradients of mm(mat1, mat2) as PyTorch's mm_mat1_backward / mm_mat2_backward form
/// them: a column-major operand gets its gradient column-major too (the product computed
/// transposed), so a Linear's weight gradient comes out in the weight's own layout and is
/// never transposed in memory by what reads it later (accumulation, the optimizer).
Tensor mm_mat1_backward(const Tensor& grad, const Tensor& mat1, const Tensor& mat2) {
  return column_major(mat1) ? mm(mat2, grad.t()).t() : mm(grad, mat2.t());
}
Tensor mm_mat2_backward(const Tensor& grad, const Tensor& mat1, const Tensor& mat2) {
  return column_major(mat2) ? mm(grad.t(), mat1).t() : mm(mat1.t(), grad);
}

void linalg_rows(Registry& r) {
  row(r, "aten::mm", "MmBackward0", [](const Ctx& c) -> Grads {
    return {c.needs_grad(0) ? mm_mat1_backward(c.grad(), c.input(0), c.input(1)) : Tensor(),
            c.needs_grad(1) ? mm_mat2_backward(c.grad(), c.input(0), c.input(1)) : Tensor()};
  });
  row(r, "aten::bmm", "BmmBackward0", [](const Ctx& c) -> Grads {
    return {c.needs_grad(0) ? bmm(c.grad(), c.input(1).transpose(1, 2)) : Tensor(),
            c.needs_grad(1) ? bmm(c.input(0).transpose(1, 2), c.grad()) : Tensor()};
  });
  row(r, "aten::dot", "DotBackward0", [](const Ctx& c) -> Grads {
    return {c.needs_grad(0) ? c.grad() * c.input(1) : Tensor(), c.needs_grad(1) ? c.grad() * c.input(0) : Tensor()};
  });
  row(r, "aten::mv", "MvBackward0", [](const Ctx& c) -> Grads {
    return {c.needs_grad(0) ? c.grad().unsqueeze(1) * c.input(1).unsqueeze(0) : Tensor(),
            c.needs_grad(1) ? mv(c.input(0).t(), c.grad()) : Tensor()};
  });
  row(r, "aten::addmm", "AddmmBackward0", [](const Ctx& c) -> Grads {
    const Scalar beta = c.arg(3).to_scalar(), alpha = c.arg(4).to_scalar();
    auto scaled = [](const Tensor& t, const Scalar& s) { return s.to_double() == 1.0 ? t : t * s; };
    return {c.needs_grad(0) ? scaled(c.grad(), beta) : Tensor(),
            c.needs_grad(1) ? scaled(mm_mat1_backward(c.grad(), c.input(1), c.input(2)), alpha) : Tensor(),
            c.needs_grad(2) ? scaled(mm_mat2_backward(c.grad(), c.input(1), c.input(2)), alpha) : Tensor()};
  });
}

void nn_rows(Registry& r) {
  row(r, "aten::_softmax", "SoftmaxBackward0", [](const Ctx& c) -> Grads {
    const Tensor& y = c.output(0);
    const int64_t dim = c.arg(1).to_int();
    Tensor gy = c.grad() * y;
    return {gy - y * sum(gy, {dim}, /*keepdim=*/true)};
  });
  row(r, "aten::_log_softmax", "LogSoftmaxBackward0", [](const Ctx& c) -> Grads {
    const int64_t dim = c.arg(1).to_int();
    return {c.grad() - exp(c.output(0)) * sum(c.grad(), {dim}, /*keepdim=*/true)};
  });
  row(r, "aten::native_layer_norm", "NativeLayerNormBackward0", [](const Ctx& c) -> Grads {
    if (!c.grad(0).defined()) return {Tensor(), Tensor(), Tensor()};  // only mean/rstd were used
    const Tensor& x = c.input(0);
    const int64_t nd = static_cast<int64_t>(c.arg(1).to_int_list().size());
    const int64_t axis = x.dim() - nd;
    // The leading dims over SymInt (sym_sizes), so a symbolic batch stays symbolic.
    const std::vector<SymInt> x_sizes = sym_sizes(x);
    std::vector<SymInt> stat_shape(x_sizes.begin(), x_sizes.begin() + axis);
    std::vector<int64_t> norm_dims;
    for (int64_t d = axis; d < x.dim(); ++d) {
      stat_shape.push_back(1);
      norm_dims.push_back(d);
    }
    Tensor mean = c.output(1).reshape(SymIntArrayRef(stat_shape));
    Tensor rstd = c.output(2).reshape(SymIntArrayRef(stat_shape));
    const Tensor& g = c.grad(0);
    Tensor x_hat = (x - mean) * rstd;
    const bool has_weight = !c.arg(2).is_none();
    Tensor g_hat = has_weight ? g * c.input(2) : g;
    Grads out(3);
    if (c.needs_grad(0)) {
      Tensor a = ember::mean(g_hat, norm_dims, /*keepdim=*/true);
      Tensor b = ember::mean(g_hat * x_hat, norm_dims, /*keepdim=*/true);
      out[0] = (g_hat - a - x_hat * b) * rstd;
    }
    if (has_weight && c.needs_grad(1)) out[1] = g * x_hat;  // summed to weight's shape by autograd
    if (!c.arg(3).is_none() && c.needs_grad(2)) out[2] = g;
    return out;
  });
  // As PyTorch: output 0 only (logsumexp's gradient, if any flowed, is dropped: PyTorch's
  // logsumexp does not require grad), and an attn_mask that requires grad is an error.
  row(r, "aten::_scaled_dot_product_flash_attention_for_cpu", "ScaledDotProductFlashAttentionForCpuBackward0",
      [](const Ctx& c) -> Grads {
        EMBER_CHECK(!c.needs_grad(3))
            << "The function '_scaled_dot_product_flash_attention_for_cpu' is not differentiable with respect to "
               "argument 'attn_mask'. This input cannot have requires_grad True.";
        if (!c.grad(0).defined()) return Grads(4);  // only logsumexp was used
        auto [gq, gk, gv] = _scaled_dot_product_flash_attention_for_cpu_backward(
            c.grad(0), c.input(0), c.input(1), c.input(2), c.output(0), c.output(1), c.arg(3).to_double(),
            c.arg(4).to_bool(), c.arg(5).to_optional_tensor(), c.arg(6).to_optional_double());
        return {gq, gk, gv, Tensor()};
      });
  row(r, "aten::native_dropout", "NativeDropoutBackward0", [](const Ctx& c) -> Grads {
    if (!c.grad(0).defined()) return {Tensor()};  // only the mask was used
    const double p = c.arg(1).to_double();
    const std::optional<bool> train = c.arg(2).to_optional_bool();
    const bool eval = train.has_value() && !*train;
    const double scale = eval ? 1.0 : (p == 1.0 ? 0.0 : 1.0 / (1.0 - p));
    return {c.grad(0) * c.output(1) * scale};
  });
  // Dense even with sparse=True: Ember has no sparse tensors (the values are the same).
  row(r, "aten::embedding", "EmbeddingBackward0", [](const Ctx& c) -> Grads {
    return {embedding_dense_backward(c.grad(), c.input(1), c.arg_sym_sizes(0)[0], c.arg(2).to_int(),
                                     c.arg(3).to_bool()),
            Tensor()};
  });
}

/// An int[] argument as an IntArrayRef-friendly vector.
std::vector<int64_t> ints(const Ctx& c, size_t i) { return c.arg(i).to_int_list(); }

void conv_rows(Registry& r) {
  row(r, "aten::convolution", "ConvolutionBackward0", [](const Ctx& c) -> Grads {
    const bool has_bias = !c.arg(2).is_none();
    std::vector<int64_t> bias_sizes;
    if (has_bias) bias_sizes = c.arg_sizes(2).vec();
    auto [gi, gw, gb] = convolution_backward(
        c.grad(), c.input(0), c.input(1), has_bias ? std::optional<IntArrayRef>(bias_sizes) : std::nullopt,
        ints(c, 3), ints(c, 4), ints(c, 5), c.arg(6).to_bool(), ints(c, 7), c.arg(8).to_int(),
        {c.needs_grad(0), c.needs_grad(1), has_bias && c.needs_grad(2)});
    return {gi, gw, gb};
  });
  row(r, "aten::max_pool2d_with_indices", "MaxPool2DWithIndicesBackward0", [](const Ctx& c) -> Grads {
    if (!c.grad(0).defined()) return {Tensor()};  // only the indices were used
    return {max_pool2d_with_indices_backward(c.grad(0), c.input(0), ints(c, 1), ints(c, 2), ints(c, 3), ints(c, 4),
                                             c.arg(5).to_bool(), c.output(1))};
  });
  row(r, "aten::avg_pool2d", "AvgPool2DBackward0", [](const Ctx& c) -> Grads {
    return {avg_pool2d_backward(c.grad(), c.input(0), ints(c, 1), ints(c, 2), ints(c, 3), c.arg(4).to_bool(),
                                c.arg(5).to_bool(), c.arg(6).to_optional_int())};
  });
  row(r, "aten::_adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0",
      [](const Ctx& c) -> Grads { return {_adaptive_avg_pool2d_backward(c.grad(), c.input(0))}; });
  row(r, "aten::native_batch_norm", "NativeBatchNormBackward0", [](const Ctx& c) -> Grads {
    if (!c.grad(0).defined()) return Grads(5);  // only the saved statistics were used
    const bool train = c.arg(5).to_bool();
    const bool has_weight = !c.arg(1).is_none(), has_bias = !c.arg(2).is_none();
    // Training reads the saved batch statistics (the running ones were updated in place by
    // the forward); evaluation reads the running ones, which it left alone.
    std::optional<Tensor> running_mean, running_var, save_mean, save_invstd;
    if (train) {
      save_mean = c.output(1);
      save_invstd = c.output(2);
    } else {
      running_mean = c.input(3);
      running_var = c.input(4);
    }
    auto [gi, gw, gb] = native_batch_norm_backward(
        c.grad(0), c.input(0), has_weight ? std::optional<Tensor>(c.input(1)) : std::nullopt, running_mean,
        running_var, save_mean, save_invstd, train, c.arg(7).to_double(),
        {c.needs_grad(0), has_weight && c.needs_grad(1), has_bias && c.needs_grad(2)});
    return {gi, gw, gb, Tensor(), Tensor()};
  });
}

void loss_rows(Registry& r) {
  // The other losses are composites of differentiable ops. As in PyTorch, the class
  // weights get no gradient (the target is an index tensor).
  row(r, "aten::nll_loss_forward", "NllLossBackward0", [](const Ctx& c) -> Grads {
    if (!c.grad(0).defined()) return Grads(3);  // only total_weight was used
    const bool has_weight = !c.arg(2).is_none();
    return {nll_loss_backward(c.grad(0), c.input(0), c.input(1),
                              has_weight ? std::optional<Tensor>(c.input(2)) : std::nullopt, c.arg(3).to_int(),
                              c.arg(4).to_int(), c.output(1)),
            Tensor(), Tensor()};
  });
}

}  // namespace

void register_nn_derivatives(Registry& r) {
  reduction_rows(r);
  more_reduction_rows(r);
  linalg_rows(r);
  nn_rows(r);
  conv_rows(r);
  loss_rows(r);
}

}  // namespace ember::ops
