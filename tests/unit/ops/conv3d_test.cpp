// 3-D convolution (aten::convolution with 5-D input, Note [3-D convolution]) against values
// printed by PyTorch 2.11 for the same inputs: forward, transposed, every gradient,
// channels_last_3d strides and meta sizes. Inputs are patterns ((i*a) % m - s) / d so both
// sides build them without pasting data.
#include <gtest/gtest.h>

#include <vector>

#include "ember/ember.h"
#include "kernels/cpu/conv3d.h"
#include "support/error_of.h"
#include "support/pattern_tensors.h"

namespace ember {
namespace {

using testing::expect_close;
using testing::pattern;

/// t laid out NDHWC (channels_last_3d), same values.
Tensor to_channels_last_3d(const Tensor& t) {
  return t.permute({0, 2, 3, 4, 1}).contiguous().permute({0, 4, 1, 2, 3});
}

std::vector<int64_t> ndhwc_strides(const Tensor& t) {
  const auto s = t.sizes().vec();
  return {s[1] * s[2] * s[3] * s[4], 1, s[1] * s[3] * s[4], s[1] * s[4], s[1]};
}

const Tensor kBias = tensor<double>({0.5, -1.0, 0.25, 2.0, 1.0, 0.0});

// torch: aten.convolution(x[2,4,4,5,5], w[6,2,3,2,3], b, stride=[2,1,2], padding=[1,0,1],
//                         dilation=[1,2,1], transposed=False, output_padding=[0], groups=2)
Tensor conv3d_case(ScalarType dtype) {
  Tensor x = pattern({2, 4, 4, 5, 5}, 7, 11, 5, 4.0, dtype);
  Tensor w = pattern({6, 2, 3, 2, 3}, 5, 9, 4, 8.0, dtype);
  return convolution(x, w, kBias.to(dtype), {2, 1, 2}, {1, 0, 1}, {1, 2, 1}, false, {0}, 2);
}

TEST(Conv3d, StridedPaddedDilatedGroupedWithBiasMatchesTorch) {
  for (ScalarType dtype : {kDouble, kFloat}) {
    Tensor y = conv3d_case(dtype);
    EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 6, 2, 3, 3}));
    EXPECT_EQ(y.dtype(), dtype);
    const double tol = dtype == kDouble ? 1e-12 : 1e-5;
    expect_close(y.select(0, 0).select(0, 0).select(0, 0).select(0, 0), {0.03125, 0.71875, 0.84375}, tol);
    expect_close(y.select(0, 1).select(0, 5).select(0, 1).reshape({-1}).narrow(0, 0, 6),
                 {1.75, 0.6875, -1.53125, 0.09375, -1.03125, -1.53125}, tol);
    EXPECT_NEAR(y.sum().item<double>(), 94.40625, dtype == kDouble ? 1e-10 : 1e-3);
  }
}

TEST(Conv3d, BackwardGivesTorchsInputWeightAndBiasGradients) {
  Tensor x = pattern({2, 4, 4, 5, 5}, 7, 11, 5, 4.0);
  Tensor w = pattern({6, 2, 3, 2, 3}, 5, 9, 4, 8.0);
  Tensor gy = pattern({2, 6, 2, 3, 3}, 3, 17, 8, 4.0);
  auto [gi, gw, gb] = convolution_backward(gy, x, w, std::vector<int64_t>{6}, {2, 1, 2}, {1, 0, 1}, {1, 2, 1}, false,
                                           {0}, 2, {true, true, true});
  EXPECT_EQ(gi.sizes(), x.sizes());
  EXPECT_EQ(gw.sizes(), w.sizes());
  expect_close(gi.select(0, 1).select(0, 3).select(0, 2).select(0, 4), {-0.09375, -0.46875, 0.1875, -2.4375, 0.46875},
               1e-12);
  expect_close(gw.select(0, 4).select(0, 1).select(0, 2).reshape({-1}), {3.0, 2.625, -6.5625, 2.125, 2.125, 6.9375},
               1e-12);
  expect_close(gb, {-3.75, -2.25, -0.75, 0.75, 2.25, 3.75}, 1e-12);
  EXPECT_NEAR(gi.sum().item<double>(), -0.6875, 1e-10);
  EXPECT_NEAR(gw.sum().item<double>(), 74.8125, 1e-10);
  // Only the weight gradient asked for: the others stay undefined.
  auto [ni, nw, nb] = convolution_backward(gy, x, w, std::nullopt, {2, 1, 2}, {1, 0, 1}, {1, 2, 1}, false, {0}, 2,
                                           {false, true, false});
  EXPECT_FALSE(ni.defined());
  EXPECT_FALSE(nb.defined());
  expect_close(nw, gw.to_vector<double>(), 1e-12);
}

TEST(Conv3d, AutogradThroughConvolutionReachesInputAndWeight) {
  Tensor x = pattern({1, 2, 3, 4, 4}, 7, 11, 5, 4.0).requires_grad_();
  Tensor w = pattern({2, 2, 2, 2, 2}, 5, 9, 4, 8.0).requires_grad_();
  Tensor y = convolution(x, w, std::nullopt, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, false, {0}, 1);
  y.sum().backward();
  auto [gi, gw, gb] = convolution_backward(ones_like(y), x.detach(), w.detach(), std::nullopt, {1, 1, 1}, {1, 1, 1},
                                           {1, 1, 1}, false, {0}, 1, {true, true, false});
  expect_close(x.grad(), gi.to_vector<double>(), 1e-12);
  expect_close(w.grad(), gw.to_vector<double>(), 1e-12);
}

// torch: aten.convolution(x[2,4,3,3,4], w[4,3,2,3,2], b, stride=[2,1,2], padding=[1,0,0],
//                         dilation=[1,1,2], transposed=True, output_padding=[1,0,1], groups=2)
TEST(ConvTranspose3d, GroupedStridedDilatedWithOutputPaddingMatchesTorch) {
  Tensor x = pattern({2, 4, 3, 3, 4}, 7, 11, 5, 4.0);
  Tensor w = pattern({4, 3, 2, 3, 2}, 5, 9, 4, 8.0);
  Tensor y = convolution(x, w, kBias, {2, 1, 2}, {1, 0, 0}, {1, 1, 2}, true, {1, 0, 1}, 2);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 6, 5, 5, 10}));
  expect_close(y.select(0, 0).select(0, 0).select(0, 0).select(0, 0),
               {0.5, 0.5, 0.40625, 0.5, 1.03125, 0.5, -0.40625, 0.5, 1.625, 0.5}, 1e-12);
  expect_close(y.select(0, 1).select(0, 5).select(0, 4).reshape({-1}).narrow(0, 0, 6),
               {0.3125, 0.0, -0.5, 0.0, 0.1875, 0.0}, 1e-12);
  EXPECT_NEAR(y.sum().item<double>(), 1375.0, 1e-9);
  Tensor gy = pattern({2, 6, 5, 5, 10}, 3, 17, 8, 4.0);
  auto [gi, gw, gb] = convolution_backward(gy, x, w, std::vector<int64_t>{6}, {2, 1, 2}, {1, 0, 0}, {1, 1, 2}, true,
                                           {1, 0, 1}, 2, {true, true, true});
  expect_close(gi.select(0, 1).select(0, 3).select(0, 2).reshape({-1}),
               {-0.71875, -0.1875, -0.71875, 0.34375, 2.46875, 1.40625, -0.1875, 0.34375, 4.0625, -3.90625, 1.9375,
                0.875},
               1e-12);
  expect_close(gw.select(0, 3).select(0, 2).reshape({-1}),
               {-0.6875, 8.6875, 0.5, -7.125, 3.8125, -8.0625, -14.1875, -6.1875, 10.9375, -7.625, 4.1875, 3.6875},
               1e-12);
  expect_close(gb, {2.0, -3.0, 0.5, -0.25, -1.0, -1.75}, 1e-12);
}

TEST(Conv3d, ChannelsLast3dFollowsPyTorchsOneDnnRule) {
  // PyTorch 2.11: a channels_last_3d input (or weight) makes the output, grad_input and
  // grad_weight channels_last_3d where the CPU would run oneDNN (float32 here: batch 2,
  // groups 2), and contiguous on its slow_conv3d path (float64, or float32 of batch 1,
  // groups 1, a small kernel and input); the values are those of the contiguous call.
  for (ScalarType dtype : {kFloat, kDouble}) {
    Tensor x = pattern({2, 4, 4, 5, 5}, 7, 11, 5, 4.0, dtype);
    Tensor w = pattern({6, 2, 3, 2, 3}, 5, 9, 4, 8.0, dtype);
    Tensor b = kBias.to(dtype);
    Tensor y = conv3d_case(dtype);
    Tensor y_cl = convolution(to_channels_last_3d(x), w, b, {2, 1, 2}, {1, 0, 1}, {1, 2, 1}, false, {0}, 2);
    const double tol = dtype == kDouble ? 1e-12 : 1e-5;
    if (dtype == kFloat)
      EXPECT_EQ(y_cl.strides().vec(), ndhwc_strides(y_cl));
    else
      EXPECT_TRUE(y_cl.is_contiguous());
    expect_close(y_cl, y.to_vector<double>(), tol);
    Tensor gy = pattern(y.sizes().vec(), 3, 17, 8, 4.0, dtype);
    auto [gi, gw, gb] = convolution_backward(to_channels_last_3d(gy), to_channels_last_3d(x), w,
                                             std::vector<int64_t>{6}, {2, 1, 2}, {1, 0, 1}, {1, 2, 1}, false, {0}, 2,
                                             {true, true, true});
    if (dtype == kFloat) {
      EXPECT_EQ(gi.strides().vec(), ndhwc_strides(gi));
      EXPECT_EQ(gw.strides().vec(), ndhwc_strides(gw));
    } else {
      EXPECT_TRUE(gi.is_contiguous());
      EXPECT_TRUE(gw.is_contiguous());
    }
    EXPECT_NEAR(gi.sum().item<double>(), -0.6875, 1e-4);
    EXPECT_NEAR(gw.sum().item<double>(), 74.8125, 1e-4);
    EXPECT_TRUE(y.is_contiguous());  // contiguous input and weight
  }
  // float32, batch 1, groups 1, a 2x2x2 kernel: PyTorch's slow path, contiguous.
  Tensor small = convolution(to_channels_last_3d(ones({1, 2, 3, 3, 3})), ones({2, 2, 2, 2, 2}), std::nullopt, {1},
                             {0}, {1}, false, {0}, 1);
  EXPECT_TRUE(small.is_contiguous());
}

TEST(Conv3d, MetaTensorsGiveSizesAndStrides) {
  Tensor y = convolution(empty({8, 16, 9, 32, 32}, kMeta), empty({32, 8, 3, 3, 3}, kMeta), empty({32}, kMeta),
                         {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, {0}, 2);
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{8, 32, 9, 16, 16}));
  EXPECT_TRUE(y.is_contiguous());
  Tensor x_cl = to_channels_last_3d(empty({2, 4, 5, 6, 7}));
  Tensor m = convolution(empty_strided(x_cl.sizes(), x_cl.strides(), kMeta), empty({6, 4, 3, 3, 3}, kMeta),
                         std::nullopt, {1}, {1}, {1}, false, {0}, 1);
  EXPECT_EQ(m.strides().vec(), ndhwc_strides(m));
}

TEST(Conv3d, Conv4dStillRaisesNotImplemented) {
  testing::expect_error(
      [&] {
        convolution(ones({1, 1, 2, 2, 2, 2}), ones({1, 1, 1, 1, 1, 1}), std::nullopt, {1}, {0}, {1}, false, {0}, 1);
      },
      "only 1-D, 2-D and 3-D convolutions are implemented", ErrorKind::NotImplementedError);
}

TEST(Conv3d, KernelLargerThanPaddedInputIsAnError) {
  testing::expect_error(
      [&] {
        convolution(ones({1, 2, 3, 5, 5}), ones({2, 2, 4, 3, 3}), std::nullopt, {1}, {0}, {1}, false, {0}, 1);
      },
      "Kernel size can't be greater than actual input size");
}

/// A float32 result within 1e-4 (absolute and relative) of the float64 loops' result.
void expect_float_close_to_double(const Tensor& got, const Tensor& want) {
  const Tensor diff = (got.to(kDouble) - want).abs();
  EXPECT_LE(max(diff - (want.abs() * 1e-4 + 1e-4)).item<double>(), 0.0) << "max |diff| " << max(diff).item<double>();
}

/// float32's forward, transposed forward and both gradients, checked against the float64
/// loops, for a geometry given as (x, w sizes, stride, padding, dilation, transposed,
/// output_padding, groups); each of the four float32 kernels must have run on oneDNN.
void expect_float32_on_onednn(const std::vector<int64_t>& xs, const std::vector<int64_t>& ws,
                              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                              const std::vector<int64_t>& dilation, bool transposed,
                              const std::vector<int64_t>& output_padding, int64_t groups) {
  SCOPED_TRACE(::testing::Message() << "x " << ::testing::PrintToString(xs) << " w "
                                    << ::testing::PrintToString(ws) << (transposed ? " transposed" : ""));
  const Tensor x = pattern(xs, 7, 11, 5, 4.0), w = pattern(ws, 5, 9, 4, 8.0);
  const int64_t out_channels = transposed ? ws[1] * groups : ws[0];
  const Tensor b = pattern({out_channels}, 3, 7, 3, 2.0);
  const Tensor y = convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups);
  const Tensor gy = pattern(y.sizes().vec(), 3, 17, 8, 4.0);
  auto [gi, gw, gb] = convolution_backward(gy, x, w, std::vector<int64_t>{out_channels}, stride, padding, dilation,
                                           transposed, output_padding, groups, {true, true, true});
  const int64_t before = kernels::cpu::conv3d_dnnl_calls();
  const Tensor y32 = convolution(x.to(kFloat), w.to(kFloat), b.to(kFloat), stride, padding, dilation, transposed,
                                 output_padding, groups);
  auto [gi32, gw32, gb32] =
      convolution_backward(gy.to(kFloat), x.to(kFloat), w.to(kFloat), std::vector<int64_t>{out_channels}, stride,
                           padding, dilation, transposed, output_padding, groups, {true, true, true});
  EXPECT_EQ(kernels::cpu::conv3d_dnnl_calls() - before, 3);  // the forward, grad_input, grad_weight
  EXPECT_EQ(y32.dtype(), kFloat);
  EXPECT_EQ(y32.sizes(), y.sizes());
  EXPECT_EQ(y32.strides(), y.strides());
  EXPECT_EQ(gi32.sizes(), x.sizes());
  EXPECT_EQ(gw32.sizes(), w.sizes());
  expect_float_close_to_double(y32, y);
  expect_float_close_to_double(gi32, gi);
  expect_float_close_to_double(gw32, gw);
  expect_float_close_to_double(gb32, gb);
}

TEST(Conv3d, Float32RunsOnOneDnnAndMatchesTheLoops) {
  // Strided, padded, dilated, grouped (the input's last depth plane unread: right padding -1).
  expect_float32_on_onednn({2, 4, 4, 5, 5}, {6, 2, 3, 2, 3}, {2, 1, 2}, {1, 0, 1}, {1, 2, 1}, false, {0}, 2);
  // 16 channels: oneDNN's blocked layout, 3x3x3 with padding 1.
  expect_float32_on_onednn({2, 16, 6, 7, 8}, {32, 16, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, false, {0}, 1);
  // Transposed, with output padding: its forward is oneDNN's backward data, its input
  // gradient oneDNN's forward.
  expect_float32_on_onednn({2, 4, 3, 3, 4}, {4, 3, 2, 3, 2}, {2, 1, 2}, {1, 0, 0}, {1, 1, 2}, true, {1, 0, 1}, 2);
  // float64 never reaches oneDNN.
  const int64_t before = kernels::cpu::conv3d_dnnl_calls();
  convolution(ones({1, 2, 3, 3, 3}, kDouble), ones({2, 2, 2, 2, 2}, kDouble), std::nullopt, {1}, {0}, {1}, false, {0},
              1);
  EXPECT_EQ(kernels::cpu::conv3d_dnnl_calls(), before);
}

TEST(Conv3d, Float32ChannelsLast3dRunsOnOneDnnOverNdhwcAndMatchesTheLoops) {
  // A channels_last_3d input that PyTorch's rule sends to oneDNN (batch 2): the output and
  // grad_input are NDHWC, computed by oneDNN over the NDHWC tensors as they are.
  const Tensor x = pattern({2, 16, 4, 5, 6}, 7, 11, 5, 4.0), w = pattern({8, 16, 3, 3, 3}, 5, 9, 4, 8.0);
  const Tensor b = pattern({8}, 3, 7, 3, 2.0);
  const Tensor y = convolution(x, w, b, {1, 2, 1}, {1, 1, 0}, {1, 1, 2}, false, {0}, 1);
  const Tensor gy = pattern(y.sizes().vec(), 3, 17, 8, 4.0);
  auto [gi, gw, gb] = convolution_backward(gy, x, w, std::vector<int64_t>{8}, {1, 2, 1}, {1, 1, 0}, {1, 1, 2}, false,
                                           {0}, 1, {true, true, true});
  const Tensor x32 = to_channels_last_3d(x.to(kFloat)), gy32 = to_channels_last_3d(gy.to(kFloat));
  const int64_t before = kernels::cpu::conv3d_dnnl_ndhwc_calls();
  const Tensor y32 = convolution(x32, w.to(kFloat), b.to(kFloat), {1, 2, 1}, {1, 1, 0}, {1, 1, 2}, false, {0}, 1);
  auto [gi32, gw32, gb32] = convolution_backward(gy32, x32, w.to(kFloat), std::vector<int64_t>{8}, {1, 2, 1},
                                                 {1, 1, 0}, {1, 1, 2}, false, {0}, 1, {true, true, true});
  EXPECT_EQ(kernels::cpu::conv3d_dnnl_ndhwc_calls() - before, 3);
  EXPECT_EQ(y32.strides().vec(), ndhwc_strides(y32));
  EXPECT_EQ(gi32.strides().vec(), ndhwc_strides(gi32));
  EXPECT_EQ(gw32.strides().vec(), ndhwc_strides(gw32));  // PyTorch's rule: grad_weight follows
  expect_float_close_to_double(y32, y);
  expect_float_close_to_double(gi32, gi);
  expect_float_close_to_double(gw32, gw);
  expect_float_close_to_double(gb32, gb);
}

}  // namespace
}  // namespace ember
