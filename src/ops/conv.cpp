// ops/conv.cpp — convolution and pooling: aten::convolution (1-D, 2-D and 3-D, grouped,
// strided, padded, dilated, transposed) with its composites conv1d/conv2d, and 2-D max, average and
// adaptive-average pooling. Shape checks and messages follow ATen's; the kernels live in
// kernels/cpu/conv.cpp and, on CUDA, kernels/cuda/conv.cpp (cuDNN) and kernels/cuda/pool.cpp.
#include <array>
#include <sstream>

#include "core/shape.h"
#include "core/sym_geometry.h"
#include "ember/config.h"
#include "ember/ops/creation.h"
#include "ember/ops/nn.h"
#include "kernels/cpu/conv.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/pool.h"
#include "ops/api.h"
#include "ops/conv_geometry.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

using kernels::cpu::Conv2dParams;
using kernels::cpu::Pool2dParams;

Tensor dense(const Tensor& t) {
  return t.is_contiguous() ? t : call_op_tensor("aten::clone", {t, std::string("contiguous_format")});
}

// --- convolution -----------------------------------------------------------------------

/// ATen's expand_param_if_needed: one value stands for every spatial dim.
std::vector<int64_t> expand_param(const std::vector<int64_t>& v, const char* name, int64_t dims) {
  if (v.size() == 1) return std::vector<int64_t>(static_cast<size_t>(dims), v[0]);
  EMBER_CHECK(static_cast<int64_t>(v.size()) == dims)
      << "expected " << name << " to be a single integer value or a list of " << dims
      << " values to match the convolution dimensions, but got " << name << "=" << IntArrayRef(v);
  return v;
}

/// The geometry shared by convolution and its transpose, with 1-D convolutions expressed
/// as 2-D ones of height 1 (as ATen does). Output sizes are left to the caller.
Conv2dParams conv_params(const Tensor& input, const Tensor& weight, const std::vector<int64_t>& stride,
                         const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, int64_t groups) {
  const int64_t dims = weight.dim() - 2;
  const IntArrayRef ws = weight.sizes();
  Conv2dParams p;
  p.batch = input.size(0);
  p.in_channels = input.size(1);
  p.out_channels = ws[0];
  p.groups = groups;
  auto at = [&](const std::vector<int64_t>& v, int64_t i, int64_t one) { return dims == 2 ? v[i] : (i == 0 ? one : v[0]); };
  p.in_h = dims == 2 ? input.size(2) : 1;
  p.in_w = input.size(dims == 2 ? 3 : 2);
  p.kernel_h = dims == 2 ? ws[2] : 1;
  p.kernel_w = ws[dims == 2 ? 3 : 2];
  p.stride_h = at(stride, 0, 1);
  p.stride_w = at(stride, 1, 1);
  p.pad_h = at(padding, 0, 0);
  p.pad_w = at(padding, 1, 0);
  p.dilation_h = at(dilation, 0, 1);
  p.dilation_w = at(dilation, 1, 1);
  return p;
}

/// The dtype checks of ATen's convolution kernels: input and weight of one dtype, not bool.
void check_conv_dtypes(const Tensor& input, const Tensor& weight, int64_t dims, const char* kernel) {
  EMBER_CHECK_KIND(ErrorKind::NotImplementedError, dims <= 3)
      << "convolution: only 1-D, 2-D and 3-D convolutions are implemented, got a " << dims << "-D convolution";
  EMBER_CHECK(weight.dtype() == input.dtype())
      << "expected scalar type " << scalar_type_name(input.dtype()) << " but found "
      << scalar_type_name(weight.dtype());
  if (input.dtype() == kBool) not_implemented(kernel, input.dtype());
}

// Note [3-D convolution]: a 3-D convolution (5-D input, as exported 3-D CNNs call
// aten::convolution) keeps its own geometry (Conv3dParams) and its own kernels over NCDHW
// tensors (kernels/cpu/conv3d.h), forward, transposed and backward alike: float32 on
// oneDNN's 3-D convolution primitives (conv3d_dnnl.cpp), every other dtype, and what
// oneDNN rejects, as direct loops (conv3d.cpp); the 2-D kernels are written over
// Conv2dParams' two spatial dims.
// The checks and output sizes are ATen's (check_shape_forward, slow_conv3d and
// slow_conv_transpose3d). The result's layout is PyTorch's: on the CPU only its oneDNN
// (mkldnn) convolution keeps NDHWC, its slow_conv3d path returns NCDHW. So a result is
// channels_last_3d (computed NCDHW and copied) when the input or the weight suggests
// channels_last_3d and ConvParams::use_mkldnn would pick oneDNN: bfloat16 always; float32
// when groups > 1, the kernel's last two dims both > 3, a batch > 1 or N*C*D*H > 20480
// (and, transposed, no output_padding >= stride). use_mkldnn's clause on one thread with
// 1x1 kernels, and float16 (oneDNN only on CPUs with native fp16), are taken as NCDHW.
// Since that rule reads sizes, spatial_meta.cpp evaluates it once more over SymInt
// (sym_conv_channels_last: a symbolic batch is above 1, so a float32 channels_last_3d
// input keeps NDHWC at every size; N*C*D*H > 20480 of a batch of 1 is a guard).
// On CUDA a 3-D convolution runs on cuDNN as the 2-D ones do (kernels/cuda/conv.h, over
// NCDHW: Nd tensor, filter and convolution descriptors of 5 dims and 3 spatial ones, the
// same plan cache, algorithm choice and workspace), forward, transposed and backward; its
// layout is cuDNN's rule as PyTorch's (cudnn_conv_suggest_memory_format): channels_last_3d
// when the input or the weight suggests it, but never float64, and not for a transposed
// convolution with an output_padding at least its stride (PyTorch's use_cudnn refuses it:
// slow_conv_transpose3d, contiguous). The result (and gradients) are computed NCDHW and
// copied into that layout.

/// The geometry of a 3-D convolution (transposed: the convolution it is the transpose of,
/// from its output back to its input) and its output sizes; the arguments are checked.
ConvSetup conv3d_setup(const Tensor& input, const Tensor& weight, const std::vector<int64_t>& stride,
                       const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                       const std::vector<int64_t>& output_padding, int64_t groups, bool transposed) {
  const IntArrayRef ws = weight.sizes();
  ConvSetup s;
  s.dims = 3;
  s.transposed = transposed;
  kernels::cpu::Conv3dParams& q = s.p3;
  q.batch = input.size(0);
  q.groups = groups;
  q.in_channels = transposed ? ws[1] * groups : input.size(1);
  q.out_channels = transposed ? input.size(1) : ws[0];
  std::array<int64_t, 3> sizes{};
  std::ostringstream in_ss, out_ss;
  for (size_t i = 0; i < 3; ++i) {
    q.kernel[i] = ws[i + 2];
    q.stride[i] = stride[i];
    q.pad[i] = padding[i];
    q.dilation[i] = dilation[i];
    EMBER_CHECK(dilation[i] > 0) << "dilation should be greater than zero, but got " << IntArrayRef(dilation);
    const int64_t in = input.size(static_cast<int64_t>(i) + 2), extent = dilation[i] * (ws[i + 2] - 1) + 1;
    if (transposed) {
      EMBER_CHECK(output_padding[i] < stride[i] || output_padding[i] < dilation[i])
          << "output padding must be smaller than either stride or dilation, but got output_padding "
          << IntArrayRef(output_padding) << ", stride " << IntArrayRef(stride) << " and dilation "
          << IntArrayRef(dilation);
      sizes[i] = (in - 1) * stride[i] - 2 * padding[i] + extent + output_padding[i];
      q.out[i] = in;
      q.in[i] = sizes[i];
    } else {
      sizes[i] = (in + 2 * padding[i] - extent) / stride[i] + 1;
      q.in[i] = in;
      q.out[i] = sizes[i];
    }
    in_ss << (i ? " x " : "") << in;
    out_ss << (i ? " x " : "") << sizes[i];
  }
  for (int64_t v : sizes)
    EMBER_CHECK(v >= 1) << "Given input size per channel: (" << in_ss.str()
                        << "). Calculated output size per channel: (" << out_ss.str() << "). Output size is too small";
  s.p.batch = q.batch;
  s.p.groups = groups;
  s.p.in_channels = input.size(1);
  s.p.out_channels = transposed ? q.in_channels : q.out_channels;
  s.out_sizes = {q.batch, s.p.out_channels, sizes[0], sizes[1], sizes[2]};
  bool big_output_padding = false;
  for (size_t i = 0; i < 3; ++i) big_output_padding |= transposed && output_padding[i] >= stride[i];
  const bool onednn_float = input.dtype() == kFloat &&
                            (groups > 1 || (ws[3] > 3 && ws[4] > 3) || q.batch > 1 ||
                             input.size(0) * input.size(1) * input.size(2) * input.size(3) > 20480);
  const bool onednn = !big_output_padding && (input.dtype() == kBFloat16 || onednn_float);
  // On CUDA cuDNN's rule (conv_channels_last: never float64), where cuDNN runs: PyTorch's
  // slow_conv_transpose3d takes an output_padding past the stride, contiguous.
  s.channels_last = (input.is_cuda() ? !big_output_padding : onednn) && conv_channels_last(input, weight);
  return s;
}

/// c10's is_channels_last_strides_3d: whether a 5-D tensor is laid out NDHWC (channels
/// fastest, then W, H, D, N), ambiguous layouts read as NCDHW; over SymInt as the 2-D rule.
template <typename Int>
bool is_channels_last_strides_3d(const std::vector<Int>& sizes, const std::vector<Int>& strides) {
  if (sizes.size() != 5 || strides[1] == 0) return false;
  Int min = 0;
  for (int d : {1, 4, 3, 2, 0}) {
    if (sizes[d] == 0 || strides[d] < min) return false;
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min = min * sizes[d];
  }
  return true;
}

/// Whether a 5-D tensor suggests channels_last_3d (c10's suggest_memory_format).
bool suggests_channels_last_3d(const Tensor& t) {
  if (t.dim() != 5) return false;
  if (core::is_symbolic(t)) return is_channels_last_strides_3d(core::sym_sizes(t), core::sym_strides(t));
  const IntArrayRef sz = t.sizes(), st = t.strides();
  return is_channels_last_strides_3d(std::vector<int64_t>(sz.begin(), sz.end()),
                                     std::vector<int64_t>(st.begin(), st.end()));
}

/// The transposed branch of ATen's check_shape_forward plus slow_conv_transpose2d's checks.
ConvSetup conv_transpose_setup(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                               const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                               const std::vector<int64_t>& dilation, const std::vector<int64_t>& output_padding,
                               int64_t groups) {
  const IntArrayRef ws = weight.sizes();
  const int64_t dims = weight.dim() - 2;
  EMBER_CHECK(input.size(1) == ws[0]) << "Given transposed=1, weight of size " << ws << ", expected input"
                                      << input.sizes() << " to have " << ws[0] << " channels, but got "
                                      << input.size(1) << " channels instead";
  EMBER_CHECK(!bias || (bias->dim() == 1 && bias->size(0) == ws[1] * groups))
      << "Given transposed=1, weight of size " << ws << ", expected bias to be 1-dimensional with " << ws[1] * groups
      << " elements, but got bias of size " << bias->sizes() << " instead";
  check_conv_dtypes(input, weight, dims, "slow_conv_transpose2d_out_cpu");
  if (dims == 3) return conv3d_setup(input, weight, stride, padding, dilation, output_padding, groups, true);
  ConvSetup s;
  s.p = conv_params(input, weight, stride, padding, dilation, groups);
  Conv2dParams& p = s.p;
  const int64_t op_h = dims == 2 ? output_padding[0] : 0, op_w = output_padding[dims == 2 ? 1 : 0];
  EMBER_CHECK(p.dilation_h > 0 && p.dilation_w > 0) << "dilation should be greater than zero, but got dilation_height: "
                                                    << p.dilation_h << ", dilation_width: " << p.dilation_w;
  EMBER_CHECK((op_w < p.stride_w || op_w < p.dilation_w) && (op_h < p.stride_h || op_h < p.dilation_h))
      << "output padding must be smaller than either stride or dilation, but got output_padding_height: " << op_h
      << " output_padding_width: " << op_w << " stride_height: " << p.stride_h << " stride_width: " << p.stride_w
      << " dilation_height: " << p.dilation_h << " dilation_width: " << p.dilation_w;
  p.out_channels = ws[1] * groups;
  p.out_h = (p.in_h - 1) * p.stride_h - 2 * p.pad_h + p.dilation_h * (p.kernel_h - 1) + 1 + op_h;
  p.out_w = (p.in_w - 1) * p.stride_w - 2 * p.pad_w + p.dilation_w * (p.kernel_w - 1) + 1 + op_w;
  EMBER_CHECK(p.out_h >= 1 && p.out_w >= 1)
      << "Given input size per channel: (" << p.in_h << " x " << p.in_w << "). Calculated output size per channel: ("
      << p.out_h << " x " << p.out_w << "). Output size is too small";
  s.transposed = true;
  s.out_sizes = {p.batch, p.out_channels};
  if (dims == 2) s.out_sizes.push_back(p.out_h);
  s.out_sizes.push_back(p.out_w);
  return s;
}

}  // namespace

// ATen makes a 3-D (1-D convolution) input contiguous before its 4-D view of it, "to avoid
// accidentally going through NHWC": only 4-D tensors suggest channels_last. On CUDA it
// follows cuDNN's rule (cudnn_conv_suggest_memory_format): never for float64.
bool conv_channels_last(const Tensor& input, const Tensor& weight) {
  if (input.is_cuda() && (input.dtype() == kDouble || weight.dtype() == kDouble)) return false;
  if (input.dim() == 5) return suggests_channels_last_3d(input) || suggests_channels_last_3d(weight);
  return suggests_channels_last(input) || suggests_channels_last(weight);
}

// Note [channels_last transposed convolution on CUDA]: on CUDA PyTorch runs a transposed
// convolution on cuDNN only when every output_padding is below its stride
// (ConvParams::use_cudnn's is_output_padding_big); a larger one (allowed below the
// dilation) goes to slow_conv_transpose2d (slow_conv_transpose3d for 3-D), whose memory
// format is contiguous on CUDA (thnn_conv_use_channels_last holds only on the CPU). So a
// channels_last input or weight there gives a contiguous output, grad_input and
// grad_weight. On the CPU oneDNN (or thnn) keeps channels_last for any output_padding.

namespace {

/// The memory format of a 1-D or 2-D convolution's result and gradients: Note [channels_last
/// convolution], less Note [channels_last transposed convolution on CUDA].
bool conv2d_channels_last(const Tensor& input, const Tensor& weight, const std::vector<int64_t>& stride,
                          const std::vector<int64_t>& output_padding, bool transposed) {
  if (!conv_channels_last(input, weight)) return false;
  if (!transposed || !input.is_cuda()) return true;
  for (size_t i = 0; i < stride.size(); ++i)
    if (output_padding[i] >= stride[i]) return false;
  return true;
}

}  // namespace

ConvSetup conv_setup(const Stack& a) {
  const Tensor& input = a[0].to_tensor();
  const Tensor& weight = a[1].to_tensor();
  const std::optional<Tensor> bias = a[2].to_optional_tensor();
  check_defined(input, "input");
  check_defined(weight, "weight");
  const int64_t k = weight.dim();
  EMBER_CHECK(k - 2 > 0) << "weight should have at least three dimensions";
  const int64_t groups = a[8].to_int();
  EMBER_CHECK(groups > 0) << "non-positive groups is not supported";
  const int64_t dims = k - 2;
  const auto stride = expand_param(a[3].to_int_list(), "stride", dims);
  const auto padding = expand_param(a[4].to_int_list(), "padding", dims);
  const auto dilation = expand_param(a[5].to_int_list(), "dilation", dims);
  const bool transposed = a[6].to_bool();
  const auto output_padding = expand_param(a[7].to_int_list(), "output_padding", dims);

  for (int64_t v : padding) EMBER_CHECK(v >= 0) << "negative padding is not supported";
  for (int64_t v : output_padding) EMBER_CHECK(v >= 0) << "negative output_padding is not supported";
  for (int64_t v : stride) EMBER_CHECK(v > 0) << "non-positive stride is not supported";
  const IntArrayRef ws = weight.sizes();
  EMBER_CHECK(input.dim() == k) << "Expected " << k << "-dimensional input for " << k << "-dimensional weight " << ws
                                << ", but got " << input.dim() << "-dimensional input of size " << input.sizes()
                                << " instead";
  EMBER_CHECK(ws[0] >= groups) << "Given groups=" << groups << ", expected weight to be at least " << groups
                               << " at dimension 0, but got weight of size " << ws << " instead";
  EMBER_CHECK(ws[0] % groups == 0) << "Given groups=" << groups << ", expected weight to be divisible by " << groups
                                   << " at dimension 0, but got weight of size [" << ws << "] instead";
  if (transposed) {
    ConvSetup s = conv_transpose_setup(input, weight, bias, stride, padding, dilation, output_padding, groups);
    if (s.dims != 3) s.channels_last = conv2d_channels_last(input, weight, stride, output_padding, true);
    return s;
  }
  EMBER_CHECK(input.size(1) == ws[1] * groups)
      << "Given groups=" << groups << ", weight of size " << ws << ", expected input" << input.sizes() << " to have "
      << ws[1] * groups << " channels, but got " << input.size(1) << " channels instead";
  EMBER_CHECK(!bias || (bias->dim() == 1 && bias->size(0) == ws[0]))
      << "Given weight of size " << ws << ", expected bias to be 1-dimensional with " << ws[0]
      << " elements, but got bias of size " << bias->sizes() << " instead";
  bool kernel_fits = true;
  std::ostringstream in_ss, ker_ss;
  for (int64_t i = 0; i < dims; ++i) {
    const int64_t padded = input.size(i + 2) + 2 * padding[i];
    const int64_t extent = dilation[i] * (ws[i + 2] - 1) + 1;
    if (padded < extent) kernel_fits = false;
    in_ss << (i ? " x " : "") << padded;
    ker_ss << (i ? " x " : "") << extent;
  }
  EMBER_CHECK(kernel_fits) << "Calculated padded input size per channel: (" << in_ss.str() << "). Kernel size: ("
                           << ker_ss.str() << "). Kernel size can't be greater than actual input size";
  for (int64_t v : dilation)
    EMBER_CHECK(v > 0) << "dilation should be greater than zero, but got " << IntArrayRef(dilation);
  check_conv_dtypes(input, weight, dims, dims == 3 ? "slow_conv3d_cpu" : "slow_conv2d_cpu");
  if (dims == 3) return conv3d_setup(input, weight, stride, padding, dilation, output_padding, groups, false);

  ConvSetup s;
  s.p = conv_params(input, weight, stride, padding, dilation, groups);
  Conv2dParams& p = s.p;
  p.out_h = (p.in_h + 2 * p.pad_h - p.dilation_h * (p.kernel_h - 1) - 1) / p.stride_h + 1;
  p.out_w = (p.in_w + 2 * p.pad_w - p.dilation_w * (p.kernel_w - 1) - 1) / p.stride_w + 1;
  s.out_sizes = {p.batch, p.out_channels};
  if (dims == 2) s.out_sizes.push_back(p.out_h);
  s.out_sizes.push_back(p.out_w);
  s.channels_last = conv2d_channels_last(input, weight, stride, output_padding, false);
  return s;
}

namespace {

/// The input check of ATen's 1-D poolings (checkDimRange(self, 2, 4)): `self` is 2-D
/// (unbatched) or 3-D (batched); `name` is the op, as ATen names it in the message.
void check_pool1d_input(const Tensor& self, const char* name) {
  check_defined(self, "self");
  EMBER_CHECK(self.dim() == 2 || self.dim() == 3)
      << "Expected 2 to 3 dimensions, but got " << self.dim() << "-dimensional tensor for argument #1 'self' "
      << "(while checking arguments for " << name << ")";
}

/// ATen's check1d: a 1-D pooling's list argument `arg` of op `name` holds exactly one int.
void check_pool1d_list(const std::vector<int64_t>& values, const char* name, const char* arg) {
  EMBER_CHECK(values.size() == 1) << name << "() argument '" << arg << "' should contain one int (got "
                                  << values.size() << ")";
}

/// conv1d/conv2d: accept unbatched input (ATen's batchify), then call convolution.
Stack conv_nd(const Stack& a, int64_t spatial, const char* name) {
  const Tensor& input = a[0].to_tensor();
  check_defined(input, "input");
  const bool batched = input.dim() == spatial + 2;
  EMBER_CHECK(batched || input.dim() == spatial + 1)
      << "Expected " << spatial + 1 << "D (unbatched) or " << spatial + 2 << "D (batched) input to " << name
      << ", but got input of size: " << input.sizes();
  Tensor in = batched ? input : call_op_tensor("aten::unsqueeze", {input, int64_t{0}});
  Tensor out = call_op_tensor("aten::convolution", {in, a[1], a[2], a[3], a[4], a[5], false,
                                                    std::vector<int64_t>{0}, a[6]});
  if (batched) return {out};
  return call_op("aten::squeeze.dim", {out, int64_t{0}});
}

/// aten::convolution on the CPU. A channels_last float32 convolution runs oneDNN over the
/// NHWC activations as they are; the other kernels take contiguous tensors, their result
/// copied into a channels_last output.
void convolution_cpu(const Stack& a, std::vector<Tensor>& out) {
  ConvSetup s = conv_setup(a);
  if (s.dims == 3) {  // Note [3-D convolution]
    if (s.channels_last && !s.transposed && a[0].to_tensor().dtype() == kFloat && is_channels_last_dense(out[0])) {
      // float32 NDHWC: oneDNN reads and writes the activations as they are.
      kernels::cpu::Conv3dParams q = s.p3;
      q.channels_last = true;
      const Tensor input = channels_last_dense(a[0].to_tensor()), weight = dense(a[1].to_tensor());
      const Tensor bias = a[2].is_none() ? Tensor() : dense(cast(a[2].to_tensor(), kFloat));
      if (kernels::cpu::conv3d_forward_dnnl(input.data_ptr<float>(), weight.data_ptr<float>(),
                                            bias.defined() ? bias.data_ptr<float>() : nullptr, out[0].data_ptr<float>(),
                                            q))
        return;
    }
    const Tensor input = dense(a[0].to_tensor());
    const Tensor weight = dense(a[1].to_tensor());
    Tensor bias;
    if (!a[2].is_none()) bias = dense(cast(a[2].to_tensor(), input.dtype()));
    with_contiguous_outputs(out, [&](std::vector<Tensor>& slots) {
      if (s.transposed)
        kernels::cpu::conv3d_transpose(input, weight, bias, slots[0], s.p3);
      else
        kernels::cpu::conv3d_forward(input, weight, bias, slots[0], s.p3);
    });
    return;
  }
  const Tensor& x = a[0].to_tensor();
  const bool channels_last = conv_channels_last(x, a[1].to_tensor());
  const bool sums_something = s.p.in_channels > 0 && s.p.kernel_h > 0 && s.p.kernel_w > 0;
  s.p.channels_last = channels_last && !s.transposed && x.dtype() == kFloat && sums_something;
  const Tensor input = s.p.channels_last ? channels_last_dense(x) : dense(x);
  const Tensor weight = dense(a[1].to_tensor());
  Tensor bias;
  if (!a[2].is_none()) bias = dense(cast(a[2].to_tensor(), input.dtype()));
  const bool via_copy = channels_last && !s.p.channels_last && out[0].numel() > 0;
  const Tensor result = via_copy ? empty(out[0].sizes(), out[0].dtype()) : out[0];
  if (s.transposed)
    kernels::cpu::conv_transpose2d_forward(input, weight, bias, result, s.p);
  else
    kernels::cpu::conv2d_forward(input, weight, bias, result, s.p);
  if (via_copy) out[0].copy_(result);
}

// --- pooling ---------------------------------------------------------------------------

/// ATen's div_rtn: division rounding toward negative infinity.
int64_t div_rtn(int64_t x, int64_t y) {
  int64_t q = x / y, r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) --q;
  return q;
}

}  // namespace

int64_t pooling_output_shape(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  EMBER_CHECK(stride != 0) << "stride should not be zero";
  EMBER_CHECK(pad >= 0) << "pad must be non-negative, but got pad: " << pad;
  EMBER_CHECK(pad <= kernel / 2) << "pad should be at most half of kernel size, but got pad=" << pad
                                 << " and kernel_size=" << kernel;
  int64_t out = div_rtn(in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  // The last window must start inside the input (or its left padding).
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

SymInt pooling_output_shape(const SymInt& in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                            bool ceil_mode) {
  (void)pooling_output_shape(int64_t{2}, kernel, pad, stride, dilation, ceil_mode);  // the argument checks only
  SymInt out = (in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) out = out - 1;
  return out;
}

namespace {

void pool2d_shape_check(const Tensor& input, const Pool2dParams& p, int64_t planes) {
  EMBER_CHECK(p.kernel_w > 0 && p.kernel_h > 0)
      << "kernel size should be greater than zero, but got kH: " << p.kernel_h << " kW: " << p.kernel_w;
  EMBER_CHECK(p.stride_w > 0 && p.stride_h > 0)
      << "stride should be greater than zero, but got dH: " << p.stride_h << " dW: " << p.stride_w;
  EMBER_CHECK(p.dilation_h > 0 && p.dilation_w > 0) << "dilation should be greater than zero, but got dilationH: "
                                                    << p.dilation_h << " dilationW: " << p.dilation_w;
  const int64_t nd = input.dim();
  const bool valid_dims = nd >= 3 && input.size(1) != 0 && input.size(2) != 0;
  EMBER_CHECK((nd == 3 && input.size(0) != 0 && valid_dims) || (nd == 4 && valid_dims && input.size(3) != 0))
      << "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:" << input.sizes();
  EMBER_CHECK(p.kernel_w / 2 >= p.pad_w && p.kernel_h / 2 >= p.pad_h)
      << "pad should be smaller than or equal to half of kernel size, but got padW = " << p.pad_w
      << ", padH = " << p.pad_h << ", kW = " << p.kernel_w << ", kH = " << p.kernel_h;
  EMBER_CHECK(p.out_w >= 1 && p.out_h >= 1)
      << "Given input size: (" << planes << "x" << p.in_h << "x" << p.in_w << "). Calculated output size: (" << planes
      << "x" << p.out_h << "x" << p.out_w << "). Output size is too small";
}

/// Reads a pooling int[2] argument that may also be given as one int (or, for stride,
/// omitted: then it is the kernel size).
std::pair<int64_t, int64_t> pair_arg(const std::vector<int64_t>& v, bool ok, const char* message) {
  EMBER_CHECK(ok) << message;
  return {v[0], v.size() == 1 ? v[0] : v[1]};
}

/// Geometry of max_pool2d_with_indices (dilation given) or avg_pool2d (dilation 1).
Pool2dParams pool2d_setup(const Tensor& input, const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                          const std::vector<int64_t>& padding, const std::vector<int64_t>* dilation, bool ceil_mode,
                          const char* name) {
  const std::string n = name;
  Pool2dParams p;
  std::tie(p.kernel_h, p.kernel_w) = pair_arg(kernel, kernel.size() == 1 || kernel.size() == 2,
                                              (n + ": kernel_size must either be a single int, or a tuple of two ints").c_str());
  EMBER_CHECK(stride.size() <= 2) << n << ": stride must either be omitted, a single int, or a tuple of two ints";
  if (stride.empty()) {
    p.stride_h = p.kernel_h;
    p.stride_w = p.kernel_w;
  } else {
    std::tie(p.stride_h, p.stride_w) = pair_arg(stride, true, "");
  }
  std::tie(p.pad_h, p.pad_w) =
      pair_arg(padding, padding.size() == 1 || padding.size() == 2,
               (n + (dilation ? ": padding must be either be a single int, or a tuple of two ints"
                              : ": padding must either be a single int, or a tuple of two ints"))
                   .c_str());
  if (dilation) {
    std::tie(p.dilation_h, p.dilation_w) =
        pair_arg(*dilation, dilation->size() == 1 || dilation->size() == 2,
                 (n + ": dilation must be either a single int, or a tuple of two ints").c_str());
    EMBER_CHECK(input.dim() == 3 || input.dim() == 4) << "non-empty 3D or 4D (batch mode) tensor expected for input";
  }
  const int64_t planes = input.size(core::wrap_dim(-3, input.dim()));
  p.in_h = input.size(-2);
  p.in_w = input.size(-1);
  p.out_h = pooling_output_shape(p.in_h, p.kernel_h, p.pad_h, p.stride_h, p.dilation_h, ceil_mode);
  p.out_w = pooling_output_shape(p.in_w, p.kernel_w, p.pad_w, p.stride_w, p.dilation_w, ceil_mode);
  pool2d_shape_check(input, p, planes);
  p.planes = input.dim() == 4 ? input.size(0) * planes : planes;
  return p;
}

}  // namespace

std::vector<int64_t> pooled_sizes(const Tensor& input, int64_t out_h, int64_t out_w) {
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end() - 2);
  sizes.push_back(out_h);
  sizes.push_back(out_w);
  return sizes;
}

Pool2dParams max_pool_setup(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  Pool2dParams p = pool2d_setup(self, a[1].to_int_list(), a[2].to_int_list(), a[3].to_int_list(), &a[4].to_int_list(),
                                a[5].to_bool(), "max_pool2d");
  if (!is_floating_point(self.dtype())) not_implemented("max_pool2d", self.dtype());
  return p;
}

Pool2dParams avg_pool_setup(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const std::optional<int64_t> divisor = a[6].to_optional_int();
  Pool2dParams p = pool2d_setup(self, a[1].to_int_list(), a[2].to_int_list(), a[3].to_int_list(), nullptr,
                                a[4].to_bool(), "avg_pool2d");
  EMBER_CHECK(!divisor || *divisor != 0) << "divisor must be not zero";
  if (!is_floating_point(self.dtype()) && self.dtype() != kLong) not_implemented("avg_pool2d", self.dtype());
  return p;
}

Pool2dParams adaptive_setup(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const auto& size = a[1].to_int_list();
  EMBER_CHECK(size.size() == 2) << "adaptive_avg_pool2d: output_size must be 2";
  EMBER_CHECK(size[0] >= 0 && size[1] >= 0)
      << "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {" << size[0]
      << ", " << size[1] << "}";
  const int64_t nd = self.dim();
  EMBER_CHECK(nd == 3 || nd == 4) << "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got " << self.sizes();
  for (int64_t i : {-2, -1})
    EMBER_CHECK(self.size(i) > 0)
        << "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
        << self.sizes() << " with dimension " << i + nd << " being empty";
  if (!is_floating_point(self.dtype())) not_implemented("adaptive_avg_pool2d", self.dtype());
  Pool2dParams p;
  p.planes = nd == 4 ? self.size(0) * self.size(1) : self.size(0);
  p.in_h = self.size(-2);
  p.in_w = self.size(-1);
  p.out_h = size[0];
  p.out_w = size[1];
  return p;
}

namespace {

// --- pooling kernels (CPU and CUDA: the input made contiguous, the geometry checked) -----

// Note [channels_last max pooling]: max_pool2d_with_indices follows its input's memory
// format on the CPU as ATen's does (suggest_memory_format: a 4-D input that suggests
// channels_last gives channels_last values and indices), so activations between NHWC
// convolutions stay NHWC through a pooling (the exported CNN's conv -> bn -> relu ->
// max_pool2d -> conv under the inference layout optimization, Note [aot]); the NHWC kernel
// reads each window tap as one run of channels. Meta tensors follow the same rule (as
// PyTorch's meta function), on every device: PyTorch's CUDA kernel writes channels_last
// outputs for such an input too. Ember's CUDA kernel computes NCHW and copies into them.
void max_pool_kernel(const Stack& a, std::vector<Tensor>& out) {
  const Pool2dParams p = max_pool_setup(a);
  const Tensor& x = a[0].to_tensor();
  const auto nhwc_dense = [](const Tensor& t) {
    return t.strides() == IntArrayRef(core::channels_last_strides(t.sizes())) && !t.is_contiguous();
  };
  if (!x.is_cuda() && suggests_channels_last(x) && out[0].dim() == 4 && nhwc_dense(out[0]) && nhwc_dense(out[1])) {
    kernels::cpu::max_pool2d_forward_nhwc(channels_last_dense(x), out[0], out[1], x.size(1), p);
    return;
  }
  const Tensor input = dense(x);
  with_contiguous_outputs(out, [&](std::vector<Tensor>& slots) {
    if (input.is_cuda()) return kernels::cuda::max_pool2d(input, slots[0], slots[1], p);
    kernels::cpu::max_pool2d_forward(input, slots[0], slots[1], p);
  });
}

void avg_pool_kernel(const Stack& a, std::vector<Tensor>& out) {
  const Pool2dParams p = avg_pool_setup(a);
  const Tensor input = dense(a[0].to_tensor());
  const bool count_include_pad = a[5].to_bool();
  const std::optional<int64_t> divisor = a[6].to_optional_int();
  if (input.is_cuda()) return kernels::cuda::avg_pool2d(input, out[0], p, count_include_pad, divisor);
  kernels::cpu::avg_pool2d_forward(input, out[0], p, count_include_pad, divisor);
}

void adaptive_avg_pool_kernel(const Stack& a, std::vector<Tensor>& out) {
  const Pool2dParams p = adaptive_setup(a);
  const Tensor input = dense(a[0].to_tensor());
  if (input.is_cuda()) return kernels::cuda::adaptive_avg_pool2d(input, out[0], p);
  kernels::cpu::adaptive_avg_pool2d_forward(input, out[0], p);
}

}  // namespace

void register_conv_ops(Registry& r) {
  r.def("convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
        "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& input = a[0].to_tensor();
        const ConvSetup s = conv_setup(a);
        return metas(layout_meta(s.out_sizes, input.dtype(), input.device(),
                                 s.channels_last));
      })
      .set_cpu(convolution_cpu);

  // On CUDA, cuDNN (Note [cuda], "Convolution"); float32 may use TF32 unless
  // config().backends.cudnn.allow_tf32 is off.
  r.edit("aten::convolution").set_cuda([](const Stack& a, std::vector<Tensor>& out) {
    const ConvSetup s = conv_setup(a);
    const Tensor& input = a[0].to_tensor();
    if (!is_floating_point(input.dtype()))
      not_implemented(s.dims != 3 ? "slow_conv2d_cuda" : s.transposed ? "slow_conv_transpose3d_out_cuda"
                                                                      : "slow_conv_dilated<>",
                      input.dtype());
    Tensor bias;
    if (!a[2].is_none()) bias = cast(a[2].to_tensor(), input.dtype());
    // cuDNN runs over NCHW (NCDHW) here: a channels_last output is computed contiguous and copied.
    with_contiguous_outputs(out, [&](std::vector<Tensor>& slots) {
      if (s.dims == 3)  // Note [3-D convolution]
        kernels::cuda::conv_forward(input, a[1].to_tensor(), bias, slots[0], s.p3, s.transposed,
                                    config().backends.cudnn.allow_tf32);
      else
        kernels::cuda::conv_forward(input, a[1].to_tensor(), bias, slots[0], s.p, s.transposed,
                                    config().backends.cudnn.allow_tf32);
    });
  });

  r.def("conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0, "
        "SymInt[1] dilation=1, SymInt groups=1) -> Tensor")
      .set_decomposition([](const Stack& a) { return conv_nd(a, 1, "conv1d"); });
  r.def("conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, "
        "SymInt[2] dilation=1, SymInt groups=1) -> Tensor")
      .set_decomposition([](const Stack& a) { return conv_nd(a, 2, "conv2d"); });

  r.def("max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
        "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        const Pool2dParams p = max_pool_setup(a);
        const auto sizes = pooled_sizes(self, p.out_h, p.out_w);
        // Note [channels_last max pooling]
        const bool nhwc = suggests_channels_last(self);
        return std::vector<TensorMeta>{layout_meta(sizes, self.dtype(), self.device(), nhwc),
                                       layout_meta(sizes, kLong, self.device(), nhwc)};
      })
      .set_cpu(max_pool_kernel)
      .set_cuda(max_pool_kernel);
  r.def("max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, "
        "bool ceil_mode=False) -> Tensor")
      .set_decomposition([](const Stack& a) -> Stack {
        return {call_op("aten::max_pool2d_with_indices", a).at(0)};
      });

  r.def("avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, "
        "bool count_include_pad=True, int? divisor_override=None) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        const Pool2dParams p = avg_pool_setup(a);
        return metas(contiguous_meta(pooled_sizes(self, p.out_h, p.out_w), self.dtype(), self.device()));
      })
      .set_cpu(avg_pool_kernel)
      .set_cuda(avg_pool_kernel);

  r.def("_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        const Pool2dParams p = adaptive_setup(a);
        return metas(contiguous_meta(pooled_sizes(self, p.out_h, p.out_w), self.dtype(), self.device()));
      })
      .set_cpu(adaptive_avg_pool_kernel)
      .set_cuda(adaptive_avg_pool_kernel);
  // ATen special-cases output_size (1, 1) as a mean over H and W; the general kernel
  // computes the same average, so every size goes to _adaptive_avg_pool2d.
  r.def("adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor").set_decomposition([](const Stack& a) {
    const auto& size = a[1].to_int_list();
    EMBER_CHECK(size.size() == 2) << "adaptive_avg_pool2d: output_size must be 2";
    EMBER_CHECK(size[0] >= 0 && size[1] >= 0)
        << "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {" << size[0]
        << ", " << size[1] << "}";
    return call_op("aten::_adaptive_avg_pool2d", a);
  });

  // Note [1-D pooling]: avg_pool1d and adaptive_avg_pool1d are core ops that ATen computes
  // (CompositeImplicit) as their 2-D op over a height-1 input: unsqueeze(-2), the 2-D op
  // with a 1-wide window in H, squeeze(-2). Ember registers them as that decomposition, so
  // their gradients come from avg_pool2d's and _adaptive_avg_pool2d's derivative rows and
  // the inductor sees the 2-D op. The checks are ATen's checkDimRange/check1d, with its
  // messages.
  r.def("avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], bool ceil_mode=False, "
        "bool count_include_pad=True) -> Tensor")
      .set_decomposition([](const Stack& a) -> Stack {
        const Tensor& self = a[0].to_tensor();
        check_pool1d_input(self, "avg_pool1d");
        const std::vector<int64_t> kernel = a[1].to_int_list();
        std::vector<int64_t> stride = a[2].to_int_list();
        if (stride.empty()) stride = kernel;
        const std::vector<int64_t> padding = a[3].to_int_list();
        check_pool1d_list(kernel, "avg_pool1d", "kernel_size");
        check_pool1d_list(stride, "avg_pool1d", "stride");
        check_pool1d_list(padding, "avg_pool1d", "padding");
        const Tensor out = call_op_tensor(
            "aten::avg_pool2d", {call_op_tensor("aten::unsqueeze", {self, int64_t{-2}}),
                                 std::vector<int64_t>{1, kernel[0]}, std::vector<int64_t>{1, stride[0]},
                                 std::vector<int64_t>{0, padding[0]}, a[4], a[5], IValue()});
        return call_op("aten::squeeze.dim", {out, int64_t{-2}});
      });
  r.def("adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor").set_decomposition([](const Stack& a) -> Stack {
    const Tensor& self = a[0].to_tensor();
    check_pool1d_input(self, "adaptive_avg_pool1d");
    const std::vector<int64_t> size = a[1].to_int_list();
    check_pool1d_list(size, "adaptive_avg_pool1d", "output_size");
    const Tensor out = call_op_tensor("aten::adaptive_avg_pool2d", {call_op_tensor("aten::unsqueeze", {self, int64_t{-2}}),
                                                                    std::vector<int64_t>{1, size[0]}});
    return call_op("aten::squeeze.dim", {out, int64_t{-2}});
  });
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_at;
using ops::call_tensor;

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                   int64_t groups, Loc loc) {
  return call_tensor(EMBER_OP("aten::convolution"),
                     {input, weight, bias, stride, padding, dilation, transposed, output_padding, groups}, loc);
}
Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups, Loc loc) {
  return call_tensor(EMBER_OP("aten::conv1d"), {input, weight, bias, stride, padding, dilation, groups}, loc);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups, Loc loc) {
  return call_tensor(EMBER_OP("aten::conv2d"), {input, weight, bias, stride, padding, dilation, groups}, loc);
}
Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode, Loc loc) {
  return call_tensor(EMBER_OP("aten::max_pool2d"), {self, kernel_size, stride, padding, dilation, ceil_mode}, loc);
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                                   Loc loc) {
  return ops::tuple2(call_at(EMBER_OP("aten::max_pool2d_with_indices"),
                             {self, kernel_size, stride, padding, dilation, ceil_mode}, loc));
}
Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override, Loc loc) {
  return call_tensor(EMBER_OP("aten::avg_pool2d"),
                     {self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override}, loc);
}
Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size, Loc loc) {
  return call_tensor(EMBER_OP("aten::adaptive_avg_pool2d"), {self, output_size}, loc);
}
Tensor avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, Loc loc) {
  return call_tensor(EMBER_OP("aten::avg_pool1d"), {self, kernel_size, stride, padding, ceil_mode, count_include_pad},
                     loc);
}
Tensor adaptive_avg_pool1d(const Tensor& self, IntArrayRef output_size, Loc loc) {
  return call_tensor(EMBER_OP("aten::adaptive_avg_pool1d"), {self, output_size}, loc);
}

}  // namespace ember
