// The CUDA cumsum against Ember's CPU on the same input: every dtype (integers and bool
// give int64), explicit result dtypes, every dim of a 3-d input, non-contiguous inputs,
// rows longer than a block's threads, 0-dim and empty inputs, and the CPU's errors.
#include "gpu_helpers.h"

namespace ember::gpu_test {
namespace {

const ScalarType kAll[] = {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool};

/// Partial sums are added in another order than the CPU's (and in float for float
/// results, where the CPU uses double); values are non-negative, so sums do not cancel.
Tolerance scan_tolerance(ScalarType t) {
  switch (t) {
    case kFloat:
      return std::pair{2e-5, 1e-5};
    case kDouble:
      return std::pair{1e-10, 1e-10};
    case kHalf:
      return std::pair{5e-3, 1e-2};
    case kBFloat16:
      return std::pair{3e-2, 5e-2};
    default:
      return std::pair{0.0, 0.0};
  }
}

class CudaScan : public Gpu {};

TEST_F(CudaScan, CumsumMatchesTheCpuAlongEveryDimForEveryDtype) {
  for (ScalarType t : kAll) {
    const Tensor x = random_values({5, 7, 11}, t, 0, 3, 21);
    for (int64_t dim : {0, 1, 2, -1}) {
      const std::string m =
          compare("aten::cumsum", {x, dim, IValue()}, scan_tolerance(is_floating_point(t) ? t : kInt64));
      EXPECT_TRUE(m.empty()) << m << " (" << t << ", dim " << dim << ")";
    }
  }
}

TEST_F(CudaScan, CumsumWithAnExplicitDtypeConvertsFirst) {
  const Tensor x = random_values({4, 9}, kFloat, 0, 300, 3);
  for (ScalarType out : {kInt32, kHalf, kDouble}) {
    const std::string m = compare("aten::cumsum", {x, int64_t{1}, out}, scan_tolerance(out));
    EXPECT_TRUE(m.empty()) << m << " (" << out << ")";
  }
}

TEST_F(CudaScan, LongRowsAndNonContiguousInputsMatchTheCpu) {
  for (ScalarType t : {kFloat, kDouble, kInt32, kHalf}) {
    const int64_t n = 5000;  // rows longer than a block: each thread scans a piece
    const Tensor rows = random_values({3, n}, t, 0, 1, 17);
    std::string m =
        compare("aten::cumsum", {rows, int64_t{1}, IValue()}, scan_tolerance(is_floating_point(t) ? t : kInt64));
    EXPECT_TRUE(m.empty()) << m << " (" << t << ", long rows)";
    const Tensor base = random_values({13, 7, 10}, t, 0, 2, 19);
    for (const Tensor& view : {base.permute({2, 0, 1}), base.slice(2, 1, 10, 3), base.transpose(0, 1)}) {
      for (int64_t dim : {0, 1, 2}) {
        m = compare("aten::cumsum", {view, dim, IValue()}, scan_tolerance(is_floating_point(t) ? t : kInt64));
        EXPECT_TRUE(m.empty()) << m << " (" << t << ", strided, dim " << dim << ")";
      }
    }
  }
}

TEST_F(CudaScan, ZeroDimAndEmptyInputsAndBadDimsBehaveAsOnTheCpu) {
  const std::vector<Stack> cases = {{scalar_tensor(2.5), int64_t{0}, IValue()},
                                    {zeros({0, 4}), int64_t{0}, IValue()},
                                    {zeros({3, 0}), int64_t{1}, IValue()},
                                    {zeros({3, 4}), int64_t{2}, IValue()}};
  for (const Stack& args : cases) {
    const std::string m = compare("aten::cumsum", args);
    EXPECT_TRUE(m.empty()) << m;
  }
}

}  // namespace
}  // namespace ember::gpu_test
