// Autocast on CUDA tensors (Note [autocast]) for float16 and bfloat16 scopes, against
// Ember's CPU kernels on the explicitly cast inputs: the float32 ops (reductions and
// softmax with their dtype argument, exp/log/pow, losses) return float32, promote ops
// return the widest input, binary_cross_entropy is banned, each scope casts only tensors
// of its own device type, and GEMMs/convolutions run in the low dtype once their CUDA
// kernels exist.
#include "gpu_helpers.h"
#include "ops/autocast.h"
#include "support/error_of.h"

namespace ember::gpu_test {
namespace {

class AutocastGpu : public Gpu, public ::testing::WithParamInterface<ScalarType> {
 protected:
  void SetUp() override {
    Gpu::SetUp();
    manual_seed(0);
  }
  ScalarType low() const { return GetParam(); }
  /// Values exactly representable in the low dtype, as float32 on the CPU.
  Tensor input(IntArrayRef sizes, double scale = 1, double shift = 0) const {
    return (randn(sizes) * scale + shift).to(low()).to(kFloat);
  }
};

/// Float32 results of reductions that sum in another order on each device.
const Tolerance kFloatReduction = std::pair{1e-5, 1e-5};

TEST_P(AutocastGpu, ReductionsAndSoftmaxWithoutADtypeReturnFloat32) {
  const Tensor x = input({5, 37});
  const Tensor xg = x.to(low()).cuda();
  Tensor s, s1, p, sm, lsm, sm_kept;
  {
    autocast scope(kCUDA, low());
    s = sum(xg);
    s1 = sum(xg, {1});
    p = prod(xg.narrow(1, 0, 4));
    sm = softmax(xg, 1);
    lsm = log_softmax(xg, 1);
    sm_kept = softmax(xg, 1, low());
  }
  EXPECT_EQ(mismatch(s, sum(x), kFloatReduction), "");
  EXPECT_EQ(mismatch(s1, sum(x, {1}), kFloatReduction), "");
  EXPECT_EQ(mismatch(p, prod(x.narrow(1, 0, 4)), kFloatReduction), "");
  EXPECT_EQ(mismatch(sm, softmax(x, 1), kFloatReduction), "");
  EXPECT_EQ(mismatch(lsm, log_softmax(x, 1), kFloatReduction), "");
  EXPECT_EQ(sm_kept.dtype(), low()) << "an explicit dtype is kept";
  EXPECT_TRUE(sm.is_cuda());
}

TEST_P(AutocastGpu, PrecisionSensitivePointwiseOpsReturnFloat32) {
  const Tensor x = input({257}, 0.5, 2);  // positive: log, rsqrt
  const Tensor xg = x.to(low()).cuda();
  autocast scope(kCUDA, low());
  EXPECT_EQ(mismatch(exp(xg), exp(x)), "");
  EXPECT_EQ(mismatch(log(xg), log(x)), "");
  EXPECT_EQ(mismatch(log1p(xg), log1p(x)), "");
  EXPECT_EQ(mismatch(rsqrt(xg), rsqrt(x)), "");
  EXPECT_EQ(mismatch(reciprocal(xg), reciprocal(x)), "");
  EXPECT_EQ(mismatch(pow(xg, 3), pow(x, 3)), "");
  EXPECT_EQ(sin(xg).dtype(), low()) << "ops on no list run in their inputs' dtype";
}

TEST_P(AutocastGpu, LossesRunInFloat32) {
  const Tensor a = input({6, 9}), b = input({6, 9});
  const Tensor ag = a.to(low()).cuda(), bg = b.to(low()).cuda();
  autocast scope(kCUDA, low());
  EXPECT_EQ(mismatch(mse_loss(ag, bg), mse_loss(a, b), kFloatReduction), "");
  EXPECT_EQ(mismatch(l1_loss(ag, bg), l1_loss(a, b), kFloatReduction), "");
  EXPECT_EQ(mismatch(smooth_l1_loss(ag, bg), smooth_l1_loss(a, b), kFloatReduction), "");
}

TEST_P(AutocastGpu, PromoteOpsRunInTheWidestFloatingInput) {
  const Tensor a = input({33}), b = input({33});
  autocast scope(kCUDA, low());
  const Tensor mixed = atan2(a.to(low()).cuda(), b.cuda());
  EXPECT_EQ(mismatch(mixed, atan2(a, b)), "");
  const Tensor same = atan2(a.to(low()).cuda(), b.to(low()).cuda());
  EXPECT_EQ(mismatch(same, atan2(a.to(low()), b.to(low()))), "");
  const Tensor wider = atan2(a.to(low()).cuda(), b.to(kDouble).cuda());
  EXPECT_EQ(wider.dtype(), kDouble) << "float64 is left alone; ordinary promotion follows";
}

TEST_P(AutocastGpu, BinaryCrossEntropyIsUnsafeToAutocastOnCuda) {
  const Tensor p = sigmoid(randn({4})).to(low()).cuda(), t = rand({4}).to(low()).cuda();
  autocast scope(kCUDA, low());
  const std::string msg = testing::error_of([&] { binary_cross_entropy(p, t); });
  EXPECT_NE(msg.find("are unsafe to autocast"), std::string::npos) << msg;
  EXPECT_NE(msg.find("binary_cross_entropy_with_logits"), std::string::npos) << msg;
}

TEST_P(AutocastGpu, EachScopeCastsOnlyTensorsOfItsDeviceType) {
  const Tensor xg = input({3, 4}).to(low()).cuda();
  {
    autocast scope(kCPU);
    EXPECT_EQ(sum(xg).dtype(), low()) << "a CPU scope leaves CUDA tensors alone";
  }
  autocast scope(kCUDA, low());
  EXPECT_EQ(mse_loss(input({3, 4}).to(low()), input({3, 4}).to(low())).dtype(), low())
      << "a CUDA scope leaves CPU tensors alone";
  EXPECT_EQ(sum(xg.to(kDouble)).dtype(), kDouble) << "float64 is never cast";
}

TEST_P(AutocastGpu, MatmulsRunInTheLowDtype) {
  if (!ops::registry().get("aten::mm").cuda) GTEST_SKIP() << "aten::mm has no CUDA kernel in this build yet";
  const Tensor a = input({17, 33}), b = input({33, 9}), w = input({9, 33}), bias = input({9});
  const Tensor a_low = a.to(low()), b_low = b.to(low()), w_low = w.to(low()), bias_low = bias.to(low());
  autocast scope(kCUDA, low());
  // float32 inputs on the device: cast by the scope.
  EXPECT_EQ(mismatch(mm(a.cuda(), b.cuda()), mm(a_low, b_low)), "");
  EXPECT_EQ(mismatch(matmul(a.cuda(), b.cuda()), matmul(a_low, b_low)), "");
  EXPECT_EQ(mismatch(linear(a.cuda(), w.cuda(), bias.cuda()), linear(a_low, w_low, bias_low)), "");
  EXPECT_EQ(mismatch(bmm(a.unsqueeze(0).cuda(), b.unsqueeze(0).cuda()), bmm(a_low.unsqueeze(0), b_low.unsqueeze(0))),
            "");
}

TEST_P(AutocastGpu, ConvolutionsRunInTheLowDtype) {
  if (!ops::registry().get("aten::convolution").cuda) {
    GTEST_SKIP() << "aten::convolution has no CUDA kernel in this build yet";
  }
  const Tensor x = input({2, 3, 8, 8}), w = input({4, 3, 3, 3}), bias = input({4});
  autocast scope(kCUDA, low());
  const Tensor out = conv2d(x.cuda(), w.cuda(), bias.cuda(), {1, 1}, {1, 1});
  // The reference is cuDNN's convolution of the cast inputs (the CPU's low-precision
  // convolution rounds differently): what the scope runs, without the scope.
  const Tensor x_low = x.to(low()).cuda(), w_low = w.to(low()).cuda(), bias_low = bias.to(low()).cuda();
  EXPECT_EQ(mismatch(out, conv2d(x_low, w_low, bias_low, {1, 1}, {1, 1})), "");
}

INSTANTIATE_TEST_SUITE_P(LowDtypes, AutocastGpu, ::testing::Values(kHalf, kBFloat16),
                         [](const ::testing::TestParamInfo<ScalarType>& i) {
                           return i.param == kHalf ? std::string("Float16") : std::string("BFloat16");
                         });

}  // namespace
}  // namespace ember::gpu_test
