// The matrix products on CUDA (cuBLASLt) against Ember's CPU results: mm, bmm, addmm, mv,
// dot, and matmul/linear, which fold to them; every floating dtype; operands transposed,
// sliced, padded and expanded (read in place or copied, kernels/cuda/gemm_plan.h);
// batches with any batch strides; alpha, beta and a broadcast bias; empty dims; integer
// products raising as PyTorch's CUDA kernels do; float32 without TF32 unless allowed.
// Values are multiples of 1/4 (library_helpers.h), so both devices round the same exact
// sums and assert_close's default tolerances hold for every dtype.
#include <functional>
#include <tuple>

#include "ember/config.h"
#include "library_helpers.h"
#include "support/error_of.h"

namespace ember::gpu_test {
namespace {

using View = std::function<Tensor(const Tensor&)>;
const View kSame = [](const Tensor& t) { return t; };

std::string shape(IntArrayRef sizes) {
  std::ostringstream os;
  os << sizes;
  return os.str();
}

std::string where(ScalarType t, const std::string& what) {
  std::ostringstream os;
  os << " (" << t << ", " << what << ")";
  return os.str();
}

/// `op` over views of CPU bases and the same views of the bases copied to the GPU, with
/// `rest` after the tensors.
std::string check(const std::string& op, const std::vector<Tensor>& bases, const std::vector<View>& views,
                  const Stack& rest = {}, Tolerance tol = std::nullopt) {
  Stack cpu, gpu;
  for (size_t i = 0; i < bases.size(); ++i) {
    cpu.push_back(views[i](bases[i]));
    gpu.push_back(views[i](bases[i].cuda()));
  }
  for (const IValue& v : rest) {
    cpu.push_back(v);
    gpu.push_back(v);
  }
  return compare(op, cpu, gpu, tol);
}

class CudaGemm : public GpuBlas {};

TEST_F(CudaGemm, MmMatchesTheCpuForEveryFloatingDtypeAndShape) {
  const std::vector<std::array<int64_t, 3>> shapes = {{1, 1, 1}, {3, 5, 7}, {64, 33, 17}, {128, 256, 64}, {1, 300, 1}};
  for (ScalarType t : kFloatDtypes) {
    for (auto [m, k, n] : shapes) {
      const std::string r = check("aten::mm", {quarters({m, k}, t, 1), quarters({k, n}, t, 2)}, {kSame, kSame});
      EXPECT_TRUE(r.empty()) << r << where(t, std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
    }
  }
}

TEST_F(CudaGemm, TransposedSlicedPaddedAndExpandedOperandsMatchTheCpu) {
  // Each view of a base gives a 6 x 10 operand a and a 10 x 4 operand b.
  const std::vector<std::pair<std::string, std::pair<std::vector<int64_t>, View>>> a_views = {
      {"contiguous", {{6, 10}, kSame}},
      {"transposed", {{10, 6}, [](const Tensor& t) { return t.t(); }}},
      {"padded rows", {{6, 16}, [](const Tensor& t) { return t.narrow(1, 3, 10); }}},
      {"padded columns of a transpose", {{13, 6}, [](const Tensor& t) { return t.narrow(0, 1, 10).t(); }}},
      {"every other column", {{6, 20}, [](const Tensor& t) { return t.slice(1, 0, 20, 2); }}},
      {"expanded rows", {{1, 10}, [](const Tensor& t) { return t.expand({6, 10}); }}},
      {"expanded columns", {{6, 1}, [](const Tensor& t) { return t.expand({6, 10}); }}},
  };
  const std::vector<std::pair<std::string, std::pair<std::vector<int64_t>, View>>> b_views = {
      {"contiguous", {{10, 4}, kSame}},
      {"transposed", {{4, 10}, [](const Tensor& t) { return t.t(); }}},
      {"every other row", {{20, 4}, [](const Tensor& t) { return t.slice(0, 1, 20, 2); }}},
      {"a column of a wider matrix, transposed", {{4, 12}, [](const Tensor& t) { return t.narrow(1, 2, 10).t(); }}},
  };
  for (ScalarType t : kFloatDtypes) {
    for (const auto& [an, a] : a_views) {
      for (const auto& [bn, b] : b_views) {
        const std::string r =
            check("aten::mm", {quarters(a.first, t, 3), quarters(b.first, t, 4)}, {a.second, b.second});
        EXPECT_TRUE(r.empty()) << r << where(t, "a " + an + ", b " + bn);
      }
    }
  }
}

TEST_F(CudaGemm, AViewAtAnOddOffsetStillMatchesTheCpu) {
  // cuBLASLt assumes 256-byte alignment unless told: a view starting one element in is not.
  for (ScalarType t : kFloatDtypes) {
    const View skip_one = [](const Tensor& x) { return x.flatten().narrow(0, 1, 35).reshape({5, 7}); };
    const std::string r = check("aten::mm", {quarters({36}, t, 5), quarters({7, 9}, t, 6)}, {skip_one, kSame});
    EXPECT_TRUE(r.empty()) << r << where(t, "offset 1");
  }
}

TEST_F(CudaGemm, BmmMatchesTheCpuForAnyBatchStrides) {
  const std::vector<std::pair<std::string, std::pair<std::vector<int64_t>, View>>> a_views = {
      {"contiguous", {{4, 3, 5}, kSame}},
      {"matrices transposed", {{4, 5, 3}, [](const Tensor& t) { return t.transpose(1, 2); }}},
      {"batch innermost", {{3, 4, 5}, [](const Tensor& t) { return t.permute({1, 0, 2}); }}},
      {"one matrix broadcast", {{1, 3, 5}, [](const Tensor& t) { return t.expand({4, 3, 5}); }}},
  };
  const std::vector<std::pair<std::string, std::pair<std::vector<int64_t>, View>>> b_views = {
      {"contiguous", {{4, 5, 2}, kSame}},
      {"matrices transposed", {{4, 2, 5}, [](const Tensor& t) { return t.transpose(1, 2); }}},
      {"one matrix broadcast", {{1, 5, 2}, [](const Tensor& t) { return t.expand({4, 5, 2}); }}},
  };
  for (ScalarType t : kFloatDtypes) {
    for (const auto& [an, a] : a_views) {
      for (const auto& [bn, b] : b_views) {
        const std::string r =
            check("aten::bmm", {quarters(a.first, t, 7), quarters(b.first, t, 8)}, {a.second, b.second});
        EXPECT_TRUE(r.empty()) << r << where(t, "a " + an + ", b " + bn);
      }
    }
    const std::string big = check("aten::bmm", {quarters({9, 64, 48}, t, 9), quarters({9, 48, 80}, t, 10)}, {kSame, kSame});
    EXPECT_TRUE(big.empty()) << big << where(t, "9 x 64 x 48 x 80");
  }
}

TEST_F(CudaGemm, AddmmAppliesAlphaAndBetaToABroadcastBias) {
  const std::vector<std::vector<int64_t>> bias_sizes = {{5}, {1, 5}, {3, 1}, {3, 5}, {}};
  for (ScalarType t : kFloatDtypes) {
    for (const auto& bs : bias_sizes) {
      for (auto [beta, alpha] : std::vector<std::pair<double, double>>{{1, 1}, {-1.5, 0.5}, {0, 2}}) {
        const std::string r = check("aten::addmm", {quarters(bs, t, 11), quarters({3, 4}, t, 12), quarters({4, 5}, t, 13)},
                                    {kSame, kSame, kSame}, {Scalar(beta), Scalar(alpha)});
        EXPECT_TRUE(r.empty()) << r << where(t, "bias " + shape(bs) + " beta " + std::to_string(beta));
      }
    }
  }
}

// A vector bias with beta 1 rides cuBLASLt's bias epilogue (kernels/cuda/gemm.h); a bias
// one element into its storage is not 16-byte aligned and takes the copy-and-beta path.
// Both give the CPU's values, with and without alpha, and transposed operands.
TEST_F(CudaGemm, AddmmWithAVectorBiasMatchesTheCpuThroughTheEpilogueOrTheCopy) {
  const View aligned = kSame;
  const View shifted = [](const Tensor& t) { return t.slice(0, 1, t.size(0)); };
  const View transposed = [](const Tensor& t) { return t.t(); };
  for (ScalarType t : kFloatDtypes) {
    for (const auto& [bias_view, bias_size, what] :
         std::vector<std::tuple<View, int64_t, std::string>>{{aligned, 80, "aligned"}, {shifted, 81, "shifted"}}) {
      for (double alpha : {1.0, 0.5}) {
        const std::string r = check("aten::addmm", {quarters({bias_size}, t, 31), quarters({64, 96}, t, 32),
                                                    quarters({80, 96}, t, 33)},
                                    {bias_view, kSame, transposed}, {Scalar(1.0), Scalar(alpha)});
        EXPECT_TRUE(r.empty()) << r << where(t, what + " bias, alpha " + std::to_string(alpha));
      }
    }
  }
}

TEST_F(CudaGemm, AddmmWithBetaZeroDoesNotReadTheBias) {
  for (ScalarType t : kFloatDtypes) {
    const Tensor nan_bias = full({3, 5}, std::nan(""), TensorOptions(t));
    const std::string r = check("aten::addmm", {nan_bias, quarters({3, 4}, t, 14), quarters({4, 5}, t, 15)},
                                {kSame, kSame, kSame}, {Scalar(0.0), Scalar(1.0)});
    EXPECT_TRUE(r.empty()) << r << where(t, "NaN bias, beta 0");
  }
}

TEST_F(CudaGemm, EmptyProductsGiveBetaTimesTheBiasOrZeros) {
  for (ScalarType t : kFloatDtypes) {
    for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{{3, 0, 4}, {0, 5, 4}, {3, 5, 0}, {0, 0, 0}}) {
      const std::string what = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
      std::string r = check("aten::mm", {quarters({m, k}, t, 16), quarters({k, n}, t, 17)}, {kSame, kSame});
      EXPECT_TRUE(r.empty()) << r << where(t, "mm " + what);
      r = check("aten::addmm", {quarters({m, n}, t, 18), quarters({m, k}, t, 19), quarters({k, n}, t, 20)},
                {kSame, kSame, kSame}, {Scalar(-0.5), Scalar(2.0)});
      EXPECT_TRUE(r.empty()) << r << where(t, "addmm " + what);
      r = check("aten::bmm", {quarters({2, m, k}, t, 21), quarters({2, k, n}, t, 22)}, {kSame, kSame});
      EXPECT_TRUE(r.empty()) << r << where(t, "bmm " + what);
    }
  }
}

TEST_F(CudaGemm, MvAndDotMatchTheCpuWithStridedVectors) {
  const View every_other = [](const Tensor& t) { return t.slice(0, 0, std::nullopt, 2); };
  for (ScalarType t : kFloatDtypes) {
    std::string r = check("aten::mv", {quarters({7, 9}, t, 23), quarters({9}, t, 24)}, {kSame, kSame});
    EXPECT_TRUE(r.empty()) << r << where(t, "mv");
    r = check("aten::mv", {quarters({9, 7}, t, 25), quarters({18}, t, 26)},
              {[](const Tensor& x) { return x.t(); }, every_other});
    EXPECT_TRUE(r.empty()) << r << where(t, "mv of a transpose and a strided vector");
    r = check("aten::mv", {quarters({7, 0}, t, 27), quarters({0}, t, 28)}, {kSame, kSame});
    EXPECT_TRUE(r.empty()) << r << where(t, "mv with nothing to sum");
    r = check("aten::dot", {quarters({300}, t, 29), quarters({600}, t, 30)}, {kSame, every_other});
    EXPECT_TRUE(r.empty()) << r << where(t, "dot");
    r = check("aten::dot", {quarters({0}, t, 31), quarters({0}, t, 32)}, {kSame, kSame});
    EXPECT_TRUE(r.empty()) << r << where(t, "dot of empty vectors");
    r = check("aten::dot", {quarters({1}, t, 31), quarters({5, 1}, t, 32)},
              {[](const Tensor& x) { return x.expand({5}); }, [](const Tensor& x) { return x.select(1, 0); }});
    EXPECT_TRUE(r.empty()) << r << where(t, "dot of an expanded vector");
  }
}

TEST_F(CudaGemm, MatmulAndLinearFoldToTheCudaProductsAndMatchTheCpu) {
  for (ScalarType t : kFloatDtypes) {
    const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs = {
        {{5}, {5}}, {{3, 5}, {5}}, {{5}, {5, 2}}, {{2, 3, 5}, {5, 4}}, {{5}, {2, 5, 4}},
        {{2, 1, 3, 5}, {4, 5, 2}}, {{3, 5}, {2, 5, 4}}};
    for (const auto& [sa, sb] : pairs) {
      const std::string r = check("aten::matmul", {quarters(sa, t, 33), quarters(sb, t, 34)}, {kSame, kSame});
      EXPECT_TRUE(r.empty()) << r << where(t, shape(sa) + " @ " + shape(sb));
    }
    for (const std::vector<int64_t>& in : std::vector<std::vector<int64_t>>{{4, 6}, {2, 3, 6}, {6}}) {
      const std::string r = check("aten::linear", {quarters(in, t, 35), quarters({5, 6}, t, 36), quarters({5}, t, 37)},
                                  {kSame, kSame, kSame});
      EXPECT_TRUE(r.empty()) << r << where(t, "linear of " + shape(in));
    }
  }
}

TEST_F(CudaGemm, IntegerProductsRaiseAsPyTorchsCudaKernelsDo) {
  const Tensor a = ones({2, 2}, TensorOptions(kLong)).cuda();
  const Tensor v = ones({2}, TensorOptions(kLong)).cuda();
  const Tensor b = ones({1, 2, 2}, TensorOptions(kLong)).cuda();
  EXPECT_NE(testing::error_of([&] { mm(a, a); }, ErrorKind::NotImplementedError)
                .find("\"addmm_cuda\" not implemented for 'Long'"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] { bmm(b, b); }, ErrorKind::NotImplementedError)
                .find("\"bmm_cuda\" not implemented for 'Long'"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] { mv(a, v); }, ErrorKind::NotImplementedError)
                .find("\"addmv_impl_cuda\" not implemented for 'Long'"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] { dot(v, v); }, ErrorKind::NotImplementedError).find("\"dot\" not implemented for 'Long'"),
            std::string::npos);
}

TEST_F(CudaGemm, Float32ProductsRoundToTF32OnlyWhenAllowed) {
  // 1 + 2^-12 is 1 in TF32 (10 mantissa bits): with TF32 every product loses 2^-12 of its
  // value, 100 times float32's rounding over these sums.
  const Tensor a = full({256, 256}, 1.0 + std::ldexp(1.0, -12), TensorOptions(kFloat));
  const Tensor b = full({256, 256}, 1.0, TensorOptions(kFloat));
  {
    ScopedFlag off(config().backends.cuda.matmul.allow_tf32, false);
    const std::string r = check("aten::mm", {a, b}, {kSame, kSame}, {}, std::pair{2e-6, 0.0});
    EXPECT_TRUE(r.empty()) << r << " (TF32 off)";
  }
  {
    ScopedFlag on(config().backends.cuda.matmul.allow_tf32, true);
    const std::string r = check("aten::mm", {a, b}, {kSame, kSame}, {}, std::pair{1e-3, 0.0});
    EXPECT_TRUE(r.empty()) << r << " (TF32 on: within TF32's rounding)";
  }
  EXPECT_FALSE(config().backends.cuda.matmul.allow_tf32) << "off by default, as PyTorch's";
}

}  // namespace
}  // namespace ember::gpu_test
