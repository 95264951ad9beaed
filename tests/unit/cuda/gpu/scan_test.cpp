// The CUDA cumsum against Ember's CPU on the same input: every dtype (integers and bool
// give int64), explicit result dtypes, every dim of a 3-d input, non-contiguous inputs,
// rows longer than a block's threads, 0-dim and empty inputs, and the CPU's errors.
#include "gpu_helpers.h"
#include "kernels/cuda/scan.h"

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
  for (ScalarType t : {kFloat, kDouble, kInt32}) {
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

/// x (contiguous, rows along the last dim) summed as PyTorch's CUDA scan sums it in T:
/// chunks of 2^log_chunk elements, each starting from the previous chunk's total, then
/// Sklansky's tree within the chunk, every sum rounded to T.
template <typename T>
std::vector<float> pytorch_cuda_order(const std::vector<float>& x, int64_t rows, int64_t n, int log_chunk) {
  const int64_t chunk = int64_t{1} << log_chunk;
  std::vector<float> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    T total = T(0.0f);
    for (int64_t base = 0; base < n; base += chunk) {
      std::vector<T> buf(static_cast<size_t>(chunk), T(0.0f));
      for (int64_t i = 0; i < chunk && base + i < n; ++i) buf[i] = T(x[r * n + base + i]);
      buf[0] = T(float(buf[0]) + float(total));
      for (int m = 0; m < log_chunk; ++m) {
        const int64_t s = int64_t{1} << m;
        for (int64_t p = 0; p < chunk / 2; ++p) {
          const int64_t a = ((p >> m) << (m + 1)) | s, ti = a + (p & (s - 1));
          buf[ti] = T(float(buf[ti]) + float(buf[a - 1]));
        }
      }
      for (int64_t i = 0; i < chunk && base + i < n; ++i) out[r * n + base + i] = float(buf[i]);
      total = buf[chunk - 1];
    }
  }
  return out;
}

// PyTorch's CUDA cumsum adds in the result dtype: a long half or bfloat16 row saturates
// (its sum stops growing once the elements fall below half an ulp of it), unlike the CPU,
// which adds in float. Ember's CUDA gives PyTorch's CUDA bits.
TEST_F(CudaScan, HalfAndBfloat16RowsGivePyTorchsCudaBitsAlongTheLastDim) {
  for (ScalarType t : {kHalf, kBFloat16}) {
    for (auto [rows, n] : {std::pair<int64_t, int64_t>{3, 4}, {3, 5000}, {64, 1024}, {4096, 2}, {1, 3000}}) {
      const Tensor x = random_values({rows, n}, t, -1, 3, 23);
      const std::vector<float> values = x.to(kFloat).to_vector<float>();
      const int log_chunk = rows == 1 ? 10 : kernels::cuda::inner_scan_log_chunk(rows, n);
      const std::vector<float> want = t == kHalf ? pytorch_cuda_order<Half>(values, rows, n, log_chunk)
                                                 : pytorch_cuda_order<BFloat16>(values, rows, n, log_chunk);
      const std::vector<float> got = cumsum(x.cuda(), 1).to(kFloat).to_vector<float>();
      ASSERT_EQ(got.size(), want.size());
      int64_t differ = 0;
      for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i];
      EXPECT_EQ(differ, 0) << t << " [" << rows << ", " << n << "]";
    }
  }
}

// Along another dim PyTorch adds each line in order, in the result dtype.
TEST_F(CudaScan, HalfLinesAlongAnOuterDimAddInOrderInHalf) {
  const Tensor x = random_values({3000, 5}, kHalf, 0, 1, 29);
  const std::vector<float> values = x.to(kFloat).to_vector<float>();
  std::vector<float> want(values.size());
  for (int64_t c = 0; c < 5; ++c) {
    Half acc(0.0f);
    for (int64_t r = 0; r < 3000; ++r) {
      acc = Half(float(acc) + values[r * 5 + c]);
      want[r * 5 + c] = float(acc);
    }
  }
  EXPECT_EQ(cumsum(x.cuda(), 0).to(kFloat).to_vector<float>(), want);
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
