// The CUDA random ops (rand, randn, their _like forms, bernoulli, native_dropout, dropout)
// against the CPU bit for bit: after the same manual_seed the same calls give the same
// bits on either device and leave the generator at the same offset (Note [random]), for
// every float dtype, sizes that are not a multiple of the elements per counter, and calls
// in a row (each starts where the last one's counters end).
#include <cmath>
#include <cstring>
#include <sstream>

#include "gpu_helpers.h"
#include "support/error_of.h"

namespace ember::gpu_test {
namespace {

const std::vector<ScalarType> kFloats = {kFloat, kHalf, kBFloat16, kDouble};
const std::vector<int64_t> kSizes = {1, 2, 3, 4, 5, 7, 1000, 4099};

TensorOptions on_gpu(ScalarType t) { return TensorOptions(t).device("cuda"); }

/// Empty when `gpu` is a CUDA tensor with exactly `cpu`'s dtype, sizes, strides and bytes.
std::string bits_differ(const Tensor& gpu, const Tensor& cpu) {
  std::ostringstream os;
  if (!gpu.is_cuda()) return "result on " + gpu.device().str();
  if (gpu.dtype() != cpu.dtype() || gpu.sizes() != cpu.sizes() || gpu.strides() != cpu.strides()) {
    os << "got " << gpu.dtype() << gpu.sizes() << gpu.strides() << ", expected " << cpu.dtype() << cpu.sizes()
       << cpu.strides();
    return os.str();
  }
  const Tensor h = gpu.cpu().contiguous(), c = cpu.contiguous();
  const size_t es = c.element_size();
  const char* hp = static_cast<const char*>(h.raw_data_ptr());
  const char* cp = static_cast<const char*>(c.raw_data_ptr());
  // A NaN made by arithmetic (dropout's inf * 0) has the processor's own sign and
  // payload: x86 makes the "default NaN" with the sign bit set, NVIDIA GPUs a positive
  // one. Any NaN matches any NaN; every other value must match bit for bit.
  const bool floating = is_floating_point(c.dtype());
  const Tensor hd = floating ? h.to(kDouble) : h, cd = floating ? c.to(kDouble) : c;
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (std::memcmp(hp + i * es, cp + i * es, es) == 0) continue;
    if (floating && std::isnan(hd.data_ptr<double>()[i]) && std::isnan(cd.data_ptr<double>()[i])) continue;
    os.precision(17);
    os << "element " << i << ": got " << h.reshape({-1})[i].item<double>() << ", expected "
       << c.reshape({-1})[i].item<double>();
    return os.str();
  }
  return "";
}

/// Runs `draw(options)` twice after manual_seed(seed), on the CPU and then on the GPU;
/// every result must match bit for bit and the generator must end at the same offset.
template <typename Draw>
void expect_same_stream(ScalarType dtype, Draw draw) {
  manual_seed(1234);
  const Tensor c1 = draw(TensorOptions(dtype)), c2 = draw(TensorOptions(dtype));
  const auto after_cpu = generator_state();
  manual_seed(1234);
  const Tensor g1 = draw(on_gpu(dtype)), g2 = draw(on_gpu(dtype));
  EXPECT_EQ(generator_state(), after_cpu) << dtype;
  EXPECT_EQ(bits_differ(g1, c1), "") << dtype << " first call";
  EXPECT_EQ(bits_differ(g2, c2), "") << dtype << " second call";
}

TEST_F(Gpu, RandGivesTheCpusBitsForEveryFloatDtypeAndSize) {
  for (ScalarType t : kFloats)
    for (int64_t n : kSizes) {
      SCOPED_TRACE(n);
      expect_same_stream(t, [n](TensorOptions o) { return rand({n}, o); });
    }
}

TEST_F(Gpu, RandnGivesTheCpusBitsForEveryFloatDtypeAndSize) {
  for (ScalarType t : kFloats)
    for (int64_t n : kSizes) {
      SCOPED_TRACE(n);
      expect_same_stream(t, [n](TensorOptions o) { return randn({n}, o); });
    }
}

TEST_F(Gpu, RandnOfAMillionDoublesGivesTheCpusBits) {
  // Box–Muller's log, sin and cos are philox.h's own, not the devices' math libraries.
  expect_same_stream(kDouble, [](TensorOptions o) { return randn({1000003}, o); });
  expect_same_stream(kFloat, [](TensorOptions o) { return randn({1000003}, o); });
}

TEST_F(Gpu, RandLikeAndRandnLikeFollowSelfsDeviceAndGiveTheCpusBits) {
  for (ScalarType t : kFloats) {
    expect_same_stream(t, [](TensorOptions o) { return rand_like(empty({3, 5}, o)); });
    expect_same_stream(t, [](TensorOptions o) { return randn_like(empty({2, 7}, o)); });
  }
}

TEST_F(Gpu, CpuAndCudaCallsShareOneStream) {
  manual_seed(5);
  const Tensor a = rand({9}), b = randn({6}, on_gpu(kFloat));
  manual_seed(5);
  const Tensor a2 = rand({9}, on_gpu(kFloat)), b2 = randn({6});
  EXPECT_EQ(bits_differ(a2, a), "");
  EXPECT_EQ(bits_differ(b, b2), "");
}

/// Probabilities in [0, 1] with 0 and 1 among them.
Tensor probabilities(int64_t n, ScalarType t) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = i % 5 == 0 ? 0.0 : (i % 7 == 0 ? 1.0 : static_cast<double>(i % 97) / 97);
  return tensor(v, {n}, TensorOptions(kDouble)).to(t);
}

TEST_F(Gpu, BernoulliOfATensorOfProbabilitiesGivesTheCpusBits) {
  for (ScalarType t : kFloats)
    for (int64_t n : kSizes) {
      SCOPED_TRACE(n);
      const Tensor p = probabilities(n, t);
      expect_same_stream(t, [&](TensorOptions o) { return bernoulli(p.to(o.device_.value_or(kCPU))); });
    }
}

TEST_F(Gpu, BernoulliOfAStridedTensorReadsItInLogicalOrder) {
  const Tensor p = probabilities(35, kFloat).reshape({5, 7});
  expect_same_stream(kFloat, [&](TensorOptions o) { return bernoulli(p.to(o.device_.value_or(kCPU)).t()); });
}

TEST_F(Gpu, BernoulliWithAScalarProbabilityKeepsEveryDtypeAndGivesTheCpusBits) {
  for (ScalarType t : {kFloat, kHalf, kBFloat16, kDouble, kInt64, kInt32, kUInt8, kBool})
    for (int64_t n : {int64_t{1}, int64_t{6}, int64_t{1001}}) {
      SCOPED_TRACE(n);
      expect_same_stream(t, [&](TensorOptions o) { return bernoulli(zeros({n}, o), 0.3); });
    }
}

TEST_F(Gpu, BernoulliOutOfRangeRaisesTheCpusErrorAndReservesNothing) {
  for (double bad : {1.5, -0.25, std::nan("")}) {
    const Tensor p = tensor(std::vector<double>{0.5, bad, 0.1}, {3}, TensorOptions(kFloat)).cuda();
    manual_seed(3);
    const std::string msg = testing::error_of([&] { bernoulli(p); });
    EXPECT_NE(msg.find("Expected p_in >= 0 && p_in <= 1 to be true, but got false."), std::string::npos) << msg;
    EXPECT_EQ(generator_state(), (std::pair<uint64_t, uint64_t>{3, 0}));
  }
}

/// Values with negatives (so dropped elements are -0.0, as on the CPU), zeros and an inf.
Tensor dropout_input(int64_t n, ScalarType t) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = i % 11 == 3 ? 0.0 : (i % 13 == 5 ? INFINITY : 0.37 * static_cast<double>(i - n / 2));
  return tensor(v, {n}, TensorOptions(kDouble)).to(t);
}

TEST_F(Gpu, NativeDropoutTrainingGivesTheCpusOutputAndMaskBits) {
  for (ScalarType t : kFloats)
    for (double p : {0.0, 0.3, 0.9, 1.0})
      for (int64_t n : kSizes) {
        SCOPED_TRACE(std::to_string(p) + " " + std::to_string(n));
        const Tensor x = dropout_input(n, t);
        manual_seed(77);
        const auto [c_out, c_mask] = native_dropout(x, p, true);
        const auto [c_out2, c_mask2] = native_dropout(x, p, true);
        const auto after = generator_state();
        manual_seed(77);
        const Tensor xg = x.cuda();
        const auto [g_out, g_mask] = native_dropout(xg, p, true);
        const auto [g_out2, g_mask2] = native_dropout(xg, p, true);
        EXPECT_EQ(generator_state(), after);
        EXPECT_EQ(bits_differ(g_out, c_out), "") << t;
        EXPECT_EQ(bits_differ(g_mask, c_mask), "") << t;
        EXPECT_EQ(bits_differ(g_out2, c_out2), "") << t;
        EXPECT_EQ(bits_differ(g_mask2, c_mask2), "") << t;
      }
}

TEST_F(Gpu, NativeDropoutOfAStridedInputMatchesTheCpu) {
  const Tensor x = dropout_input(48, kFloat).reshape({6, 8});
  manual_seed(8);
  const auto [c_out, c_mask] = native_dropout(x.t(), 0.4, true);
  manual_seed(8);
  const auto [g_out, g_mask] = native_dropout(x.cuda().t(), 0.4, true);
  EXPECT_EQ(bits_differ(g_out, c_out), "");
  EXPECT_EQ(bits_differ(g_mask, c_mask), "");
}

TEST_F(Gpu, NativeDropoutEvalCopiesWithAnAllTrueMaskAndDrawsNothing) {
  const Tensor x = dropout_input(10, kHalf);
  manual_seed(9);
  const auto [out, mask] = native_dropout(x.cuda(), 0.5, false);
  EXPECT_EQ(generator_state(), (std::pair<uint64_t, uint64_t>{9, 0}));
  const auto [c_out, c_mask] = native_dropout(x, 0.5, false);
  EXPECT_EQ(bits_differ(out, c_out), "");
  EXPECT_EQ(bits_differ(mask, c_mask), "");
}

TEST_F(Gpu, NativeDropoutOfAnEmptyInputGivesAnEmptyMaskOfItsDtype) {
  const auto [out, mask] = native_dropout(empty({0, 3}, on_gpu(kFloat)), 0.5, true);
  EXPECT_TRUE(out.is_cuda());
  EXPECT_EQ(mask.dtype(), kFloat);
  EXPECT_EQ(mask.sizes().vec(), (std::vector<int64_t>{0, 3}));
}

TEST_F(Gpu, DropoutTrainingDrawsWhatNativeDropoutDraws) {
  const Tensor x = dropout_input(101, kBFloat16);
  manual_seed(10);
  const Tensor c = dropout(x, 0.2, true);
  manual_seed(10);
  const Tensor g = dropout(x.cuda(), 0.2, true);
  EXPECT_EQ(bits_differ(g, c), "");
}

}  // namespace
}  // namespace ember::gpu_test
