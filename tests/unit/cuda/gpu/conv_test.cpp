// Convolutions on CUDA (cuDNN) against Ember's CPU results: aten::convolution forward
// (1-D, 2-D and 3-D, stride, padding, dilation, groups, depthwise, bias, transposed,
// empty batches, non-contiguous inputs) and aten::convolution_backward (grad_input,
// grad_weight and grad_bias for each output_mask) for every floating dtype; the
// channels_last (channels_last_3d) layouts of results and gradients; small conv + linear
// and conv3d models' gradients through autograd on CUDA; TF32 for float32 only when
// allowed; integer convolutions raising.
#include "ember/config.h"
#include "library_helpers.h"
#include "support/error_of.h"

namespace ember::gpu_test {
namespace {

/// One aten::convolution call's geometry.
struct Geo {
  std::string name;
  std::vector<int64_t> input, weight;
  bool bias;
  std::vector<int64_t> stride, padding, dilation;
  bool transposed;
  std::vector<int64_t> output_padding;
  int64_t groups;
};

const std::vector<Geo> kGeometries = {
    {"3x3 padded, bias", {2, 3, 7, 6}, {4, 3, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1},
    {"strided, dilated", {2, 3, 9, 8}, {4, 3, 3, 3}, false, {2, 2}, {0, 0}, {2, 2}, false, {0, 0}, 1},
    {"grouped, asymmetric", {1, 4, 8, 7}, {6, 2, 3, 2}, true, {2, 1}, {1, 0}, {1, 1}, false, {0, 0}, 2},
    {"depthwise", {2, 4, 6, 6}, {4, 1, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 4},
    {"1x1", {3, 8, 5, 4}, {16, 8, 1, 1}, true, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1},
    {"1-d", {2, 3, 11}, {5, 3, 3}, true, {2}, {1}, {1}, false, {0}, 1},
    {"1-d dilated, grouped", {2, 4, 13}, {6, 2, 3}, false, {1}, {2}, {2}, false, {0}, 2},
    {"transposed, output_padding", {2, 4, 5, 5}, {4, 3, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, true, {1, 1}, 1},
    {"transposed, grouped", {1, 4, 4, 6}, {4, 2, 3, 2}, true, {1, 2}, {0, 1}, {1, 1}, true, {0, 1}, 2},
    {"transposed 1-d", {2, 3, 7}, {3, 2, 4}, false, {3}, {1}, {1}, true, {2}, 1},
    // output_padding past the stride (allowed below the dilation): no cuDNN geometry, so
    // the full output is computed and cropped; with padding 0 its last position is reached
    // by no input.
    {"transposed, output_padding past the stride", {1, 2, 5, 4}, {2, 3, 3, 2}, true, {1, 2}, {1, 0}, {2, 1}, true,
     {1, 1}, 1},
    {"transposed 1-d, output_padding past the stride", {2, 2, 5}, {2, 2, 3}, true, {1}, {0}, {2}, true, {1}, 1},
    {"empty batch", {0, 3, 5, 5}, {4, 3, 3, 3}, true, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1},
};

/// 3-D convolutions (Note [3-D convolution]): the same kinds of geometry over NCDHW.
const std::vector<Geo> kGeometries3d = {
    {"3-d 3x3x3 padded, bias", {2, 3, 5, 6, 4}, {4, 3, 3, 3, 3}, true, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, false,
     {0, 0, 0}, 1},
    {"3-d strided, dilated", {2, 3, 7, 8, 6}, {4, 3, 3, 2, 3}, false, {2, 1, 2}, {0, 1, 1}, {2, 1, 1}, false,
     {0, 0, 0}, 1},
    {"3-d grouped, asymmetric", {1, 4, 5, 6, 7}, {6, 2, 2, 3, 1}, true, {1, 2, 1}, {1, 0, 0}, {1, 1, 1}, false,
     {0, 0, 0}, 2},
    {"3-d depthwise", {2, 4, 4, 5, 5}, {4, 1, 3, 3, 3}, true, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, false, {0, 0, 0}, 4},
    {"3-d 1x1x1", {2, 8, 3, 4, 5}, {6, 8, 1, 1, 1}, true, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, false, {0, 0, 0}, 1},
    {"3-d transposed, output_padding", {2, 4, 3, 4, 3}, {4, 3, 3, 3, 3}, true, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, true,
     {1, 0, 1}, 1},
    {"3-d transposed, grouped, dilated", {1, 4, 3, 4, 5}, {4, 2, 2, 3, 2}, true, {1, 2, 1}, {0, 1, 1}, {2, 1, 1}, true,
     {0, 1, 0}, 2},
    // output_padding past the stride (below the dilation): the full output, cropped.
    {"3-d transposed, output_padding past the stride", {1, 2, 3, 4, 3}, {2, 3, 3, 2, 2}, true, {1, 2, 1}, {1, 0, 0},
     {2, 1, 2}, true, {1, 1, 1}, 1},
    {"3-d empty batch", {0, 3, 4, 4, 4}, {4, 3, 3, 3, 3}, true, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, false, {0, 0, 0}, 1},
};

/// cuDNN may pick Winograd or FFT algorithms, which round along the way even on exact
/// inputs: PyTorch-like tolerances rather than exact equality.
Tolerance conv_tolerance(ScalarType t) {
  switch (t) {
    case kFloat: return std::pair{1e-4, 1e-3};
    case kDouble: return std::pair{1e-10, 1e-9};
    case kHalf: return std::pair{2e-3, 1e-2};
    case kBFloat16: return std::pair{1.6e-2, 5e-2};
    default: return std::pair{0.0, 0.0};
  }
}

int64_t out_channels(const Geo& g) { return g.transposed ? g.weight[1] * g.groups : g.weight[0]; }

/// aten::convolution's arguments; an undefined bias is None.
Stack forward_args(const Geo& g, const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return {input,     weight,    bias.defined() ? IValue(bias) : IValue(), g.stride, g.padding, g.dilation, g.transposed,
          g.output_padding, g.groups};
}

std::string where(ScalarType t, const std::string& what) {
  std::ostringstream os;
  os << " (" << t << ", " << what << ")";
  return os.str();
}

class CudaConv : public GpuDnn {};

TEST_F(CudaConv, ForwardMatchesTheCpuForEveryGeometryAndDtype) {
  for (ScalarType t : kFloatDtypes) {
    for (const Geo& g : kGeometries) {
      const Tensor x = quarters(g.input, t, 1), w = quarters(g.weight, t, 2);
      const Tensor b = g.bias ? quarters({out_channels(g)}, t, 3) : Tensor();
      auto dev = [](const Tensor& v) { return v.defined() ? v.cuda() : v; };
      const std::string r = compare("aten::convolution", forward_args(g, x, w, b),
                                    forward_args(g, x.cuda(), w.cuda(), dev(b)), conv_tolerance(t));
      EXPECT_TRUE(r.empty()) << r << where(t, g.name);
    }
  }
}

TEST_F(CudaConv, ThreeDimensionalForwardMatchesTheCpuForEveryGeometryAndDtype) {
  for (ScalarType t : kFloatDtypes) {
    for (const Geo& g : kGeometries3d) {
      const Tensor x = quarters(g.input, t, 1), w = quarters(g.weight, t, 2);
      const Tensor b = g.bias ? quarters({out_channels(g)}, t, 3) : Tensor();
      auto dev = [](const Tensor& v) { return v.defined() ? v.cuda() : v; };
      const Tensor expected = call_op("aten::convolution", forward_args(g, x, w, b)).at(0).to_tensor();
      const Tensor actual =
          call_op("aten::convolution", forward_args(g, x.cuda(), w.cuda(), dev(b))).at(0).to_tensor();
      ASSERT_TRUE(actual.is_cuda()) << where(t, g.name);
      EXPECT_EQ(actual.sizes(), expected.sizes()) << where(t, g.name);
      EXPECT_TRUE(actual.is_contiguous()) << actual.strides() << where(t, g.name);
      const std::string m = gpu_test::mismatch(actual, expected, conv_tolerance(t));
      EXPECT_TRUE(m.empty()) << m << where(t, g.name);
    }
  }
}

TEST_F(CudaConv, NonContiguousInputsAndWeightsMatchTheCpu) {
  const Geo& g = kGeometries[0];
  for (ScalarType t : kFloatDtypes) {
    // Input stored channels-last; weight a slice of a wider one.
    const Tensor x = quarters({2, 7, 6, 3}, t, 4), w = quarters({4, 3, 3, 5}, t, 5), b = quarters({8}, t, 6);
    auto views = [](const Tensor& xx, const Tensor& ww, const Tensor& bb) {
      return std::tuple{xx.permute({0, 3, 1, 2}), ww.narrow(3, 1, 3).permute({0, 3, 1, 2}).transpose(2, 3),
                        bb.slice(0, 0, std::nullopt, 2)};
    };
    const auto [xc, wc, bc] = views(x, w, b);
    const auto [xg, wg, bg] = views(x.cuda(), w.cuda(), b.cuda());
    Geo strided = g;
    strided.weight = {4, 3, 3, 3};
    if (t == kDouble) {
      // cuDNN's rule (PyTorch's cudnn_conv_suggest_memory_format): a channels_last input
      // gives a channels_last output, as on the CPU, but never in float64.
      const Tensor expected = call_op("aten::convolution", forward_args(strided, xc, wc, bc)).at(0).to_tensor();
      const Tensor actual = call_op("aten::convolution", forward_args(strided, xg, wg, bg)).at(0).to_tensor();
      EXPECT_TRUE(actual.is_contiguous()) << actual.strides();
      const std::string m = gpu_test::mismatch(actual, expected.contiguous(), conv_tolerance(t));
      EXPECT_TRUE(m.empty()) << m << where(t, "permuted input, sliced weight and bias");
      continue;
    }
    const std::string r =
        compare("aten::convolution", forward_args(strided, xc, wc, bc), forward_args(strided, xg, wg, bg),
                conv_tolerance(t));
    EXPECT_TRUE(r.empty()) << r << where(t, "permuted input, sliced weight and bias");
  }
}

/// `t` (4-D) stored channels-last: NHWC memory, NCHW sizes.
Tensor nhwc(const Tensor& t) { return t.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}); }
/// Whether `t` has the strides channels_last gives its sizes (and is not also contiguous).
bool is_nhwc(const Tensor& t) {
  const auto s = t.sizes();
  return t.dim() == 4 && !t.is_contiguous() &&
         t.strides().vec() == std::vector<int64_t>{s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
}

TEST_F(CudaConv, ChannelsLastGradientsFollowCudnnsMemoryFormat) {
  // convolution_backward of a channels_last input: grad_input and grad_weight channels_last
  // (PyTorch's cuDNN path), in float64 contiguous; values as the CPU's.
  const Geo& g = kGeometries[0];
  for (ScalarType t : kFloatDtypes) {
    const Tensor x = nhwc(quarters(g.input, t, 7)), w = quarters(g.weight, t, 8);
    const Tensor y = call_op("aten::convolution", forward_args(g, x, w, Tensor())).at(0).to_tensor();
    const Tensor gy = nhwc(quarters(y.sizes(), t, 9));
    auto grads = [&](const Tensor& gg, const Tensor& xx, const Tensor& ww) {
      return call_op("aten::convolution_backward",
                     {gg, xx, ww, IValue(), g.stride, g.padding, g.dilation, g.transposed, g.output_padding, g.groups,
                      std::vector<bool>{true, true, false}});
    };
    const Stack cpu = grads(gy, x, w), gpu = grads(gy.cuda(), x.cuda(), w.cuda());
    for (size_t i = 0; i < 2; ++i) {
      const Tensor actual = gpu.at(i).to_tensor(), expected = cpu.at(i).to_tensor();
      EXPECT_EQ(is_nhwc(actual), t != kDouble) << "output " << i << " strides " << actual.strides()
                                               << where(t, "channels_last input");
      auto [rtol, atol] = *conv_tolerance(t);
      const std::string m =
          gpu_test::mismatch(actual, t == kDouble ? expected.contiguous() : expected, std::pair{rtol * 2, atol * 4});
      EXPECT_TRUE(m.empty()) << "output " << i << ": " << m << where(t, "channels_last input");
    }
  }
}

/// convolution_backward on both devices; each output the mask asks for must agree.
std::string backward_mismatch(const Geo& g, ScalarType t, std::array<bool, 3> mask) {
  const Tensor x = quarters(g.input, t, 7), w = quarters(g.weight, t, 8);
  const Tensor y = call_op("aten::convolution", forward_args(g, x, w, Tensor())).at(0).to_tensor();
  const Tensor gy = quarters(y.sizes(), t, 9);
  auto args = [&](const Tensor& gg, const Tensor& xx, const Tensor& ww) {
    return Stack{gg,        xx,     ww,        g.bias ? IValue(std::vector<int64_t>{out_channels(g)}) : IValue(),
                 g.stride, g.padding, g.dilation, g.transposed, g.output_padding, g.groups,
                 std::vector<bool>{mask[0], mask[1], mask[2]}};
  };
  const Stack cpu = call_op("aten::convolution_backward", args(gy, x, w));
  const Stack gpu = call_op("aten::convolution_backward", args(gy.cuda(), x.cuda(), w.cuda()));
  const char* names[3] = {"grad_input", "grad_weight", "grad_bias"};
  for (size_t i = 0; i < 3; ++i) {
    const Tensor e = cpu.at(i).is_none() ? Tensor() : cpu.at(i).to_tensor();
    const Tensor a = gpu.at(i).is_none() ? Tensor() : gpu.at(i).to_tensor();
    if (e.defined() != a.defined()) return std::string(names[i]) + ": defined on one device only";
    if (!e.defined()) continue;
    if (!a.is_cuda()) return std::string(names[i]) + ": not on the GPU";
    // Gradients sum over the batch and the positions too: a little more room.
    auto [rtol, atol] = *conv_tolerance(t);
    const std::string m = gpu_test::mismatch(a, e, std::pair{rtol * 2, atol * 4});
    if (!m.empty()) return std::string(names[i]) + ": " + m;
  }
  return "";
}

TEST_F(CudaConv, BackwardMatchesTheCpuForEveryGeometryDtypeAndOutputMask) {
  const std::vector<std::array<bool, 3>> masks = {
      {true, true, true}, {true, false, false}, {false, true, false}, {false, false, true}};
  for (ScalarType t : kFloatDtypes) {
    for (const Geo& g : kGeometries) {
      for (const auto& mask : masks) {
        if (mask[2] && !g.bias) continue;
        const std::string r = backward_mismatch(g, t, mask);
        EXPECT_TRUE(r.empty()) << r << where(t, g.name + ", mask " + std::to_string(mask[0]) +
                                                   std::to_string(mask[1]) + std::to_string(mask[2]));
      }
    }
  }
}

TEST_F(CudaConv, ThreeDimensionalBackwardMatchesTheCpuForEveryGeometryDtypeAndOutputMask) {
  const std::vector<std::array<bool, 3>> masks = {
      {true, true, true}, {true, false, false}, {false, true, false}, {false, false, true}};
  for (ScalarType t : kFloatDtypes) {
    for (const Geo& g : kGeometries3d) {
      for (const auto& mask : masks) {
        if (mask[2] && !g.bias) continue;
        const std::string r = backward_mismatch(g, t, mask);
        EXPECT_TRUE(r.empty()) << r << where(t, g.name + ", mask " + std::to_string(mask[0]) +
                                                   std::to_string(mask[1]) + std::to_string(mask[2]));
      }
    }
  }
}

/// `t` (5-D) stored channels_last_3d: NDHWC memory, NCDHW sizes.
Tensor ndhwc(const Tensor& t) { return t.permute({0, 2, 3, 4, 1}).contiguous().permute({0, 4, 1, 2, 3}); }
/// Whether `t` has the strides channels_last_3d gives its sizes (and is not also contiguous).
bool is_ndhwc(const Tensor& t) {
  const auto s = t.sizes();
  return t.dim() == 5 && !t.is_contiguous() &&
         t.strides().vec() ==
             std::vector<int64_t>{s[1] * s[2] * s[3] * s[4], 1, s[3] * s[4] * s[1], s[4] * s[1], s[1]};
}

TEST_F(CudaConv, ChannelsLast3dResultsAndGradientsFollowCudnnsMemoryFormat) {
  // A channels_last_3d input gives a channels_last_3d output, grad_input and grad_weight on
  // CUDA (PyTorch's cudnn_conv_suggest_memory_format), even at batch 1 in float32 and in
  // float16, where the CPU's oneDNN rule keeps NCDHW; float64 stays contiguous; values as
  // the CPU's.
  const Geo g{"3-d batch 1", {1, 3, 5, 6, 4}, {4, 3, 3, 3, 3}, true, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, false,
              {0, 0, 0}, 1};
  for (ScalarType t : kFloatDtypes) {
    const Tensor x = ndhwc(quarters(g.input, t, 7)), w = quarters(g.weight, t, 8), b = quarters({4}, t, 3);
    const Tensor expected = call_op("aten::convolution", forward_args(g, x, w, b)).at(0).to_tensor();
    const Tensor actual =
        call_op("aten::convolution", forward_args(g, x.cuda(), w.cuda(), b.cuda())).at(0).to_tensor();
    EXPECT_EQ(is_ndhwc(actual), t != kDouble) << "output strides " << actual.strides() << where(t, g.name);
    if (t == kDouble) {
      EXPECT_TRUE(actual.is_contiguous()) << actual.strides();
    }
    // Values against the CPU's (its layout is oneDNN's, checked by the CPU's own tests).
    std::string m = gpu_test::mismatch(actual.contiguous(), expected.contiguous(), conv_tolerance(t));
    EXPECT_TRUE(m.empty()) << m << where(t, g.name);
    const Tensor gy = ndhwc(quarters(expected.sizes(), t, 9));
    auto grads = [&](const Tensor& gg, const Tensor& xx, const Tensor& ww) {
      return call_op("aten::convolution_backward",
                     {gg, xx, ww, IValue(std::vector<int64_t>{4}), g.stride, g.padding, g.dilation, g.transposed,
                      g.output_padding, g.groups, std::vector<bool>{true, true, true}});
    };
    const Stack cpu = grads(gy, x, w), gpu = grads(gy.cuda(), x.cuda(), w.cuda());
    for (size_t i = 0; i < 3; ++i) {
      const Tensor a = gpu.at(i).to_tensor(), e = cpu.at(i).to_tensor();
      if (i < 2) {
        EXPECT_EQ(is_ndhwc(a), t != kDouble) << "gradient " << i << " strides " << a.strides() << where(t, g.name);
      }
      auto [rtol, atol] = *conv_tolerance(t);
      m = gpu_test::mismatch(a.contiguous(), e.contiguous(), std::pair{rtol * 2, atol * 4});
      EXPECT_TRUE(m.empty()) << "gradient " << i << ": " << m << where(t, g.name);
    }
  }
}

TEST_F(CudaConv, AConvAndLinearModelHasTheCpusGradientsThroughAutograd) {
  // The backward's gradients carry more bits than TF32 keeps: compare float32 exactly.
  ScopedFlag no_tf32(config().backends.cudnn.allow_tf32, false);
  for (ScalarType t : {kFloat, kDouble}) {
    // conv2d (3 -> 4 channels, 3x3, padding 1, stride 2) -> flatten -> linear(64 -> 5) -> sum of squares.
    struct Leaves {
      Tensor x, cw, cb, lw, lb;
    };
    auto leaves = [&](bool cuda) {
      auto leaf = [&](Tensor v) {
        if (cuda) v = v.cuda();
        v.requires_grad_(true);
        return v;
      };
      return Leaves{leaf(quarters({2, 3, 8, 8}, t, 10)), leaf(quarters({4, 3, 3, 3}, t, 11)),
                    leaf(quarters({4}, t, 12)), leaf(quarters({5, 64}, t, 13).mul(0.25)), leaf(quarters({5}, t, 14))};
    };
    auto run = [&](const Leaves& p) {
      const Tensor h = conv2d(p.x, p.cw, p.cb, {2, 2}, {1, 1});
      const Tensor y = linear(flatten(h, 1), p.lw, p.lb);
      sum(y * y).backward();
    };
    const Leaves cpu = leaves(false), gpu = leaves(true);
    run(cpu);
    run(gpu);
    const std::pair<const char*, std::pair<Tensor, Tensor>> grads[] = {{"input", {gpu.x.grad(), cpu.x.grad()}},
                                                                       {"conv weight", {gpu.cw.grad(), cpu.cw.grad()}},
                                                                       {"conv bias", {gpu.cb.grad(), cpu.cb.grad()}},
                                                                       {"linear weight", {gpu.lw.grad(), cpu.lw.grad()}},
                                                                       {"linear bias", {gpu.lb.grad(), cpu.lb.grad()}}};
    for (const auto& [name, pair] : grads) {
      ASSERT_TRUE(pair.first.defined()) << name << where(t, "no gradient on CUDA");
      EXPECT_TRUE(pair.first.is_cuda()) << name;
      const std::string m = gpu_test::mismatch(pair.first, pair.second, t == kFloat ? std::pair{1e-4, 1e-3} : std::pair{1e-9, 1e-9});
      EXPECT_TRUE(m.empty()) << name << ": " << m << where(t, "autograd");
    }
  }
}

TEST_F(CudaConv, AConv3dModelHasTheCpusGradientsThroughAutograd) {
  ScopedFlag no_tf32(config().backends.cudnn.allow_tf32, false);
  for (ScalarType t : {kFloat, kDouble}) {
    // conv3d (2 -> 4 channels, 3x3x3, padding 1, stride 2, bias) -> transposed conv3d back to
    // 2 channels (stride 2, output_padding 1) -> sum of squares.
    struct Leaves {
      Tensor x, w1, b1, w2;
    };
    auto leaves = [&](bool cuda) {
      auto leaf = [&](Tensor v) {
        if (cuda) v = v.cuda();
        v.requires_grad_(true);
        return v;
      };
      return Leaves{leaf(quarters({2, 2, 5, 6, 4}, t, 20)), leaf(quarters({4, 2, 3, 3, 3}, t, 21)),
                    leaf(quarters({4}, t, 22)), leaf(quarters({4, 2, 2, 2, 2}, t, 23).mul(0.25))};
    };
    auto run = [&](const Leaves& p) {
      const Tensor h = convolution(p.x, p.w1, p.b1, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, {0, 0, 0}, 1);
      const Tensor y = convolution(h, p.w2, std::nullopt, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, true, {1, 0, 1}, 1);
      sum(y * y).backward();
    };
    const Leaves cpu = leaves(false), gpu = leaves(true);
    run(cpu);
    run(gpu);
    const std::pair<const char*, std::pair<Tensor, Tensor>> grads[] = {{"input", {gpu.x.grad(), cpu.x.grad()}},
                                                                       {"conv weight", {gpu.w1.grad(), cpu.w1.grad()}},
                                                                       {"conv bias", {gpu.b1.grad(), cpu.b1.grad()}},
                                                                       {"transposed weight", {gpu.w2.grad(), cpu.w2.grad()}}};
    for (const auto& [name, pair] : grads) {
      ASSERT_TRUE(pair.first.defined()) << name << where(t, "no gradient on CUDA");
      EXPECT_TRUE(pair.first.is_cuda()) << name;
      const std::string m =
          gpu_test::mismatch(pair.first, pair.second, t == kFloat ? std::pair{1e-4, 1e-3} : std::pair{1e-9, 1e-9});
      EXPECT_TRUE(m.empty()) << name << ": " << m << where(t, "conv3d autograd");
    }
  }
}

TEST_F(CudaConv, Float32ConvolutionsRoundToTF32OnlyWhenAllowed) {
  EXPECT_TRUE(config().backends.cudnn.allow_tf32) << "on by default, as PyTorch's";
  // 1 + 2^-12 is 1 in TF32: with TF32 every product loses 2^-12 of its value.
  const Tensor x = full({4, 64, 16, 16}, 1.0 + std::ldexp(1.0, -12), TensorOptions(kFloat));
  const Tensor w = full({64, 64, 3, 3}, 1.0, TensorOptions(kFloat));
  const Geo g{"tf32", {4, 64, 16, 16}, {64, 64, 3, 3}, false, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1};
  {
    ScopedFlag off(config().backends.cudnn.allow_tf32, false);
    const std::string r = compare("aten::convolution", forward_args(g, x, w, Tensor()),
                                  forward_args(g, x.cuda(), w.cuda(), Tensor()), std::pair{2e-5, 0.0});
    EXPECT_TRUE(r.empty()) << r << " (TF32 off)";
  }
  const std::string r = compare("aten::convolution", forward_args(g, x, w, Tensor()),
                                forward_args(g, x.cuda(), w.cuda(), Tensor()), std::pair{1e-3, 0.0});
  EXPECT_TRUE(r.empty()) << r << " (TF32 on: within TF32's rounding)";
}

TEST_F(CudaConv, IntegerConvolutionsRaiseAsPyTorchsCudaKernelsDo) {
  const Tensor x = ones({1, 2, 4, 4}, TensorOptions(kLong)).cuda(), w = ones({3, 2, 3, 3}, TensorOptions(kLong)).cuda();
  const std::string m =
      testing::error_of([&] { conv2d(x, w); }, ErrorKind::NotImplementedError);
  EXPECT_NE(m.find("\"slow_conv2d_cuda\" not implemented for 'Long'"), std::string::npos) << m;
  // 3-D: PyTorch's CUDA runs an integer one on slow_conv_dilated3d, which takes floats only.
  const Tensor x3 = ones({1, 2, 4, 4, 4}, TensorOptions(kLong)).cuda(), w3 = ones({3, 2, 3, 3, 3}, TensorOptions(kLong)).cuda();
  const std::string m3 = testing::error_of(
      [&] { convolution(x3, w3, std::nullopt, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, false, {0, 0, 0}, 1); },
      ErrorKind::NotImplementedError);
  EXPECT_NE(m3.find("\"slow_conv_dilated<>\" not implemented for 'Long'"), std::string::npos) << m3;
}

}  // namespace
}  // namespace ember::gpu_test
