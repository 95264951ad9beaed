// ember/ops/nn.h — neural-network ops: convolution, pooling, normalization, softmax,
// embedding, padding (torch.nn.functional's ops, under their ATen names).
#pragma once

#include <array>
#include <optional>
#include <tuple>
#include <vector>

#include "ember/tensor.h"

namespace ember {

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                   int64_t groups, Loc loc = Loc::current());
Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
              IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef dilation = {1}, int64_t groups = 1,
              Loc loc = Loc::current());
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
              IntArrayRef stride = {1, 1}, IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1},
              int64_t groups = 1, Loc loc = Loc::current());

Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0, 0},
                  IntArrayRef dilation = {1, 1}, bool ceil_mode = false, Loc loc = Loc::current());
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                                                   IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1},
                                                   bool ceil_mode = false, Loc loc = Loc::current());
Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0, 0},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt, Loc loc = Loc::current());
Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size, Loc loc = Loc::current());
/// aten::avg_pool1d: avg_pool2d over a height-1 view of a (C, L) or (N, C, L) input
/// (Note [1-D pooling]); an empty `stride` is `kernel_size`.
Tensor avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true, Loc loc = Loc::current());
/// aten::adaptive_avg_pool1d: adaptive_avg_pool2d to (1, output_size[0]) over a height-1
/// view of a (C, L) or (N, C, L) input (Note [1-D pooling]).
Tensor adaptive_avg_pool1d(const Tensor& self, IntArrayRef output_size, Loc loc = Loc::current());

Tensor _softmax(const Tensor& self, int64_t dim, bool half_to_float = false, Loc loc = Loc::current());
Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt,
               Loc loc = Loc::current());
Tensor _log_softmax(const Tensor& self, int64_t dim, bool half_to_float = false, Loc loc = Loc::current());
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt,
                   Loc loc = Loc::current());

/// softmax(query @ key^T * scale + attn_mask) @ value over the last two dims (PyTorch's
/// torch.nn.functional.scaled_dot_product_attention): scale defaults to 1/sqrt(E); a bool
/// mask keeps where true, a float one is added; is_causal keeps keys j <= i. 4-D float or
/// double CPU inputs without dropout (and a mask that needs no gradient) run the fused
/// flash kernel, others the math form. enable_gqa lets key and value have fewer heads than
/// query (a divisor of its count): query head h reads key/value head h / (Hq / Hkv), as
/// PyTorch's grouped-query attention (Note [grouped-query attention]).
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Tensor>& attn_mask = std::nullopt, double dropout_p = 0.0,
                                    bool is_causal = false, std::optional<double> scale = std::nullopt,
                                    bool enable_gqa = false, Loc loc = Loc::current());
/// The fused CPU attention: (output [B, H, L, Ev], logsumexp [B, H, L]) of 4-D float or
/// double query [B, H, L, E], key [B, H, S, E], value [B, H, S, Ev]; dropout_p must be 0.
std::tuple<Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu(
    const Tensor& query, const Tensor& key, const Tensor& value, double dropout_p = 0.0, bool is_causal = false,
    const std::optional<Tensor>& attn_mask = std::nullopt, std::optional<double> scale = std::nullopt,
    Loc loc = Loc::current());
/// The fused CPU attention's backward: (grad_query, grad_key, grad_value) from the
/// gradient of its output and its saved (out, logsumexp); arguments as the forward's.
std::tuple<Tensor, Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu_backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& out,
    const Tensor& logsumexp, double dropout_p, bool is_causal, const std::optional<Tensor>& attn_mask = std::nullopt,
    std::optional<double> scale = std::nullopt, Loc loc = Loc::current());

/// (output, mean, rstd).
std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                                                     const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias, double eps,
                                                     Loc loc = Loc::current());
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5, Loc loc = Loc::current());
/// (output, save_mean, save_invstd). In training, updates running_mean/var in place.
std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias,
                                                     const std::optional<Tensor>& running_mean,
                                                     const std::optional<Tensor>& running_var, bool training,
                                                     double momentum, double eps, Loc loc = Loc::current());
/// (mean, biased variance) of each channel of the batch; updates running_mean/var in place
/// as native_batch_norm's training step does (unbiased variance). CPU only.
std::tuple<Tensor, Tensor> batch_norm_update_stats(const Tensor& input, const std::optional<Tensor>& running_mean,
                                                   const std::optional<Tensor>& running_var, double momentum,
                                                   Loc loc = Loc::current());
Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var, bool training,
                  double momentum = 0.1, double eps = 1e-5, Loc loc = Loc::current());

/// The batch norms of an exported graph (native_batch_norm under other signatures):
/// running statistics required and updated in place in training; none (.no_stats); used
/// for evaluation (_no_training; `momentum` is unused there, as in PyTorch).
std::tuple<Tensor, Tensor, Tensor> _native_batch_norm_legit(const Tensor& input, const std::optional<Tensor>& weight,
                                                            const std::optional<Tensor>& bias,
                                                            const Tensor& running_mean, const Tensor& running_var,
                                                            bool training, double momentum, double eps,
                                                            Loc loc = Loc::current());
std::tuple<Tensor, Tensor, Tensor> _native_batch_norm_legit(const Tensor& input, const std::optional<Tensor>& weight,
                                                            const std::optional<Tensor>& bias, bool training,
                                                            double momentum, double eps, Loc loc = Loc::current());
std::tuple<Tensor, Tensor, Tensor> _native_batch_norm_legit_no_training(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    const Tensor& running_mean, const Tensor& running_var, double momentum, double eps, Loc loc = Loc::current());
/// (output, mean, rstd), the statistics of shape (N, group).
std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& input, const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias, int64_t N, int64_t C,
                                                     int64_t HxW, int64_t group, double eps, Loc loc = Loc::current());
Tensor group_norm(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5, Loc loc = Loc::current());

/// Padding of the last 1, 2 or 3 dims by reflection (padding < the dim's size) or by
/// replication; `padding` lists (before, after) pairs from the last dim on.
Tensor reflection_pad1d(const Tensor& self, IntArrayRef padding, Loc loc = Loc::current());
Tensor reflection_pad2d(const Tensor& self, IntArrayRef padding, Loc loc = Loc::current());
Tensor reflection_pad3d(const Tensor& self, IntArrayRef padding, Loc loc = Loc::current());
Tensor replication_pad2d(const Tensor& self, IntArrayRef padding, Loc loc = Loc::current());
Tensor replication_pad3d(const Tensor& self, IntArrayRef padding, Loc loc = Loc::current());

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1,
                 bool scale_grad_by_freq = false, bool sparse = false, Loc loc = Loc::current());

/// Upsampling of the last two dims of an NCHW tensor to `output_size` or by
/// `scale_factors` (exactly one of them given).
Tensor upsample_nearest2d(const Tensor& input, std::optional<std::vector<int64_t>> output_size,
                          std::optional<std::vector<double>> scale_factors, Loc loc = Loc::current());
Tensor upsample_bilinear2d(const Tensor& input, std::optional<std::vector<int64_t>> output_size, bool align_corners,
                           std::optional<std::vector<double>> scale_factors, Loc loc = Loc::current());

/// p-norm distances: between the rows of x1 [.., P, M] and x2 [.., R, M] ([.., P, R]),
/// and between each pair i < j of the rows of self [N, M] ([N (N - 1) / 2]).
Tensor _cdist_forward(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> compute_mode = std::nullopt,
                      Loc loc = Loc::current());
Tensor _pdist_forward(const Tensor& self, double p = 2, Loc loc = Loc::current());

/// Sliding blocks: im2col gathers each kernel window of a [N,] C, H, W input into a
/// column of [N,] C*kH*kW, L; col2im sums such columns back into [N,] C, H, W.
Tensor im2col(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
              IntArrayRef stride, Loc loc = Loc::current());
Tensor col2im(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride, Loc loc = Loc::current());

/// 3-D pooling over the last three dims of a [N,] C, D, H, W input.
Tensor avg_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0, 0, 0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt, Loc loc = Loc::current());
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {}, IntArrayRef padding = {0, 0, 0},
                                                   IntArrayRef dilation = {1, 1, 1}, bool ceil_mode = false,
                                                   Loc loc = Loc::current());
Tensor max_pool3d_with_indices_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                        const Tensor& indices, Loc loc = Loc::current());

/// Samples input [N, C, H, W] at grid [N, Ho, Wo, 2] (x, y in [-1, 1]); interpolation 0
/// bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection.
Tensor grid_sampler_2d(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                       bool align_corners, Loc loc = Loc::current());
/// (output, offset2bag, bag_size, max_indices) of embedding bags: mode 0 sum, 1 mean, 2 max.
std::tuple<Tensor, Tensor, Tensor, Tensor> _embedding_bag(
    const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool scale_grad_by_freq = false,
    int64_t mode = 0, bool sparse = false, const std::optional<Tensor>& per_sample_weights = std::nullopt,
    bool include_last_offset = false, int64_t padding_idx = -1, Loc loc = Loc::current());
// --- backward ops (what the derivative formulas call; outputs left out by
// output_mask are undefined Tensors) ---------------------------------------------------

/// (grad_input, grad_weight, grad_bias) of aten::convolution.
std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad_output, const Tensor& input,
                                                        const Tensor& weight, std::optional<IntArrayRef> bias_sizes,
                                                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                                        bool transposed, IntArrayRef output_padding, int64_t groups,
                                                        std::array<bool, 3> output_mask, Loc loc = Loc::current());
Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                        const Tensor& indices, Loc loc = Loc::current());
Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                           IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override, Loc loc = Loc::current());
Tensor _adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, Loc loc = Loc::current());
/// (grad_input, grad_weight, grad_bias) of native_layer_norm and native_group_norm.
std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                              IntArrayRef normalized_shape, const Tensor& mean,
                                                              const Tensor& rstd, const std::optional<Tensor>& weight,
                                                              const std::optional<Tensor>& bias,
                                                              std::array<bool, 3> output_mask,
                                                              Loc loc = Loc::current());
std::tuple<Tensor, Tensor, Tensor> native_group_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                              const Tensor& mean, const Tensor& rstd,
                                                              const std::optional<Tensor>& weight, int64_t N,
                                                              int64_t C, int64_t HxW, int64_t group,
                                                              std::array<bool, 3> output_mask,
                                                              Loc loc = Loc::current());
/// (grad_input, grad_weight, grad_bias) of native_batch_norm: save_mean/save_invstd are
/// used in training, running_mean/running_var in evaluation.
std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward(
    const Tensor& grad_out, const Tensor& input, const std::optional<Tensor>& weight,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    const std::optional<Tensor>& save_mean, const std::optional<Tensor>& save_invstd, bool train, double eps,
    std::array<bool, 3> output_mask, Loc loc = Loc::current());
/// embedding's weight gradient [num_weights, D]; num_weights may be a SymInt (ember::sym_size
/// of the weight), so that a symbolic vocabulary stays symbolic in a traced backward.
Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices, const SymInt& num_weights,
                                int64_t padding_idx, bool scale_grad_by_freq, Loc loc = Loc::current());

/// Pads the last dims: pad = {left, right, top, bottom, …} (negative values crop).
Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value = 0, Loc loc = Loc::current());
/// The same with amounts that may be SymInts (computed from ember::sym_size): a symbolic
/// amount stays symbolic in a trace, so one compile serves every size (Note [dynamic shapes]).
Tensor constant_pad_nd(const Tensor& self, SymIntArrayRef pad, const Scalar& value = 0, Loc loc = Loc::current());
/// A braced list takes this overload (plain numbers or SymInts alike).
inline Tensor constant_pad_nd(const Tensor& self, std::initializer_list<SymInt> pad, const Scalar& value = 0,
                              Loc loc = Loc::current()) {
  return constant_pad_nd(self, SymIntArrayRef(pad), value, loc);
}

}  // namespace ember
