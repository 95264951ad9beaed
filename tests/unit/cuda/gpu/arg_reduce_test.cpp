// The CUDA index reductions (max.dim/min.dim values and indices, argmax/argmin with and
// without a dim) and any/all (full and along a dim) against Ember's CPU on the same
// input: every dtype the ops take, ties (the first index wins), NaN (the first NaN wins;
// NaN is true for any/all), keepdim, non-contiguous inputs, long rows, empty inputs, and
// the same errors where the CPU raises.
#include "gpu_helpers.h"

namespace ember::gpu_test {
namespace {

const ScalarType kAll[] = {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool};

/// Values with many ties: floats on a grid of halves, integers in [-3, 4] (uint8 in
/// [0, 4]), bools.
Tensor tied_values(IntArrayRef sizes, ScalarType t, uint64_t seed = 9) {
  const Tensor v = round(random_values(sizes, kDouble, -3, 4, seed).mul(2)).div(2);
  if (t == kBool) return gt(v, 0.5);
  if (t == kUInt8) return abs(v).to(t);
  return is_floating_point(t) ? v.to(t) : round(v).to(t);
}

/// `x` with NaN written at a few places (floats only).
Tensor with_nans(const Tensor& x) {
  if (!is_floating_point(x.dtype())) return x;
  Tensor flat = x.reshape({-1}).clone();
  const int64_t n = flat.numel();
  for (int64_t i : {n / 7, n / 3, n / 3 + 1, n - 1})
    flat = index_put(flat, {tensor<int64_t>({i})}, tensor<double>({NAN}).to(x.dtype()));
  return flat.reshape(x.sizes());
}

std::string where(ScalarType t, const std::string& what) {
  std::ostringstream os;
  os << " (" << t << ", " << what << ")";
  return os.str();
}

class CudaArgReduce : public Gpu {};

TEST_F(CudaArgReduce, MaxAndMinAlongADimGiveTheCpusValuesAndFirstIndices) {
  for (ScalarType t : kAll) {
    for (const Tensor& x : {tied_values({7, 13, 5}, t), with_nans(tied_values({7, 13, 5}, t))}) {
      for (int64_t dim : {0, 1, 2, -1}) {
        for (bool keepdim : {false, true}) {
          for (const char* op : {"aten::max.dim", "aten::min.dim"}) {
            const std::string m = compare_outputs(op, {x, dim, keepdim});
            EXPECT_TRUE(m.empty()) << m << where(t, "dim " + std::to_string(dim) + (keepdim ? " keepdim" : ""));
          }
        }
      }
    }
  }
}

TEST_F(CudaArgReduce, ArgmaxAndArgminWithAndWithoutADimMatchTheCpu) {
  for (ScalarType t : kAll) {
    if (t == kBool) continue;  // argmax of bool raises; checked below
    for (const Tensor& x : {tied_values({6, 1000}, t), with_nans(tied_values({6, 1000}, t)), tied_values({4097}, t)}) {
      for (const char* op : {"aten::argmax", "aten::argmin"}) {
        for (bool keepdim : {false, true}) {
          std::string m = compare_outputs(op, {x, IValue(), keepdim});
          EXPECT_TRUE(m.empty()) << m << where(t, "no dim");
          for (int64_t dim = -1; dim < x.dim(); ++dim) {
            m = compare_outputs(op, {x, dim, keepdim});
            EXPECT_TRUE(m.empty()) << m << where(t, "dim " + std::to_string(dim));
          }
        }
      }
    }
  }
}

TEST_F(CudaArgReduce, NonContiguousInputsMatchTheCpu) {
  const Tensor base = tied_values({13, 7, 10}, kFloat);
  for (const Tensor& view :
       {base.permute({2, 0, 1}), base.slice(2, 1, 10, 3), base.transpose(0, 1).slice(0, 0, 7, 2)}) {
    ASSERT_FALSE(view.is_contiguous());
    for (ScalarType t : {kFloat, kHalf, kInt32}) {
      const Tensor v = t == kFloat ? view : view.to(t);
      std::string m = compare_outputs("aten::argmax", {v, IValue(), false});
      EXPECT_TRUE(m.empty()) << m << where(t, "flattened");
      for (int64_t dim : {0, 1, 2}) {
        m = compare_outputs("aten::max.dim", {v, dim, false});
        EXPECT_TRUE(m.empty()) << m << where(t, "max.dim " + std::to_string(dim));
        m = compare_outputs("aten::argmin", {v, dim, true});
        EXPECT_TRUE(m.empty()) << m << where(t, "argmin " + std::to_string(dim));
      }
    }
  }
}

TEST_F(CudaArgReduce, EmptyInputsAndBoolArgmaxRaiseOrGiveEmptyResultsAsOnTheCpu) {
  const Tensor empty = zeros({0, 5});
  std::string m = compare_outputs("aten::max.dim", {empty, int64_t{1}, false});
  EXPECT_TRUE(m.empty()) << m;
  m = compare_outputs("aten::argmin", {empty, int64_t{1}, true});
  EXPECT_TRUE(m.empty()) << m;
  const std::vector<std::pair<std::string, Stack>> raising = {
      {"aten::max.dim", {empty, int64_t{0}, false}},
      {"aten::argmax", {empty, IValue(), false}},
      {"aten::argmax", {gt(random_values({4}, kFloat), 0.5), IValue(), false}}};
  for (const auto& [op, args] : raising) {
    m = compare(op, args);
    EXPECT_TRUE(m.empty()) << m;
  }
}

TEST_F(CudaArgReduce, AnyAndAllMatchTheCpuForEveryDtypeWithNaNTrue) {
  for (ScalarType t : kAll) {
    // Mostly-zero rows, so that any and all both see both answers.
    const Tensor sparse = t == kBool
                              ? gt(random_values({6, 9, 40}, kDouble, 0, 1, 5), 0.9)
                              : tied_values({6, 9, 40}, t) * gt(random_values({6, 9, 40}, kDouble, 0, 1, 5), 0.9).to(t);
    for (const Tensor& x :
         {sparse, with_nans(sparse), ones({3, 4}, TensorOptions(t)), zeros({0, 4}, TensorOptions(t))}) {
      for (const char* op : {"aten::any", "aten::all"}) {
        std::string m = compare_outputs(op, {x});
        EXPECT_TRUE(m.empty()) << m << where(t, "full");
        for (int64_t dim = 0; dim < x.dim(); ++dim) {
          for (bool keepdim : {false, true}) {
            m = compare_outputs(std::string(op) + ".dim", {x, dim, keepdim});
            EXPECT_TRUE(m.empty()) << m << where(t, "dim " + std::to_string(dim));
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember::gpu_test
