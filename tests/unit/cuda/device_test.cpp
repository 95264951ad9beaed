// The cuda device as seen without running a kernel: devices in the API, the dispatcher's
// device checks (mixed devices, ops without a CUDA kernel) on tensors that claim to live
// on cuda:0, which facets the registry has, the layout a 3-D convolution's meta function
// gives on CUDA, and what a machine without a GPU says.
#include <gtest/gtest.h>

#include <string>

#include "ember/cuda.h"
#include "ember/ember.h"
#include "gpu/cpu_only_op.h"
#include "core/shape.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "support/error_of.h"

namespace ember {
namespace {

/// A tensor on cuda:0 whose memory is never read: the checks under test raise first.
Tensor claimed_cuda_tensor(std::vector<int64_t> sizes) {
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = sizes;
  impl->strides = std::vector<int64_t>(sizes.size(), 1);
  if (!sizes.empty()) {
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d)
      impl->strides[static_cast<size_t>(d)] = impl->strides[static_cast<size_t>(d) + 1] * sizes[static_cast<size_t>(d) + 1];
  }
  impl->device = Device("cuda:0");
  impl->dtype = kFloat;
  impl->refresh();
  impl->storage = std::make_shared<Storage>(nullptr, 0, impl->device, nullptr);
  return Tensor(std::move(impl));
}

/// A claimed cuda:0 tensor of `dtype` stored NDHWC (channels_last_3d strides) when `ndhwc`.
Tensor claimed_cuda_5d(std::vector<int64_t> sizes, ScalarType dtype, bool ndhwc) {
  Tensor t = claimed_cuda_tensor(sizes);
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->dtype = dtype;
  if (ndhwc) {
    const int64_t c = sizes[1], d = sizes[2], h = sizes[3], w = sizes[4];
    impl->strides = {c * d * h * w, 1, h * w * c, w * c, c};
  }
  impl->refresh();
  return Tensor(std::move(impl));
}

/// Whether a meta's strides are channels_last_3d's for its sizes.
bool ndhwc_meta(const TensorMeta& m) {
  const auto& s = m.sizes;
  return m.strides == std::vector<int64_t>{s[1] * s[2] * s[3] * s[4], 1, s[3] * s[4] * s[1], s[4] * s[1], s[1]};
}

TEST(CudaDevice, ThreeDimensionalConvolutionOnCudaFollowsCudnnsLayoutRule) {
  // PyTorch's cudnn_conv_suggest_memory_format: on CUDA a 3-D convolution whose input (or
  // weight) is channels_last_3d gives channels_last_3d outputs and gradients at any size
  // and for half too (the CPU's oneDNN rule keeps float32 of batch 1 and float16 NCDHW),
  // never in float64, and not for a transposed one with output_padding past its stride.
  const ops::OpDef& conv = ops::registry().get("aten::convolution");
  const ops::OpDef& back = ops::registry().get("aten::convolution_backward");
  ASSERT_TRUE(static_cast<bool>(conv.cuda));
  ASSERT_TRUE(static_cast<bool>(back.cuda));
  struct Case {
    ScalarType dtype;
    bool transposed;
    std::vector<int64_t> output_padding;
    bool channels_last;
  };
  const std::vector<int64_t> one{1, 1, 1}, zero{0, 0, 0};
  for (const Case& c : {Case{kFloat, false, zero, true}, Case{kHalf, false, zero, true},
                        Case{kBFloat16, false, zero, true}, Case{kDouble, false, zero, false},
                        Case{kFloat, true, zero, true}, Case{kFloat, true, {1, 0, 0}, false}}) {
    // Batch 1, 2 -> 3 channels, 3x3x3: the CPU's rule would keep float32 NCDHW here.
    const Tensor x = claimed_cuda_5d({1, 2, 4, 5, 6}, c.dtype, true);
    const Tensor w = claimed_cuda_5d(c.transposed ? std::vector<int64_t>{2, 3, 3, 3, 3}
                                                  : std::vector<int64_t>{3, 2, 3, 3, 3},
                                     c.dtype, false);
    // output_padding 1 past stride 1 is allowed below dilation 2.
    const std::vector<int64_t> dilation = c.output_padding == zero ? one : std::vector<int64_t>{2, 1, 1};
    const std::vector<TensorMeta> y =
        conv.meta({x, w, IValue(), one, one, dilation, c.transposed, c.output_padding, int64_t{1}});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(ndhwc_meta(y[0]), c.channels_last)
        << c.dtype << (c.transposed ? " transposed" : "") << ": strides " << IntArrayRef(y[0].strides);
    EXPECT_EQ(y[0].device.str(), "cuda:0");
    if (!c.channels_last) {
      EXPECT_EQ(y[0].strides, core::contiguous_strides(y[0].sizes)) << c.dtype;
    }
    const Tensor gy = claimed_cuda_5d(y[0].sizes, c.dtype, false);
    const std::vector<TensorMeta> g = back.meta({gy, x, w, IValue(), one, one, dilation, c.transposed,
                                                 c.output_padding, int64_t{1}, std::vector<bool>{true, true, false}});
    ASSERT_EQ(g.size(), 3u);
    EXPECT_EQ(ndhwc_meta(g[0]), c.channels_last) << c.dtype << " grad_input " << IntArrayRef(g[0].strides);
    EXPECT_EQ(ndhwc_meta(g[1]), c.channels_last) << c.dtype << " grad_weight " << IntArrayRef(g[1].strides);
  }
}

TEST(CudaDevice, DeviceStringsParseAndPrint) {
  EXPECT_EQ(Device("cuda:1").str(), "cuda:1");
  EXPECT_TRUE(Device("cuda").is_cuda());
  EXPECT_EQ(Device("cuda").index, -1);
  EXPECT_EQ(kCUDA.str(), "cuda");
}

TEST(CudaDevice, MixingCudaAndCpuTensorsRaisesPyTorchsError) {
  const Tensor g = claimed_cuda_tensor({2, 3});
  const Tensor c = ones({2, 3});
  ember::testing::expect_error([&] { add(g, c); },
                     "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!");
  ember::testing::expect_error([&] { mul(c, g); },
                     "Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0!");
}

TEST(CudaDevice, ACpuScalarBesideACudaTensorPutsTheResultOnTheGpu) {
  const Tensor g = claimed_cuda_tensor({});
  const Tensor c = scalar_tensor(2.0);
  EXPECT_EQ(ops::pointwise_meta({&c, &g}, kFloat).device.str(), "cuda:0");
  EXPECT_EQ(ops::pointwise_meta({&g, &c}, kFloat).device.str(), "cuda:0");
}

TEST(CudaDevice, OpWithoutACudaKernelRaisesNotImplementedNamingOpAndBackend) {
  const Tensor g = claimed_cuda_tensor({2, 2});
  ember::testing::expect_error([&] { call_op(ember::testing::cpu_only_op(), {g}); },
                                "Could not run 'aten::test_cpu_only' with arguments from the 'CUDA' backend",
                                ErrorKind::NotImplementedError);
}

TEST(CudaDevice, EveryScalarOpsRowHasACudaKernel) {
  std::vector<std::string> names = {
#define EMBER_UNARY(name, kind, expr) "aten::" #name,
#define EMBER_BINARY(name, kind, expr)
#include "ops/scalar_ops.def"
#undef EMBER_UNARY
#undef EMBER_BINARY
  };
  for (const char* n : {"add.Tensor", "add.Scalar", "sub.Tensor", "sub.Scalar", "mul.Tensor", "mul.Scalar",
                        "div.Tensor", "div.Scalar", "_div_trunc", "_div_floor", "remainder.Tensor", "remainder.Scalar",
                        "fmod.Tensor", "fmod.Scalar", "pow.Tensor_Tensor", "pow.Tensor_Scalar", "maximum", "minimum",
                        "atan2", "eq.Tensor", "eq.Scalar", "ne.Tensor", "lt.Scalar", "le.Tensor", "gt.Tensor", "ge.Scalar",
                        "logical_and", "logical_or", "logical_xor", "bitwise_and.Tensor", "bitwise_or.Scalar",
                        "bitwise_xor.Tensor", "where.self", "where.ScalarOther", "clamp", "clamp.Tensor",
                        "masked_fill.Scalar", "copy_", "_to_copy", "clone", "fill_.Scalar", "fill_.Tensor", "full",
                        "full_like", "empty.memory_format", "empty_like", "empty_strided", "scalar_tensor",
                        "arange.start_step"})
    names.push_back(std::string("aten::") + n);
  for (const auto& n : names) {
    const ops::OpDef& op = ops::registry().get(n);
    EXPECT_TRUE(static_cast<bool>(op.cuda)) << n << " has no CUDA kernel";
    EXPECT_TRUE(op.cuda_site.present()) << n;
  }
}

TEST(CudaDevice, WithoutAGpuDeviceCountIsZeroWithAReason) {
  if (cuda::is_available()) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(cuda::device_count(), 0);
  EXPECT_FALSE(cuda::unavailable_reason().empty());
}

TEST(CudaDevice, WithoutAGpuMakingACudaTensorRaisesWithTheRuntimesReason) {
  if (cuda::is_available()) GTEST_SKIP() << "this machine has a GPU";
  try {
    zeros({2}, Device("cuda:0"));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(cuda::unavailable_reason()), std::string::npos) << e.what();
  }
}


/// A tensor claimed on `device` (its memory never read) of NCHW sizes `sizes` stored NHWC.
Tensor claimed_nhwc_tensor(std::vector<int64_t> sizes, const char* device) {
  auto impl = std::make_shared<TensorImpl>();
  const int64_t c = sizes[1], h = sizes[2], w = sizes[3];
  impl->strides = {c * h * w, 1, w * c, c};
  impl->sizes = std::move(sizes);
  impl->device = Device(device);
  impl->dtype = kFloat;
  impl->refresh();
  impl->storage = std::make_shared<Storage>(nullptr, 0, impl->device, nullptr);
  return Tensor(std::move(impl));
}

/// Whether a 4-D meta's strides are channels_last's (NHWC) for its sizes.
bool nhwc_meta(const TensorMeta& m) {
  const auto& s = m.sizes;
  return m.strides == std::vector<int64_t>{s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
}

/// Whether a 4-D meta's strides are contiguous (NCHW) for its sizes.
bool nchw_meta(const TensorMeta& m) {
  const auto& s = m.sizes;
  return m.strides == std::vector<int64_t>{s[1] * s[2] * s[3], s[2] * s[3], s[3], 1};
}

TEST(CudaDevice, ChannelsLastTransposedConvolutionWithOutputPaddingPastTheStrideIsContiguousOnCuda) {
  // Note [channels_last transposed convolution on CUDA]: PyTorch's use_cudnn refuses an
  // output_padding of at least the stride, and slow_conv_transpose2d keeps channels_last
  // only on the CPU: a channels_last input gives a contiguous output, grad_input and
  // grad_weight on CUDA, channels_last ones on the CPU (PyTorch 2.11 CPU: output strides
  // (400, 1, 40, 4) for this call), and channels_last on CUDA when cuDNN runs it.
  const ops::OpDef& conv = ops::registry().get("aten::convolution");
  const ops::OpDef& back = ops::registry().get("aten::convolution_backward");
  const std::vector<int64_t> one{1, 1}, zero{0, 0};
  struct Case {
    const char* device;
    std::vector<int64_t> output_padding, dilation;
    bool channels_last;
  };
  for (const Case& c : {Case{"cuda:0", {1, 0}, {2, 1}, false}, Case{"cuda:0", {0, 1}, {1, 2}, false},
                        Case{"cuda:0", zero, {2, 2}, true}, Case{"cpu", {1, 1}, {2, 2}, true}}) {
    const Tensor x = claimed_nhwc_tensor({2, 3, 5, 5}, c.device);
    Tensor w = claimed_cuda_tensor({3, 4, 3, 3});
    if (std::string(c.device) == "cpu") w = claimed_nhwc_tensor({3, 4, 3, 3}, "cpu");
    const std::vector<TensorMeta> y =
        conv.meta({x, w, IValue(), one, zero, c.dilation, true, c.output_padding, int64_t{1}});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(nhwc_meta(y[0]), c.channels_last) << c.device << ": strides " << IntArrayRef(y[0].strides);
    EXPECT_EQ(nchw_meta(y[0]), !c.channels_last) << c.device << ": strides " << IntArrayRef(y[0].strides);
    const Tensor gy = claimed_nhwc_tensor(y[0].sizes, c.device);
    const std::vector<TensorMeta> g = back.meta({gy, x, w, IValue(), one, zero, c.dilation, true, c.output_padding,
                                                 int64_t{1}, std::vector<bool>{true, true, false}});
    ASSERT_EQ(g.size(), 3u);
    EXPECT_EQ(nhwc_meta(g[0]), c.channels_last) << c.device << " grad_input " << IntArrayRef(g[0].strides);
    EXPECT_EQ(nchw_meta(g[0]), !c.channels_last) << c.device << " grad_input " << IntArrayRef(g[0].strides);
    EXPECT_EQ(nhwc_meta(g[1]), c.channels_last) << c.device << " grad_weight " << IntArrayRef(g[1].strides);
  }
}

}  // namespace
}  // namespace ember
