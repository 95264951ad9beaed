// ops/nn_backward.cpp — the backward ops of the nn and conv families, as ATen has them:
// convolution_backward, the 2-D pooling backwards, native_batch_norm_backward and
// embedding_dense_backward. Their derivative rows (derivatives_nn.cpp) call them, so a
// traced backward pass holds the same ops as PyTorch's. Each checks its arguments as the
// forward op did (conv_geometry.h) and that grad_output has the forward output's shape.
// The pooling and batch norm backwards have CUDA kernels (kernels/cuda/pool, norm).
#include <cmath>
#include <sstream>
#include <string>

#include "core/shape.h"
#include "ember/config.h"
#include "ember/ops/creation.h"
#include "ember/ops/indexing.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/view.h"
#include "kernels/cpu/conv_backward.h"
#include "kernels/cpu/norm_backward.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/norm.h"
#include "kernels/cuda/pool.h"
#include "ops/api.h"
#include "ops/conv_geometry.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

using kernels::cpu::Conv2dParams;
using kernels::cpu::Pool2dParams;

Tensor dense(const Tensor& t) { return t.is_contiguous() ? t : contiguous(t); }

TensorMeta maybe_meta(bool wanted, IntArrayRef sizes, ScalarType dtype, Device device, bool channels_last = false) {
  TensorMeta m = layout_meta(sizes, dtype, device, channels_last);
  m.undefined = !wanted;
  return m;
}

void check_same_dtype(const Tensor& grad, const Tensor& input) {
  EMBER_CHECK(grad.dtype() == input.dtype()) << "expected scalar type " << scalar_type_name(input.dtype())
                                             << " but found " << scalar_type_name(grad.dtype());
}

/// ATen's check_dim_size, over every dim: `t` must have `want`'s sizes.
void check_sizes(const Tensor& t, IntArrayRef want) {
  const int64_t nd = static_cast<int64_t>(want.size());
  EMBER_CHECK(t.dim() == nd) << "Expected a tensor of dimension " << nd << " but got: dimension " << t.dim();
  for (int64_t d = 0; d < nd; ++d)
    EMBER_CHECK(t.size(d) == want[d]) << "Expected a tensor of dimension " << nd << " and tensor.size[" << d
                                      << "] == " << want[d] << " but got: dimension " << nd << " and tensor.size["
                                      << d << "] = " << t.size(d);
}

// --- convolution ---------------------------------------------------------------------

/// convolution_backward's arguments as convolution's (without a bias), for conv_setup.
Stack forward_args(const Stack& a) { return {a[1], a[2], IValue(), a[4], a[5], a[6], a[7], a[8], a[9]}; }

const std::vector<bool>& output_mask(const IValue& v) {
  const auto& mask = v.to_bool_list();
  EMBER_CHECK(mask.size() == 3) << "output_mask must have 3 values, got " << mask.size();
  return mask;
}

ConvSetup conv_backward_setup(const Stack& a) {
  const Tensor& grad = a[0].to_tensor();
  const Tensor& input = a[1].to_tensor();
  check_defined(grad, "grad_output");
  const ConvSetup s = conv_setup(forward_args(a));
  check_same_dtype(grad, input);
  if (!is_floating_point(input.dtype())) not_implemented("slow_conv2d_cpu_grad_input", input.dtype());
  std::ostringstream want;
  want << IntArrayRef(s.out_sizes);
  EMBER_CHECK(grad.sizes() == IntArrayRef(s.out_sizes))
      << "convolution_backward: expected grad_output of size " << want.str() << " (the convolution's output), but got "
      << grad.sizes();
  if (!a[3].is_none() && output_mask(a[10])[2]) {
    const auto& bias_sizes = a[3].to_int_list();
    EMBER_CHECK(bias_sizes.size() == 1 && bias_sizes[0] == s.p.out_channels)
        << "convolution_backward: expected bias_sizes [" << s.p.out_channels << "], but got " << IntArrayRef(bias_sizes);
  }
  return s;
}

std::vector<TensorMeta> convolution_backward_meta(const Stack& a) {
  const ConvSetup s = conv_backward_setup(a);
  const Tensor& input = a[1].to_tensor();
  const Tensor& weight = a[2].to_tensor();
  const auto& mask = output_mask(a[10]);
  // Note [channels_last convolution]; Note [3-D convolution] in conv.cpp.
  const bool channels_last = s.channels_last;
  return {maybe_meta(mask[0], input.sizes(), input.dtype(), input.device(), channels_last),
          maybe_meta(mask[1], weight.sizes(), weight.dtype(), input.device(), channels_last),
          maybe_meta(mask[2], {s.p.out_channels}, input.dtype(), input.device())};
}

/// p with its input and output swapped: the geometry of the convolution (or transposed
/// convolution) that maps the forward output's gradient back onto the input.
Conv2dParams swapped(const Conv2dParams& p) {
  Conv2dParams r = p;
  std::swap(r.in_channels, r.out_channels);
  std::swap(r.in_h, r.out_h);
  std::swap(r.in_w, r.out_w);
  return r;
}

/// The gradients of a convolution of geometry `s` into `out` (contiguous, or NHWC
/// activations with a contiguous grad_weight when s.p.channels_last): oneDNN for float32,
/// else the GEMM kernels. Returns false only when NHWC was asked for and oneDNN cannot take
/// the geometry.
bool conv_backward_into(const ConvSetup& s, const Tensor& grad, const Tensor& input, const Tensor& weight,
                        std::vector<Tensor>& out) {
  const Conv2dParams& p = s.p;
  const bool sums_something = p.in_channels > 0 && p.kernel_h > 0 && p.kernel_w > 0 && p.batch > 0;
  if (!s.transposed && input.dtype() == kFloat && sums_something && (out[0].defined() || out[1].defined())) {
    auto ptr = [](const Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; };
    const bool bias_too = out[1].defined() && out[2].defined();
    if (kernels::cpu::conv2d_backward_dnnl(grad.data_ptr<float>(), input.data_ptr<float>(), weight.data_ptr<float>(),
                                           ptr(out[0]), ptr(out[1]), bias_too ? ptr(out[2]) : nullptr, p)) {
      if (out[2].defined() && !bias_too) kernels::cpu::conv_bias_grad(dense(grad), out[2]);
      return true;
    }
  }
  if (p.channels_last) return false;
  if (!s.transposed) {
    // dX is the transposed convolution of dY; dW correlates dY with the input's patches.
    if (out[0].defined()) kernels::cpu::conv_transpose2d_forward(grad, weight, Tensor(), out[0], swapped(p));
    if (out[1].defined()) kernels::cpu::conv2d_weight_grad(grad, input, out[1], p);
  } else {
    // dX is the convolution of dY; dW correlates the input with dY's patches.
    Conv2dParams r = swapped(p);
    if (out[0].defined()) {
      // With output_padding >= stride (allowed below the dilation), the convolution of dY
      // is longer than the input; the positions past it belong to no input element.
      const int64_t h = (r.in_h + 2 * r.pad_h - r.dilation_h * (r.kernel_h - 1) - 1) / r.stride_h + 1;
      const int64_t w = (r.in_w + 2 * r.pad_w - r.dilation_w * (r.kernel_w - 1) - 1) / r.stride_w + 1;
      if (h == r.out_h && w == r.out_w) {
        kernels::cpu::conv2d_forward(grad, weight, Tensor(), out[0], r);
      } else {
        Conv2dParams full = r;
        full.out_h = h;
        full.out_w = w;
        Tensor tmp = empty({p.batch, p.in_channels, h, w}, input.dtype());
        kernels::cpu::conv2d_forward(grad, weight, Tensor(), tmp, full);
        Tensor part = tmp.narrow(2, 0, r.out_h).narrow(3, 0, r.out_w);
        out[0].copy_(part.reshape(out[0].sizes()));
      }
    }
    if (out[1].defined()) kernels::cpu::conv2d_weight_grad(input, grad, out[1], r);
  }
  if (out[2].defined()) kernels::cpu::conv_bias_grad(grad, out[2]);
  return true;
}

/// `t` itself when contiguous (or undefined), else a contiguous tensor of its sizes to
/// compute into (and copy from).
Tensor contiguous_slot(const Tensor& t) {
  return !t.defined() || t.is_contiguous() ? t : empty(t.sizes(), t.dtype());
}

/// The gradients of a 3-D convolution (Note [3-D convolution] in conv.cpp) into contiguous
/// `out`: the transposed convolution of dY (or, transposed, the convolution of dY) for dX,
/// the correlation of dY with the input (or of the input with dY) for dW, sums for db.
void conv3d_backward_into(const ConvSetup& s, const Tensor& grad, const Tensor& input, const Tensor& weight,
                          std::vector<Tensor>& out) {
  const kernels::cpu::Conv3dParams& q = s.p3;
  if (!s.transposed) {
    if (out[0].defined()) kernels::cpu::conv3d_transpose(grad, weight, Tensor(), out[0], q);
    if (out[1].defined()) kernels::cpu::conv3d_weight_grad(grad, input, out[1], q);
  } else {
    // q runs from the transposed convolution's output (dY's space) back to its input.
    if (out[0].defined()) kernels::cpu::conv3d_forward(grad, weight, Tensor(), out[0], q);
    if (out[1].defined()) kernels::cpu::conv3d_weight_grad(input, grad, out[1], q);
  }
  if (out[2].defined()) kernels::cpu::conv_bias_grad(grad, out[2]);
}

void convolution_backward_kernel(const Stack& a, std::vector<Tensor>& out) {
  ConvSetup s = conv_backward_setup(a);
  const Tensor& x = a[1].to_tensor();
  const Tensor& w = a[2].to_tensor();
  if (s.dims == 3) {
    if (s.channels_last && !s.transposed && x.dtype() == kFloat && (!out[0].defined() || is_channels_last_dense(out[0]))) {
      // float32 NDHWC: oneDNN reads grad_output and the input and writes grad_input as they
      // are; grad_weight is computed OIDHW and copied, grad_bias summed as for NCDHW.
      kernels::cpu::Conv3dParams q = s.p3;
      q.channels_last = true;
      const Tensor grad = channels_last_dense(a[0].to_tensor()), input = channels_last_dense(x), weight = dense(w);
      const Tensor grad_weight = contiguous_slot(out[1]);
      const bool data = !out[0].defined() || kernels::cpu::conv3d_backward_data_dnnl(
                                                 grad.data_ptr<float>(), weight.data_ptr<float>(), out[0].data_ptr<float>(), q);
      const bool weights = data && (!out[1].defined() || kernels::cpu::conv3d_backward_weights_dnnl(
                                                             grad.data_ptr<float>(), input.data_ptr<float>(),
                                                             grad_weight.data_ptr<float>(), q));
      if (data && weights) {
        if (grad_weight.defined() && !grad_weight.is_same(out[1])) out[1].copy_(grad_weight);
        if (out[2].defined()) kernels::cpu::conv_bias_grad(dense(grad), out[2]);
        return;
      }
    }
    with_contiguous_outputs(out, [&](std::vector<Tensor>& slots) {
      conv3d_backward_into(s, dense(a[0].to_tensor()), dense(x), dense(w), slots);
    });
    return;
  }
  // Note [channels_last convolution]: float32 runs oneDNN over NHWC grad_output and input
  // as they are; the weight gradient is computed OIHW and copied.
  if (conv_channels_last(x, w) && !s.transposed && x.dtype() == kFloat) {
    ConvSetup nhwc = s;
    nhwc.p.channels_last = true;
    std::vector<Tensor> slots{out[0], contiguous_slot(out[1]), out[2]};
    if (conv_backward_into(nhwc, channels_last_dense(a[0].to_tensor()), channels_last_dense(x), dense(w), slots)) {
      if (slots[1].defined() && !slots[1].is_same(out[1])) out[1].copy_(slots[1]);
      return;
    }
  }
  with_contiguous_outputs(out, [&](std::vector<Tensor>& slots) {
    conv_backward_into(s, dense(a[0].to_tensor()), dense(x), dense(w), slots);
  });
}

// --- pooling ----------------------------------------------------------------------------

/// The C++ type name ATen's pooling checks print for a dtype ("float", "c10::Half").
std::string cpp_type_name(ScalarType t) {
  switch (t) {
    case kFloat: return "float";
    case kDouble: return "double";
    case kLong: return "long int";
    case kInt: return "int";
    default: return "c10::" + std::string(scalar_type_name(t));
  }
}

void check_pool_grad(const Tensor& grad, const Tensor& self, const Pool2dParams& p, const char* grad_name) {
  check_defined(grad, grad_name);
  EMBER_CHECK(grad.dtype() == self.dtype()) << "expected dtype " << cpp_type_name(self.dtype()) << " for `"
                                            << grad_name << "` but got dtype " << cpp_type_name(grad.dtype());
  check_sizes(grad, pooled_sizes(self, p.out_h, p.out_w));
}

Pool2dParams max_pool_backward_setup(const Stack& a) {
  const Tensor& self = a[1].to_tensor();
  const Pool2dParams p = max_pool_setup({a[1], a[2], a[3], a[4], a[5], a[6]});
  check_pool_grad(a[0].to_tensor(), self, p, "gradOutput");
  const Tensor& indices = a[7].to_tensor();
  EMBER_CHECK(indices.dtype() == kLong) << "expected scalar type Long but found " << scalar_type_name(indices.dtype());
  check_sizes(indices, pooled_sizes(self, p.out_h, p.out_w));
  return p;
}

Pool2dParams avg_pool_backward_setup(const Stack& a) {
  const Pool2dParams p = avg_pool_setup({a[1], a[2], a[3], a[4], a[5], a[6], a[7]});
  check_pool_grad(a[0].to_tensor(), a[1].to_tensor(), p, "gradOutput");
  return p;
}

Pool2dParams adaptive_backward_setup(const Stack& a) {
  const Tensor& grad = a[0].to_tensor();
  const Tensor& self = a[1].to_tensor();
  check_defined(grad, "grad_output");
  EMBER_CHECK(grad.dim() == self.dim() && grad.dim() >= 2)
      << "adaptive_avg_pool2d_backward(): Expected grad_output to have " << self.dim() << " dimensions, but got "
      << grad.sizes();
  const Pool2dParams p = adaptive_setup({a[1], std::vector<int64_t>{grad.size(-2), grad.size(-1)}});
  check_pool_grad(grad, self, p, "grad_output");
  return p;
}

// The kernels (CPU and CUDA): grad_output (and indices) made contiguous.
void max_pool_backward_kernel(const Stack& a, std::vector<Tensor>& out) {
  const Pool2dParams p = max_pool_backward_setup(a);
  const Tensor grad = dense(a[0].to_tensor()), indices = dense(a[7].to_tensor());
  if (grad.is_cuda()) return kernels::cuda::max_pool2d_backward(grad, indices, out[0], p);
  kernels::cpu::max_pool2d_backward(grad, indices, out[0], p);
}

void avg_pool_backward_kernel(const Stack& a, std::vector<Tensor>& out) {
  const Pool2dParams p = avg_pool_backward_setup(a);
  const Tensor grad = dense(a[0].to_tensor());
  const bool count_include_pad = a[6].to_bool();
  const std::optional<int64_t> divisor = a[7].to_optional_int();
  if (grad.is_cuda()) {
    // PyTorch's CUDA kernel takes floating types only (its CPU one takes integers too).
    if (!is_floating_point(grad.dtype())) not_implemented("avg_pool2d_backward_out_cuda_frame", grad.dtype());
    return kernels::cuda::avg_pool2d_backward(grad, out[0], p, count_include_pad, divisor);
  }
  kernels::cpu::avg_pool2d_backward(grad, out[0], p, count_include_pad, divisor);
}

void adaptive_avg_pool_backward_kernel(const Stack& a, std::vector<Tensor>& out) {
  const Pool2dParams p = adaptive_backward_setup(a);
  const Tensor grad = dense(a[0].to_tensor());
  if (grad.is_cuda()) return kernels::cuda::adaptive_avg_pool2d_backward(grad, out[0], p);
  kernels::cpu::adaptive_avg_pool2d_backward(grad, out[0], p);
}

TensorMeta like_self(const Stack& a) {
  const Tensor& self = a[1].to_tensor();
  return contiguous_meta(self.sizes(), self.dtype(), self.device());
}

// --- batch norm -------------------------------------------------------------------------

struct BatchNormBackwardSetup {
  int64_t N = 0, C = 0, S = 0;
  ScalarType param_type = kFloat;
};

/// native_batch_norm_backward's checks: the forward's parameter rules, and the statistics
/// the mode needs (saved ones in training, running ones in evaluation).
BatchNormBackwardSetup batch_norm_backward_setup(const Stack& a) {
  const Tensor& grad = a[0].to_tensor();
  const Tensor& input = a[1].to_tensor();
  check_defined(grad, "grad_out");
  check_defined(input, "input");
  EMBER_CHECK(input.dim() >= 2) << "native_batch_norm_backward: expected an input of at least 2 dims, got "
                                << input.sizes();
  if (!is_floating_point(input.dtype())) not_implemented("batch_norm_backward_cpu", input.dtype());
  check_same_dtype(grad, input);
  EMBER_CHECK(same_sizes(grad, input)) << "native_batch_norm_backward: expected grad_out of size "
                                             << input.sizes() << " (the input's), but got " << grad.sizes();
  BatchNormBackwardSetup s;
  s.N = input.size(0);
  s.C = input.size(1);
  s.S = s.N * s.C == 0 ? 0 : input.numel() / (s.N * s.C);
  const char* names[] = {"", "", "weight", "running_mean", "running_var", "save_mean", "save_invstd"};
  s.param_type = input.dtype();
  bool first = true;
  for (int i = 2; i <= 6; ++i) {
    if (a[i].is_none()) continue;
    const Tensor& t = a[i].to_tensor();
    EMBER_CHECK(t.numel() == s.C) << names[i] << " should contain " << s.C << " elements not " << t.numel();
    // On CUDA the saved statistics come in the kernels' statistics dtype (float beside a
    // float16/bfloat16 input), whatever the parameters' dtype.
    if (i >= 5 && input.is_cuda() && t.dtype() == kernels::cuda::norm_stat_dtype(input.dtype())) continue;
    // ATen's mixed-type rule: float parameters beside a float16/bfloat16 input.
    if (first && is_reduced_float(input.dtype()) && t.dtype() == kFloat) s.param_type = kFloat;
    first = false;
    EMBER_CHECK(t.dtype() == s.param_type)
        << "mixed dtype (CPU): expect parameter to have scalar type of " << scalar_type_name(s.param_type);
  }
  const bool train = a[7].to_bool();
  if (train) {
    EMBER_CHECK(!a[5].is_none() && !a[6].is_none())
        << "native_batch_norm_backward: save_mean and save_invstd must be defined in training mode";
  } else {
    EMBER_CHECK(!a[3].is_none() && !a[4].is_none())
        << "native_batch_norm_backward: running_mean and running_var must be defined in evaluation mode";
  }
  return s;
}

std::vector<double> doubles_of(const IValue& v) {
  if (v.is_none()) return {};
  const Tensor t = contiguous(cast(v.to_tensor(), kDouble));
  const double* p = t.data_ptr<double>();
  return std::vector<double>(p, p + t.numel());
}

/// Whether ATen's CUDA batch_norm_backward takes its reduction path (a reduction is needed
/// and its fused kernel does not apply: grad_input not wanted, or an input its channels_last
/// kernels take) with no weight. There grad_weight and grad_bias come back as empty [0]
/// tensors whatever the mask asks, where its CPU kernel returns None or [C] tensors.
bool cuda_reduces_without_weight(const Stack& a) {
  const Tensor& input = a[1].to_tensor();
  if (!input.is_cuda() || !a[2].is_none()) return false;
  const auto& mask = output_mask(a[9]);
  const bool needs_reduction = a[7].to_bool() || mask[1] || mask[2];
  const bool channels_last_kernels =
      suggests_channels_last(input) || (input.is_contiguous() && input.dim() >= 2 && input.stride(1) == 1);
  return needs_reduction && !(mask[0] && !channels_last_kernels);
}

void batch_norm_backward_kernel(const Stack& a, std::vector<Tensor>& out) {
  const BatchNormBackwardSetup s = batch_norm_backward_setup(a);
  const bool train = a[7].to_bool();
  if (a[1].to_tensor().is_cuda()) {
    // The statistics the mode reads, in one dtype (the saved ones may differ from each other
    // when a caller mixes them).
    auto flat = [](const Tensor& t) { return t.dim() == 1 ? t : dense(t).reshape({t.numel()}); };
    const Tensor mean = flat((train ? a[5] : a[3]).to_tensor());
    Tensor var = flat((train ? a[6] : a[4]).to_tensor());
    if (var.dtype() != mean.dtype()) var = cast(var, mean.dtype());
    const Tensor weight = a[2].is_none() ? Tensor() : flat(a[2].to_tensor());
    // Empty [0] parameter gradients (cuda_reduces_without_weight) are the result as they are.
    const bool empty_params = cuda_reduces_without_weight(a);
    return with_contiguous_outputs(out, [&](std::vector<Tensor>& slots) {
      kernels::cuda::batch_norm_backward(dense(a[0].to_tensor()), dense(a[1].to_tensor()), s.N, s.C, s.S, weight,
                                         mean, var, train, a[8].to_double(), slots[0],
                                         empty_params ? Tensor() : slots[1], empty_params ? Tensor() : slots[2]);
    });
  }
  kernels::cpu::BatchNormBackwardStats st;
  st.weight = doubles_of(a[2]);
  if (train) {
    st.mean = doubles_of(a[5]);
    st.invstd = doubles_of(a[6]);
  } else {
    st.mean = doubles_of(a[3]);
    st.invstd = doubles_of(a[4]);
    const double eps = a[8].to_double();
    for (double& v : st.invstd) v = 1.0 / std::sqrt(v + eps);
  }
  // NHWC input: the kernel reads and writes rows of channels (Note [channels_last convolution]).
  const bool channels_last = suggests_channels_last(a[1].to_tensor());
  const auto layout = [channels_last](const Tensor& t) { return channels_last ? channels_last_dense(t) : dense(t); };
  kernels::cpu::batch_norm_backward(layout(a[0].to_tensor()), layout(a[1].to_tensor()), s.N, s.C, s.S, st, train,
                                    out[0], out[1], out[2], channels_last);
}

// --- embedding ----------------------------------------------------------------------------

/// ATen's embedding_dense_backward: each row of grad_output added to the weight row its
/// index names (times 1/count with scale_grad_by_freq); rows at padding_idx get nothing.
/// num_weights is a SymInt, as in PyTorch's schema: a symbolic vocabulary (a weight whose
/// rows are symbolic) gives a result of symbolic rows, no guard.
Stack embedding_dense_backward_decomposition(const Stack& a) {
  const Tensor& grad = a[0].to_tensor();
  const Tensor& indices = a[1].to_tensor();
  const SymInt num_weights = a[2].to_sym_int();
  const int64_t padding_idx = a[3].to_int();
  check_defined(grad, "grad_output");
  EMBER_CHECK(indices.dtype() == kLong || indices.dtype() == kInt)
      << "Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, Int; but got "
      << "torch." << scalar_type_name(indices.dtype()) << "Tensor instead (while checking arguments for "
      << "embedding_backward)";
  EMBER_CHECK(grad.dim() >= 1) << "embedding_dense_backward: grad_output must have at least one dimension";
  // n and D over SymInt (sym_numel, sym_size): a symbolic batch of indices stays symbolic.
  const SymInt n = sym_numel(indices), D = sym_size(grad, -1);
  Tensor g = grad.reshape({n, D});
  Tensor flat = indices.reshape({n});
  const TensorOptions like_grad = TensorOptions(g.dtype()).device(g.device());
  if (a[4].to_bool()) {
    Tensor counts = index_put(zeros({num_weights}, like_grad), {flat}, ones({n}, like_grad), /*accumulate=*/true);
    g = g * reciprocal(index(counts, {flat})).unsqueeze(1);
  }
  g = masked_fill(g, (flat == padding_idx).unsqueeze(1), 0);
  return {index_put(zeros({num_weights, D}, like_grad), {flat}, g, /*accumulate=*/true)};
}

}  // namespace

void register_nn_backward_ops(Registry& r) {
  r.def("convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, "
        "SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, "
        "SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)")
      .set_meta(convolution_backward_meta)
      .set_cpu(convolution_backward_kernel)
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        const ConvSetup s = conv_backward_setup(a);
        with_contiguous_outputs(out, [&](std::vector<Tensor>& slots) {
          if (s.dims == 3)  // Note [3-D convolution] in conv.cpp
            kernels::cuda::conv_backward(a[0].to_tensor(), a[1].to_tensor(), a[2].to_tensor(), slots, s.p3,
                                         s.transposed, config().backends.cudnn.allow_tf32);
          else
            kernels::cuda::conv_backward(a[0].to_tensor(), a[1].to_tensor(), a[2].to_tensor(), slots, s.p,
                                         s.transposed, config().backends.cudnn.allow_tf32);
        });
      });

  r.def("max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, "
        "int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor")
      .set_meta([](const Stack& a) {
        max_pool_backward_setup(a);
        return metas(like_self(a));
      })
      .set_cpu(max_pool_backward_kernel)
      .set_cuda(max_pool_backward_kernel);
  r.def("avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, "
        "bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor")
      .set_meta([](const Stack& a) {
        avg_pool_backward_setup(a);
        return metas(like_self(a));
      })
      .set_cpu(avg_pool_backward_kernel)
      .set_cuda(avg_pool_backward_kernel);
  r.def("_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor")
      .set_meta([](const Stack& a) {
        adaptive_backward_setup(a);
        return metas(like_self(a));
      })
      .set_cpu(adaptive_avg_pool_backward_kernel)
      .set_cuda(adaptive_avg_pool_backward_kernel);

  r.def("native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean, "
        "Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float eps, bool[3] output_mask) "
        "-> (Tensor, Tensor, Tensor)")
      .set_meta([](const Stack& a) {
        const BatchNormBackwardSetup s = batch_norm_backward_setup(a);
        const Tensor& input = a[1].to_tensor();
        const auto& mask = output_mask(a[9]);
        // grad_input in the input's memory format, as ATen's CPU kernel allocates it; ATen's
        // CUDA kernel does so in training only (an evaluation's grad_input is contiguous).
        const bool channels_last = suggests_channels_last(input) && (!input.is_cuda() || a[7].to_bool());
        if (cuda_reduces_without_weight(a)) {
          const ScalarType acc = is_reduced_float(input.dtype()) ? kFloat : input.dtype();
          return std::vector<TensorMeta>{maybe_meta(mask[0], input.sizes(), input.dtype(), input.device(), channels_last),
                                         contiguous_meta({0}, acc, input.device()), contiguous_meta({0}, acc, input.device())};
        }
        return std::vector<TensorMeta>{maybe_meta(mask[0], input.sizes(), input.dtype(), input.device(), channels_last),
                                       maybe_meta(mask[1], {s.C}, s.param_type, input.device()),
                                       maybe_meta(mask[2], {s.C}, s.param_type, input.device())};
      })
      .set_cpu(batch_norm_backward_kernel)
      .set_cuda(batch_norm_backward_kernel);

  r.def("embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, "
        "bool scale_grad_by_freq) -> Tensor")
      .set_decomposition(embedding_dense_backward_decomposition);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_at;
using ops::call_tensor;

using ops::masked3;

std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad_output, const Tensor& input,
                                                        const Tensor& weight, std::optional<IntArrayRef> bias_sizes,
                                                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                                        bool transposed, IntArrayRef output_padding, int64_t groups,
                                                        std::array<bool, 3> output_mask, Loc loc) {
  return masked3(call_at(EMBER_OP("aten::convolution_backward"),
                         {grad_output, input, weight, bias_sizes ? IValue(*bias_sizes) : IValue(), stride, padding,
                          dilation, transposed, output_padding, groups,
                          std::vector<bool>(output_mask.begin(), output_mask.end())},
                         loc));
}
Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                        const Tensor& indices, Loc loc) {
  return call_tensor(EMBER_OP("aten::max_pool2d_with_indices_backward"),
                     {grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices}, loc);
}
Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                           IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override, Loc loc) {
  return call_tensor(EMBER_OP("aten::avg_pool2d_backward"),
                     {grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override},
                     loc);
}
Tensor _adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, Loc loc) {
  return call_tensor(EMBER_OP("aten::_adaptive_avg_pool2d_backward"), {grad_output, self}, loc);
}
std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward(
    const Tensor& grad_out, const Tensor& input, const std::optional<Tensor>& weight,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    const std::optional<Tensor>& save_mean, const std::optional<Tensor>& save_invstd, bool train, double eps,
    std::array<bool, 3> output_mask, Loc loc) {
  return masked3(call_at(EMBER_OP("aten::native_batch_norm_backward"),
                         {grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps,
                          std::vector<bool>(output_mask.begin(), output_mask.end())},
                         loc));
}
Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices, const SymInt& num_weights,
                                int64_t padding_idx, bool scale_grad_by_freq, Loc loc) {
  return call_tensor(EMBER_OP("aten::embedding_dense_backward"),
                     {grad_output, indices, num_weights, padding_idx, scale_grad_by_freq}, loc);
}

}  // namespace ember
