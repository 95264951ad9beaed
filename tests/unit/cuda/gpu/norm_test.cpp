// The CUDA norms (native_layer_norm, native_batch_norm, native_batch_norm_backward) and
// their gradients through autograd, against Ember's CPU on the same values. PyTorch's CUDA
// kernels compute half and bfloat16 in float and return float statistics, so the CPU
// reference for those dtypes runs on float32 copies and its results are rounded back.
#include "gpu_helpers.h"

namespace ember::gpu_test {
namespace {

const ScalarType kFloats[] = {kFloat, kDouble, kHalf, kBFloat16};

/// half and bfloat16 as float32 (the reference's dtype); others as they are.
Tensor widen(const Tensor& t) { return t.defined() && is_reduced_float(t.dtype()) ? t.to(kFloat) : t; }
std::optional<Tensor> opt(const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; }
Tensor on_gpu(const Tensor& t) { return t.defined() ? t.cuda() : t; }
Tensor copy_of(const Tensor& t) { return t.defined() ? t.clone() : t; }

/// Values: one rounding of the result's dtype, and statistics summed in another order.
Tolerance value_tolerance(ScalarType t) {
  switch (t) {
    case kFloat: return std::pair{1e-5, 1e-5};
    case kDouble: return std::pair{1e-7, 1e-7};
    case kHalf: return std::pair{5e-3, 2e-3};
    default: return std::pair{2e-2, 2e-2};
  }
}

/// `actual` (CUDA) against the reference `expected` (CPU, maybe float32) in `dtype`.
std::string check(const std::string& what, const Tensor& actual, const Tensor& expected, ScalarType dtype,
                  Tolerance tol) {
  if (!actual.is_cuda()) return what + ": on " + actual.device().str();
  const std::string m = mismatch(actual, expected.to(dtype), tol);
  std::ostringstream os;
  if (!m.empty()) os << what << " (" << dtype << "): " << m;
  return os.str();
}

class CudaNorm : public Gpu {};

// --- layer norm --------------------------------------------------------------------------

struct LayerNormCase {
  std::vector<int64_t> sizes, normalized;
  bool weight, bias, transposed;
};

TEST_F(CudaNorm, LayerNormMatchesTheCpuWithMeanAndRstdInTheInputDtype) {
  const std::vector<LayerNormCase> cases = {
      {{4, 7}, {7}, true, true, false},        {{2, 3, 1000}, {1000}, true, false, false},
      {{2, 3, 5}, {3, 5}, false, true, false}, {{3, 4097}, {4097}, false, false, false},
      {{9, 6}, {9}, true, true, true},         {{0, 6}, {6}, true, true, false},
      {{3, 0}, {0}, false, false, false},      {{5}, {5}, true, true, false}};
  for (ScalarType t : kFloats) {
    for (const LayerNormCase& c : cases) {
      Tensor x = random_values(c.sizes, t, -2, 3, 11);
      if (c.transposed) x = x.t();  // [6, 9] with strides (1, 6)
      const Tensor w = c.weight ? random_values(c.normalized, t, 0.5, 1.5, 3) : Tensor();
      const Tensor b = c.bias ? random_values(c.normalized, t, -1, 1, 5) : Tensor();
      auto [y, mean, rstd] = native_layer_norm(x.cuda(), c.normalized, opt(on_gpu(w)), opt(on_gpu(b)), 1e-5);
      auto [ey, em, er] = native_layer_norm(widen(x), c.normalized, opt(widen(w)), opt(widen(b)), 1e-5);
      const ScalarType stat = t;  // PyTorch's CUDA returns them in the input dtype too
      EXPECT_EQ(mean.dtype(), stat);
      for (const std::string& m :
           {check("output", y, ey, t, value_tolerance(t)), check("mean", mean, em, stat, value_tolerance(stat)),
            check("rstd", rstd, er, stat, value_tolerance(stat))})
        EXPECT_TRUE(m.empty()) << m << " sizes " << IntArrayRef(c.sizes);
    }
  }
}

TEST_F(CudaNorm, LayerNormWarpRowsOfEveryVectorWidthMatchTheCpu) {
  // Rows of whole 16-byte groups (read a vector at a time) and rows that are not; a slice
  // off the front starts the rows unaligned where the row length is odd.
  for (ScalarType t : {kFloat, kHalf, kBFloat16}) {
    for (int64_t n : {4, 8, 24, 1000, 1017, 1020, 1024}) {
      for (bool from_second_row : {false, true}) {
        Tensor x = random_values({38, n}, t, -2, 3, 11);
        if (from_second_row) x = x.slice(0, 1, 38, 1);
        const Tensor w = random_values({n}, t, 0.5, 1.5, 3), b = random_values({n}, t, -1, 1, 5);
        auto [y, mean, rstd] = native_layer_norm(x.cuda(), {n}, w.cuda(), b.cuda(), 1e-5);
        auto [ey, em, er] = native_layer_norm(widen(x), {n}, widen(w), widen(b), 1e-5);
        for (const std::string& m : {check("output", y, ey, t, value_tolerance(t)),
                                     check("mean", mean, em, t, value_tolerance(t)),
                                     check("rstd", rstd, er, t, value_tolerance(t))})
          EXPECT_TRUE(m.empty()) << m << " n " << n << (from_second_row ? " from the second row" : "");
      }
    }
  }
}

TEST_F(CudaNorm, LayerNormRaisesWhereTheCpuRaises) {
  const Tensor x = random_values({3, 4}, kFloat);
  for (const Stack& args : {Stack{x, std::vector<int64_t>{5}, IValue(), IValue(), 1e-5},
                            Stack{x, std::vector<int64_t>{4}, random_values({3}, kFloat), IValue(), 1e-5},
                            Stack{x.to(kInt64), std::vector<int64_t>{4}, IValue(), IValue(), 1e-5}}) {
    const std::string m = compare("aten::native_layer_norm", args);
    EXPECT_TRUE(m.empty()) << m;
  }
}

TEST_F(CudaNorm, LayerNormGradientsThroughAutogradMatchTheCpu) {
  for (ScalarType t : kFloats) {
    for (bool affine : {true, false}) {
      const Tensor x = random_values({6, 4, 33}, t, -2, 3, 13), gy = random_values({6, 4, 33}, t, -1, 1, 17);
      const Tensor w = random_values({4, 33}, t, 0.5, 1.5, 19), b = random_values({4, 33}, t, -1, 1, 23);
      auto run = [&](const Tensor& xi, const Tensor& wi, const Tensor& bi, const Tensor& g) {
        xi.requires_grad_();
        if (affine) {
          wi.requires_grad_();
          bi.requires_grad_();
        }
        layer_norm(xi, {4, 33}, affine ? opt(wi) : std::nullopt, affine ? opt(bi) : std::nullopt, 1e-5).backward(g);
      };
      const Tensor xc = x.cuda(), wc = w.cuda(), bc = b.cuda();
      run(xc, wc, bc, gy.cuda());
      const Tensor xr = widen(x).clone(), wr = widen(w).clone(), br = widen(b).clone();
      run(xr, wr, br, widen(gy));
      EXPECT_TRUE(check("x.grad", xc.grad().contiguous(), xr.grad().contiguous(), t, gradient_tolerance(t)).empty())
          << check("x.grad", xc.grad().contiguous(), xr.grad().contiguous(), t, gradient_tolerance(t));
      if (!affine) continue;
      EXPECT_TRUE(check("weight.grad", wc.grad().contiguous(), wr.grad().contiguous(), t, gradient_tolerance(t)).empty())
          << check("weight.grad", wc.grad().contiguous(), wr.grad().contiguous(), t, gradient_tolerance(t));
      EXPECT_TRUE(check("bias.grad", bc.grad().contiguous(), br.grad().contiguous(), t, gradient_tolerance(t)).empty())
          << check("bias.grad", bc.grad().contiguous(), br.grad().contiguous(), t, gradient_tolerance(t));
    }
  }
}

// --- batch norm --------------------------------------------------------------------------

/// A batch norm call's tensors; the running stats are cloned per call (updated in place).
struct BatchNormArgs {
  Tensor x, weight, bias, running_mean, running_var;
};

/// Parameters of C channels in `pt`, and an input of `sizes` in `t` (maybe permuted from
/// channels-last storage).
BatchNormArgs batch_norm_args(IntArrayRef sizes, ScalarType t, ScalarType pt, bool affine, bool running,
                              bool channels_last) {
  const int64_t C = sizes[1];
  BatchNormArgs a;
  if (channels_last) {
    std::vector<int64_t> nhwc = {sizes[0]};
    for (size_t d = 2; d < sizes.size(); ++d) nhwc.push_back(sizes[d]);
    nhwc.push_back(C);
    std::vector<int64_t> perm = {0, static_cast<int64_t>(nhwc.size()) - 1};
    for (int64_t d = 1; d + 1 < static_cast<int64_t>(nhwc.size()); ++d) perm.push_back(d);
    a.x = random_values(nhwc, t, -2, 3, 29).permute(perm);
  } else {
    a.x = random_values(sizes, t, -2, 3, 29);
  }
  if (affine) {
    a.weight = random_values({C}, pt, 0.5, 1.5, 31);
    a.bias = random_values({C}, pt, -1, 1, 37);
  }
  if (running) {
    a.running_mean = random_values({C}, pt, -0.5, 0.5, 41);
    a.running_var = random_values({C}, pt, 0.5, 2, 43);
  }
  return a;
}

struct BatchNormCase {
  std::vector<int64_t> sizes;
  bool affine, running, channels_last;
};

TEST_F(CudaNorm, BatchNormTrainingMatchesTheCpuAndUpdatesTheRunningStatsInPlace) {
  const std::vector<BatchNormCase> cases = {{{4, 3, 5, 6}, true, true, false},   {{8, 5}, true, true, false},
                                            {{2, 4, 300}, false, true, false},   {{3, 6, 4, 4}, true, false, true},
                                            {{2, 3, 7, 5}, false, false, false}, {{0, 3, 4}, true, true, false}};
  for (ScalarType t : kFloats) {
    for (ScalarType pt : {t, kFloat}) {
      if (pt != t && !is_reduced_float(t)) continue;
      for (const BatchNormCase& c : cases) {
        const BatchNormArgs a = batch_norm_args(c.sizes, t, pt, c.affine, c.running, c.channels_last);
        const Tensor rm = copy_of(on_gpu(a.running_mean)), rv = copy_of(on_gpu(a.running_var));
        const Tensor rm_ref = copy_of(widen(a.running_mean)), rv_ref = copy_of(widen(a.running_var));
        auto [y, save_mean, save_invstd] = native_batch_norm(a.x.cuda(), opt(on_gpu(a.weight)), opt(on_gpu(a.bias)),
                                                             opt(rm), opt(rv), true, 0.1, 1e-5);
        auto [ey, em, ei] = native_batch_norm(widen(a.x), opt(widen(a.weight)), opt(widen(a.bias)), opt(rm_ref),
                                              opt(rv_ref), true, 0.1, 1e-5);
        const ScalarType stat = t == kDouble ? kDouble : kFloat;
        std::vector<std::string> ms = {check("output", y, ey, t, value_tolerance(t)),
                                       check("save_mean", save_mean, em, stat, value_tolerance(stat)),
                                       check("save_invstd", save_invstd, ei, stat, value_tolerance(stat))};
        if (c.running) {
          ms.push_back(check("running_mean", rm, rm_ref, pt, value_tolerance(pt)));
          ms.push_back(check("running_var", rv, rv_ref, pt, value_tolerance(pt)));
        }
        for (const std::string& m : ms) EXPECT_TRUE(m.empty()) << m << " sizes " << IntArrayRef(c.sizes);
      }
    }
  }
}

TEST_F(CudaNorm, BatchNormEvaluationUsesAndSavesTheRunningStats) {
  for (ScalarType t : kFloats) {
    for (ScalarType pt : {t, kFloat}) {
      if (pt != t && !is_reduced_float(t)) continue;
      for (bool channels_last : {false, true}) {
        const BatchNormArgs a = batch_norm_args({3, 4, 5, 2}, t, pt, true, true, channels_last);
        const Tensor rm = a.running_mean.cuda(), rv = a.running_var.cuda();
        auto [y, save_mean, save_invstd] =
            native_batch_norm(a.x.cuda(), a.weight.cuda(), a.bias.cuda(), rm, rv, false, 0.1, 1e-5);
        auto [ey, em, ei] = native_batch_norm(widen(a.x), widen(a.weight), widen(a.bias), widen(a.running_mean),
                                              widen(a.running_var), false, 0.1, 1e-5);
        const ScalarType stat = t == kDouble ? kDouble : kFloat;
        for (const std::string& m :
             {check("output", y, ey, t, value_tolerance(t)),
              check("running_mean", rm, a.running_mean, pt, std::pair{0.0, 0.0}),
              check("save_mean", save_mean, widen(a.running_mean), stat, std::pair{0.0, 0.0}),
              check("save_invstd", save_invstd, rsqrt(widen(a.running_var) + 1e-5), stat, value_tolerance(stat))})
          EXPECT_TRUE(m.empty()) << m;
      }
    }
  }
}

// Evaluation runs a block per chunk of an (n, c) plane: planes shorter and longer than a
// chunk, and more planes than channels.
TEST_F(CudaNorm, BatchNormEvaluationCoversPlanesOfEveryLength) {
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{2, 3, 40, 30}, std::vector<int64_t>{5, 2, 1025},
                                            std::vector<int64_t>{3, 7}, std::vector<int64_t>{4, 3, 2048}}) {
    for (ScalarType t : {kFloat, kHalf}) {
      const BatchNormArgs a = batch_norm_args(sizes, t, kFloat, true, true, false);
      auto [y, save_mean, save_invstd] = native_batch_norm(a.x.cuda(), a.weight.cuda(), a.bias.cuda(),
                                                           a.running_mean.cuda(), a.running_var.cuda(), false, 0.1, 1e-5);
      const Tensor ey = std::get<0>(native_batch_norm(widen(a.x), widen(a.weight), widen(a.bias),
                                                      widen(a.running_mean), widen(a.running_var), false, 0.1, 1e-5));
      for (const std::string& m :
           {check("output", y, ey, t, value_tolerance(t)),
            check("save_mean", save_mean, a.running_mean, kFloat, std::pair{0.0, 0.0}),
            check("save_invstd", save_invstd, rsqrt(a.running_var + 1e-5), kFloat, value_tolerance(kFloat))})
        EXPECT_TRUE(m.empty()) << m << " sizes " << IntArrayRef(sizes);
    }
  }
}

TEST_F(CudaNorm, BatchNormRaisesWhereTheCpuRaises) {
  const Tensor x = random_values({2, 3, 4}, kFloat);
  const Tensor four = random_values({4}, kFloat);
  for (const Stack& args : {Stack{x, four, IValue(), IValue(), IValue(), true, 0.1, 1e-5},
                            Stack{x, IValue(), IValue(), IValue(), IValue(), false, 0.1, 1e-5},
                            Stack{x.to(kInt32), IValue(), IValue(), IValue(), IValue(), true, 0.1, 1e-5}}) {
    const std::string m = compare("aten::native_batch_norm", args);
    EXPECT_TRUE(m.empty()) << m;
  }
}

TEST_F(CudaNorm, BatchNormGradientsThroughAutogradMatchTheCpuInTrainingAndEvaluation) {
  for (ScalarType t : kFloats) {
    for (bool training : {true, false}) {
      for (bool channels_last : {false, true}) {
        const BatchNormArgs a = batch_norm_args({4, 3, 5, 6}, t, t, true, true, channels_last);
        const Tensor gy = random_values({4, 3, 5, 6}, t, -1, 1, 47);
        auto run = [&](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv,
                       const Tensor& g) {
          x.requires_grad_();
          w.requires_grad_();
          b.requires_grad_();
          batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5).backward(g);
        };
        const Tensor xc = a.x.cuda(), wc = a.weight.cuda(), bc = a.bias.cuda();
        run(xc, wc, bc, a.running_mean.cuda(), a.running_var.cuda(), gy.cuda());
        const Tensor xr = widen(a.x).clone(), wr = widen(a.weight).clone(), br = widen(a.bias).clone();
        run(xr, wr, br, widen(a.running_mean).clone(), widen(a.running_var).clone(), widen(gy));
        for (const std::string& m :
             {check("x.grad", xc.grad().contiguous(), xr.grad().contiguous(), t, gradient_tolerance(t)),
              check("weight.grad", wc.grad().contiguous(), wr.grad().contiguous(), t, gradient_tolerance(t)),
              check("bias.grad", bc.grad().contiguous(), br.grad().contiguous(), t, gradient_tolerance(t))})
          EXPECT_TRUE(m.empty()) << m << (training ? " training" : " evaluation");
      }
    }
  }
}

TEST_F(CudaNorm, ChannelsLastBatchNormKeepsPyTorchsCudaLayouts) {
  // As PyTorch 2.11's CUDA kernels (seen on an H200): a channels_last input gives a
  // channels_last output in training and evaluation, and a channels_last grad_input in
  // training only (evaluation's is contiguous); values as the CPU's.
  auto nhwc = [](const Tensor& t) {
    const auto s = t.sizes();
    return !t.is_contiguous() && t.strides().vec() == std::vector<int64_t>{s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
  };
  for (bool train : {true, false}) {
    const BatchNormArgs a = batch_norm_args({3, 6, 4, 4}, kFloat, kFloat, true, true, true);
    const Tensor gy =
        random_values({3, 6, 4, 4}, kFloat, -1, 1, 61).permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
    auto [y, sm, si] = native_batch_norm(a.x.cuda(), a.weight.cuda(), a.bias.cuda(), a.running_mean.cuda(),
                                         a.running_var.cuda(), train, 0.1, 1e-5);
    EXPECT_TRUE(nhwc(y)) << "output strides " << y.strides() << (train ? " training" : " evaluation");
    const auto [gi, gw, gb] = native_batch_norm_backward(gy.cuda(), a.x.cuda(), a.weight.cuda(), a.running_mean.cuda(),
                                                         a.running_var.cuda(), sm, si, train, 1e-5, {true, true, true});
    EXPECT_EQ(nhwc(gi), train) << "grad_input strides " << gi.strides();
    EXPECT_EQ(gi.is_contiguous(), !train) << "grad_input strides " << gi.strides();
    auto [ey, esm, esi] = native_batch_norm(a.x, a.weight, a.bias, a.running_mean.clone(), a.running_var.clone(), train,
                                            0.1, 1e-5);
    // The CPU saves no statistics in evaluation (its backward reads the running ones).
    const std::optional<Tensor> saved_mean = train ? std::optional<Tensor>(esm) : std::nullopt;
    const std::optional<Tensor> saved_invstd = train ? std::optional<Tensor>(esi) : std::nullopt;
    const auto [ei, ew, eb] = native_batch_norm_backward(gy, a.x, a.weight, a.running_mean, a.running_var, saved_mean,
                                                         saved_invstd, train, 1e-5, {true, true, true});
    for (const std::string& m :
         {check("output", y.contiguous(), ey.contiguous(), kFloat, value_tolerance(kFloat)),
          check("grad_input", gi.contiguous(), ei.contiguous(), kFloat, gradient_tolerance(kFloat))})
      EXPECT_TRUE(m.empty()) << m << (train ? " training" : " evaluation");
  }
}

TEST_F(CudaNorm, BatchNormBackwardHonoursTheOutputMask) {
  const BatchNormArgs a = batch_norm_args({2, 3, 4}, kFloat, kFloat, true, true, false);
  const Tensor gy = random_values({2, 3, 4}, kFloat, -1, 1, 53);
  auto [y, sm, si] = native_batch_norm(a.x, a.weight, a.bias, std::nullopt, std::nullopt, true, 0.1, 1e-5);
  for (const std::array<bool, 3>& mask :
       {std::array<bool, 3>{true, false, false}, std::array<bool, 3>{false, true, true},
        std::array<bool, 3>{true, true, true}}) {
    auto [gi, gw, gb] = native_batch_norm_backward(gy.cuda(), a.x.cuda(), a.weight.cuda(), std::nullopt, std::nullopt,
                                                   sm.cuda(), si.cuda(), true, 1e-5, mask);
    auto [ei, ew, eb] =
        native_batch_norm_backward(gy, a.x, a.weight, std::nullopt, std::nullopt, sm, si, true, 1e-5, mask);
    const Tensor got[] = {gi, gw, gb}, want[] = {ei, ew, eb};
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(got[i].defined(), mask[i]) << "output " << i;
      if (got[i].defined()) {
        const std::string m = check("output " + std::to_string(i), got[i], want[i], kFloat, gradient_tolerance(kFloat));
        EXPECT_TRUE(m.empty()) << m;
      }
    }
  }
}

}  // namespace
}  // namespace ember::gpu_test
