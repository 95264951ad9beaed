// The CUDA pooling ops (max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d) and
// their backward ops, against Ember's CPU on the same values: padding, stride, dilation,
// ceil_mode, count_include_pad, divisor_override, 3-d and 4-d inputs, channels-last
// (non-contiguous) inputs, NaN, empty batches, gradients through autograd, and the same
// errors where the CPU raises.
#include <functional>

#include "gpu_helpers.h"

namespace ember::gpu_test {
namespace {

const ScalarType kFloats[] = {kFloat, kDouble, kHalf, kBFloat16};

/// An input of `sizes` in `t`; channels_last stores a 4-d one as [N, H, W, C].
Tensor pool_input(IntArrayRef sizes, ScalarType t, bool channels_last, uint64_t seed = 3) {
  if (!channels_last || sizes.size() != 4) return random_values(sizes, t, -2, 3, seed);
  return random_values({sizes[0], sizes[2], sizes[3], sizes[1]}, t, -2, 3, seed).permute({0, 3, 1, 2});
}

/// compare_outputs with `x` first and `rest` after it.
std::string compare_all(const std::string& op, const Tensor& x, const Stack& rest, Tolerance tol = std::nullopt) {
  Stack args{x};
  args.insert(args.end(), rest.begin(), rest.end());
  return compare_outputs(op, args, tol);
}

using Ints = std::vector<int64_t>;

struct MaxPoolCase {
  Ints sizes, kernel, stride, padding, dilation;
  bool ceil_mode;
};

const std::vector<MaxPoolCase> kMaxPoolCases = {
    {{2, 3, 8, 9}, {2, 2}, {}, {0, 0}, {1, 1}, false},     {{2, 3, 8, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
    {{2, 3, 9, 7}, {3, 2}, {2, 1}, {1, 0}, {2, 2}, true},  {{3, 10, 11}, {3, 3}, {2, 2}, {0, 1}, {1, 1}, true},
    {{1, 2, 5, 5}, {5, 5}, {1, 1}, {2, 2}, {1, 1}, false}, {{0, 3, 6, 6}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false}};

class CudaPool : public Gpu {};

TEST_F(CudaPool, MaxPoolValuesAndIndicesMatchTheCpu) {
  for (ScalarType t : kFloats) {
    for (const MaxPoolCase& c : kMaxPoolCases) {
      for (bool channels_last : {false, true}) {
        const Tensor x = pool_input(c.sizes, t, channels_last);
        const std::string m =
            compare_all("aten::max_pool2d_with_indices", x, {c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode});
        EXPECT_TRUE(m.empty()) << m << " (" << t << ", " << IntArrayRef(c.sizes) << ")";
      }
    }
  }
}

TEST_F(CudaPool, MaxPoolPicksNaNAndTheFirstOfTiedMaxima) {
  // Windows of equal values (ties) and two windows with a NaN.
  Tensor x = full({1, 1, 4, 4}, 1.0, TensorOptions(kFloat));
  const std::vector<std::optional<Tensor>> at = {tensor<int64_t>({0, 0}), tensor<int64_t>({0, 0}),
                                                 tensor<int64_t>({1, 3}), tensor<int64_t>({1, 0})};
  x = index_put(x, at, tensor<float>({NAN, NAN}));
  for (ScalarType t : kFloats) {
    const std::string m =
        compare_all("aten::max_pool2d_with_indices", x.to(t), {Ints{2, 2}, Ints{2, 2}, Ints{0, 0}, Ints{1, 1}, false});
    EXPECT_TRUE(m.empty()) << m;
  }
}

TEST_F(CudaPool, AvgPoolMatchesTheCpuWithEveryDivisorRule) {
  struct Case {
    Ints sizes, kernel, stride, padding;
    bool ceil_mode, count_include_pad;
    std::optional<int64_t> divisor;
  };
  const std::vector<Case> cases = {{{2, 3, 8, 9}, {2, 2}, {}, {0, 0}, false, true, std::nullopt},
                                   {{2, 3, 8, 9}, {3, 3}, {2, 2}, {1, 1}, false, true, std::nullopt},
                                   {{2, 3, 8, 9}, {3, 3}, {2, 2}, {1, 1}, true, false, std::nullopt},
                                   {{3, 7, 10}, {3, 2}, {2, 3}, {1, 1}, true, true, 5},
                                   {{0, 2, 4, 4}, {2, 2}, {2, 2}, {0, 0}, false, true, std::nullopt}};
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kInt64}) {
    for (const Case& c : cases) {
      for (bool channels_last : {false, true}) {
        const Tensor x =
            t == kInt64 ? random_values(c.sizes, kDouble, -20, 30).to(kInt64) : pool_input(c.sizes, t, channels_last);
        const std::string m = compare_all("aten::avg_pool2d", x,
                                          {c.kernel, c.stride, c.padding, c.ceil_mode, c.count_include_pad, c.divisor});
        EXPECT_TRUE(m.empty()) << m << " (" << t << ", " << IntArrayRef(c.sizes) << ")";
      }
    }
  }
}

TEST_F(CudaPool, AdaptiveAvgPoolMatchesTheCpuForShrinkingAndGrowingSizes) {
  for (ScalarType t : kFloats) {
    for (const Ints& out : {Ints{1, 1}, Ints{3, 5}, Ints{7, 10}, Ints{9, 13}, Ints{0, 4}}) {
      for (bool channels_last : {false, true}) {
        const Tensor x = pool_input({2, 3, 7, 10}, t, channels_last);
        const std::string m = compare_all("aten::_adaptive_avg_pool2d", x, {out});
        EXPECT_TRUE(m.empty()) << m << " (" << t << ", " << IntArrayRef(out) << ")";
      }
    }
    const std::string m3 = compare_all("aten::_adaptive_avg_pool2d", pool_input({4, 6, 5}, t, false), {Ints{4, 3}});
    EXPECT_TRUE(m3.empty()) << m3;
  }
}

TEST_F(CudaPool, PoolingRaisesWhereTheCpuRaises) {
  const Tensor x = random_values({1, 2, 4, 4}, kFloat);
  const std::vector<std::pair<std::string, Stack>> calls = {
      {"aten::max_pool2d_with_indices", {x, Ints{5, 5}, Ints{}, Ints{0, 0}, Ints{1, 1}, false}},
      {"aten::max_pool2d_with_indices", {x, Ints{2, 2}, Ints{}, Ints{2, 2}, Ints{1, 1}, false}},
      {"aten::avg_pool2d", {x, Ints{2, 2}, Ints{}, Ints{0, 0}, false, true, int64_t{0}}},
      {"aten::_adaptive_avg_pool2d", {random_values({2, 0, 3}, kFloat), Ints{2, 2}}}};
  for (const auto& [op, args] : calls) {
    const std::string m = compare(op, args);
    EXPECT_TRUE(m.empty()) << m;
  }
}

/// x.grad of `pool(x)` with upstream gradient `g`, on x's device.
template <typename F>
Tensor grad_of(const Tensor& x, const Tensor& g, const F& pool) {
  x.requires_grad_();
  pool(x).backward(g);
  return x.grad();
}

TEST_F(CudaPool, PoolingGradientsThroughAutogradMatchTheCpu) {
  for (ScalarType t : kFloats) {
    for (bool channels_last : {false, true}) {
      const Tensor x = pool_input({2, 3, 9, 8}, t, channels_last, 5);
      auto max_pool = [](const Tensor& v) { return max_pool2d(v, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true); };
      auto dilated = [](const Tensor& v) { return max_pool2d(v, {2, 3}, {1, 2}, {1, 1}, {2, 2}, false); };
      auto avg_pool = [](const Tensor& v) { return avg_pool2d(v, {3, 3}, {2, 2}, {1, 1}, true, false); };
      auto divided = [](const Tensor& v) { return avg_pool2d(v, {2, 3}, {1, 2}, {0, 1}, false, true, 4); };
      auto adaptive = [](const Tensor& v) { return adaptive_avg_pool2d(v, {4, 5}); };
      auto growing = [](const Tensor& v) { return adaptive_avg_pool2d(v, {11, 13}); };
      const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> pools = {
          {"max_pool2d", max_pool},          {"dilated max_pool2d", dilated},
          {"avg_pool2d", avg_pool},          {"avg_pool2d divisor_override", divided},
          {"adaptive_avg_pool2d", adaptive}, {"growing adaptive_avg_pool2d", growing}};
      for (const auto& [name, pool] : pools) {
        const Tensor y = pool(x);
        const Tensor g = random_values(y.sizes(), t, -1, 1, 7);
        const Tensor got = grad_of(x.cuda(), g.cuda(), pool);
        const Tensor want = grad_of(x.clone(), g, pool);
        EXPECT_TRUE(got.is_cuda()) << name;
        // Gradients are compared in value: their layout is the engine's, not the kernels'.
        const std::string m = mismatch(got.contiguous(), want.contiguous(), gradient_tolerance(t));
        EXPECT_TRUE(m.empty()) << name << " (" << t << (channels_last ? ", channels last" : "") << "): " << m;
      }
    }
  }
}

}  // namespace
}  // namespace ember::gpu_test
