// The CUDA reductions (sum, mean, prod, amax/amin, max/min, var/std) and softmax/log_softmax
// against Ember's CPU result on the same input: each dtype the op allows, row lengths 1,
// 7, 1000 and 4097, every set of dims of a 3-d input with and without keepdim,
// non-contiguous inputs (permuted, sliced with a step), explicit result dtypes, empty
// inputs, and the same error where the CPU raises.
#include <functional>

#include <limits>

#include "gpu_helpers.h"
#include "support/error_of.h"

namespace ember::gpu_test {
namespace {

const std::vector<ScalarType> kFloats = {kFloat, kDouble, kHalf, kBFloat16};
const std::vector<ScalarType> kAll = {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool};

/// `sizes` filled with deterministic values spread over [lo, hi), as `dtype`.
Tensor values(IntArrayRef sizes, ScalarType dtype, double lo = -1, double hi = 2) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  uint64_t state = 12345;
  for (double& x : v) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    x = lo + (hi - lo) * static_cast<double>(state >> 11) / 9007199254740992.0;
  }
  Tensor t = tensor(v, {n}, TensorOptions(kDouble)).reshape(sizes);
  if (dtype == kBool) return gt(t, 0.5);
  if (is_floating_point(dtype)) return t.to(dtype);
  const Tensor r = round(t.mul(3));
  return (dtype == kUInt8 ? abs(r) : r).to(dtype);
}

/// PyTorch's tolerances for reductions: accumulation order differs between the devices,
/// and half and bfloat16 results round once more.
Tolerance reduction_tolerance(ScalarType t) {
  switch (t) {
    case kFloat: return std::pair{1e-5, 1e-5};
    case kDouble: return std::pair{1e-7, 1e-7};
    case kHalf: return std::pair{5e-3, 1e-3};
    case kBFloat16: return std::pair{1.6e-2, 1e-2};
    default: return std::pair{0.0, 0.0};
  }
}

using View = std::function<Tensor(const Tensor&)>;
const View kSame = [](const Tensor& t) { return t; };

/// `op` on view(base) on the CPU and view(base on the GPU) on the GPU, with `rest` after
/// the tensor.
std::string check(const std::string& op, const Tensor& base, const View& view, const Stack& rest,
                  Tolerance tol = std::nullopt) {
  Stack cpu{view(base)}, gpu{view(base.cuda())};
  for (const IValue& v : rest) {
    cpu.push_back(v);
    gpu.push_back(v);
  }
  const ScalarType t = base.dtype();
  return compare(op, cpu, gpu, tol ? tol : reduction_tolerance(t));
}

std::string where(ScalarType t, IntArrayRef sizes) {
  std::ostringstream os;
  os << " (" << t << ", " << sizes << ")";
  return os.str();
}

/// Every non-empty set of dims of a 3-d tensor, with a negative dim among them.
const std::vector<std::vector<int64_t>> kDimSets = {{0}, {1}, {2}, {-1}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}};

class CudaReduce : public Gpu {};

TEST_F(CudaReduce, FullReductionsMatchTheCpuForEveryDtypeAndRowLength) {
  for (int64_t n : {1, 7, 1000, 4097}) {
    for (ScalarType t : kAll) {
      const Tensor x = values({n}, t);
      for (const char* op : {"aten::sum", "aten::mean"}) {
        const std::string m = check(op, x, kSame, {IValue()});
        EXPECT_TRUE(m.empty()) << m << where(t, {n});
      }
      for (const char* op : {"aten::max", "aten::min"}) {
        const std::string m = check(op, x, kSame, {});
        EXPECT_TRUE(m.empty()) << m << where(t, {n});
      }
      const Tensor near_one = is_floating_point(t) ? values({n}, t, 0.9, 1.1) : x;
      const std::string p = check("aten::prod", near_one, kSame, {IValue()});
      EXPECT_TRUE(p.empty()) << p << where(t, {n});
    }
  }
}

TEST_F(CudaReduce, EveryDimSetWithAndWithoutKeepdimMatchesTheCpu) {
  for (ScalarType t : kAll) {
    const Tensor x = values({7, 13, 5}, t);
    for (const auto& dims : kDimSets) {
      for (bool keepdim : {false, true}) {
        for (const char* op : {"aten::sum.dim_IntList", "aten::mean.dim"}) {
          const std::string m = check(op, x, kSame, {dims, keepdim, IValue()});
          EXPECT_TRUE(m.empty()) << m << " dims " << IntArrayRef(dims) << " keepdim " << keepdim << where(t, {});
        }
        for (const char* op : {"aten::amax", "aten::amin"}) {
          const std::string m = check(op, x, kSame, {dims, keepdim});
          EXPECT_TRUE(m.empty()) << m << " dims " << IntArrayRef(dims) << " keepdim " << keepdim << where(t, {});
        }
      }
    }
    for (int64_t dim : {0, 1, 2, -1}) {
      const Tensor near_one = is_floating_point(t) ? values({7, 13, 5}, t, 0.9, 1.1) : x;
      const std::string m = check("aten::prod.dim_int", near_one, kSame, {dim, true, IValue()});
      EXPECT_TRUE(m.empty()) << m << " dim " << dim << where(t, {});
    }
  }
}

TEST_F(CudaReduce, NonContiguousInputsMatchTheCpu) {
  const std::vector<std::pair<std::string, View>> views = {
      {"permuted", [](const Tensor& t) { return t.permute({2, 0, 1}); }},
      {"sliced with a step", [](const Tensor& t) { return t.slice(2, 1, 10, 3); }},
      {"transposed and sliced", [](const Tensor& t) { return t.transpose(0, 1).slice(0, 0, 7, 2); }},
  };
  for (ScalarType t : {kFloat, kHalf, kInt32, kDouble}) {
    const Tensor base = values({13, 7, 10}, t);
    for (const auto& [name, view] : views) {
      ASSERT_FALSE(view(base).is_contiguous()) << name;
      for (const auto& dims : kDimSets) {
        const std::string s = check("aten::sum.dim_IntList", base, view, {dims, false, IValue()});
        EXPECT_TRUE(s.empty()) << s << " " << name << " dims " << IntArrayRef(dims) << where(t, {});
        const std::string m = check("aten::amax", base, view, {dims, true});
        EXPECT_TRUE(m.empty()) << m << " " << name << " dims " << IntArrayRef(dims) << where(t, {});
        if (!is_floating_point(t)) continue;
        const std::string v = check("aten::var.correction", base, view, {dims, IValue(), false});
        EXPECT_TRUE(v.empty()) << v << " " << name << " dims " << IntArrayRef(dims) << where(t, {});
      }
    }
  }
}

TEST_F(CudaReduce, LongRowsAndManyShortRowsMatchTheCpu) {
  for (ScalarType t : {kFloat, kHalf, kBFloat16, kInt64}) {
    for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{3, 4097}, std::vector<int64_t>{4097, 3},
                                              std::vector<int64_t>{1000, 7}}) {
      const Tensor x = values(sizes, t);
      for (int64_t dim : {0, 1}) {
        const std::string s = check("aten::sum.dim_IntList", x, kSame, {std::vector<int64_t>{dim}, false, IValue()});
        EXPECT_TRUE(s.empty()) << s << " dim " << dim << where(t, sizes);
        const std::string m = check("aten::amin", x, kSame, {std::vector<int64_t>{dim}, false});
        EXPECT_TRUE(m.empty()) << m << " dim " << dim << where(t, sizes);
      }
    }
  }
}

TEST_F(CudaReduce, ExplicitResultDtypesAccumulateAsTheCpu) {
  const Tensor i = values({7, 1000}, kInt32);
  const Tensor h = values({7, 1000}, kHalf);
  const Tensor f = values({7, 1000}, kFloat);
  const std::vector<int64_t> last{-1};
  for (const auto& [x, dtype] : std::vector<std::pair<Tensor, ScalarType>>{
           {i, kFloat}, {i, kInt16}, {h, kFloat}, {f, kDouble}, {f, kHalf}, {i, kBool}}) {
    const std::string s = check("aten::sum.dim_IntList", x, kSame, {last, false, dtype}, reduction_tolerance(dtype));
    EXPECT_TRUE(s.empty()) << s << " " << x.dtype() << " -> " << dtype;
    const std::string m = check("aten::mean.dim", x, kSame, {last, true, dtype}, reduction_tolerance(dtype));
    EXPECT_TRUE(m.empty()) << m << " " << x.dtype() << " -> " << dtype;
  }
  // Integer sums are int64, as on the CPU and in PyTorch.
  EXPECT_EQ(sum(i.cuda()).dtype(), kInt64);
  EXPECT_EQ(sum(values({5}, kBool).cuda()).dtype(), kInt64);
}

TEST_F(CudaReduce, VarAndStdWithEveryCorrectionMatchTheCpu) {
  for (ScalarType t : kFloats) {
    for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{4097}, std::vector<int64_t>{7, 13, 5}}) {
      const Tensor x = values(sizes, t);
      for (const IValue& correction : {IValue(), IValue(Scalar(0.0)), IValue(Scalar(int64_t{2})), IValue(Scalar(2.5))}) {
        for (const char* op : {"aten::var.correction", "aten::std.correction"}) {
          const std::string all = check(op, x, kSame, {IValue(), correction, false});
          EXPECT_TRUE(all.empty()) << all << where(t, sizes);
          const std::string last = check(op, x, kSame, {std::vector<int64_t>{-1}, correction, true});
          EXPECT_TRUE(last.empty()) << last << where(t, sizes);
        }
      }
    }
  }
  // One element with correction 1: 0/0.
  EXPECT_TRUE(std::isnan(var(ones({1}, TensorOptions().device("cuda"))).item().to_double()));
}

TEST_F(CudaReduce, EmptyReductionsGiveTheIdentityOrRaiseAsOnTheCpu) {
  for (ScalarType t : {kFloat, kInt64, kHalf}) {
    const Tensor x = values({0, 5}, t);
    const std::vector<int64_t> d0{0}, d1{1};
    for (const auto& [op, rest] : std::vector<std::pair<std::string, Stack>>{
             {"aten::sum", {IValue()}},
             {"aten::sum.dim_IntList", {d0, false, IValue()}},
             {"aten::sum.dim_IntList", {d1, true, IValue()}},
             {"aten::mean.dim", {d0, false, IValue()}},
             {"aten::prod.dim_int", {int64_t{0}, false, IValue()}},
             {"aten::amax", {d0, false}},
             {"aten::amin", {d1, false}},
             {"aten::max", {}},
             {"aten::var.correction", {d0, IValue(), false}}}) {
      const std::string m = check(op, x, kSame, rest);
      EXPECT_TRUE(m.empty()) << m << where(t, {0, 5});
    }
  }
  const Tensor e = zeros({0, 5}, TensorOptions().device("cuda"));
  EXPECT_EQ(sum(e, std::vector<int64_t>{0}).to_vector<float>(), std::vector<float>(5, 0.0f));
  EXPECT_EQ(prod(e, 0).to_vector<float>(), std::vector<float>(5, 1.0f));
  ember::testing::expect_error([&] { amax(e, std::vector<int64_t>{0}); }, "Expected reduction dim 0 to have non-zero size",
                               ErrorKind::IndexError);
}

TEST_F(CudaReduce, NanPropagatesThroughMaxAndMin) {
  Tensor x = values({3, 1000}, kFloat);
  x.select(0, 1).select(0, 517).fill_(std::nan(""));
  for (const char* op : {"aten::amax", "aten::amin"}) {
    const std::string m = check(op, x, kSame, {std::vector<int64_t>{1}, false});
    EXPECT_TRUE(m.empty()) << m;
  }
  const auto v = amax(x.cuda(), std::vector<int64_t>{1}).to_vector<float>();
  EXPECT_FALSE(std::isnan(v[0]));
  EXPECT_TRUE(std::isnan(v[1]));
}

class CudaSoftmax : public Gpu {};

TEST_F(CudaSoftmax, SoftmaxAndLogSoftmaxMatchTheCpuOverEveryDim) {
  for (ScalarType t : kFloats) {
    for (const std::vector<int64_t>& sizes :
         {std::vector<int64_t>{7, 13, 5}, std::vector<int64_t>{3, 4097}, std::vector<int64_t>{2, 2048},
          std::vector<int64_t>{2, 2049}, std::vector<int64_t>{1}, std::vector<int64_t>{}}) {
      const Tensor x = values(sizes, t, -4, 4);
      const int64_t nd = std::max<int64_t>(static_cast<int64_t>(sizes.size()), 1);  // a 0-d input takes dims 0 and -1
      for (int64_t dim = -nd; dim < nd; ++dim) {
        for (const char* op : {"aten::_softmax", "aten::_log_softmax"}) {
          const std::string m = check(op, x, kSame, {dim, false}, tolerances(t));
          EXPECT_TRUE(m.empty()) << m << " dim " << dim << where(t, sizes);
        }
      }
    }
  }
}

TEST_F(CudaSoftmax, NonContiguousInputsGiveContiguousResultsAsOnTheCpu) {
  const Tensor base = values({13, 7, 10}, kFloat, -4, 4);
  const View permuted = [](const Tensor& t) { return t.permute({2, 0, 1}); };
  const View sliced = [](const Tensor& t) { return t.slice(2, 1, 10, 3); };
  for (const View& view : {permuted, sliced}) {
    for (int64_t dim : {0, 1, 2}) {
      for (const char* op : {"aten::_softmax", "aten::_log_softmax"}) {
        const std::string m = check(op, base, view, {dim, false}, tolerances(kFloat));
        EXPECT_TRUE(m.empty()) << m << " dim " << dim;
      }
    }
  }
  // The public functions (softmax.int with a dtype) reach the same kernels.
  const Tensor h = values({4, 9}, kHalf);
  EXPECT_EQ(mismatch(softmax(h.cuda(), 1, kFloat), softmax(h, 1, kFloat)), "");
}

TEST_F(CudaSoftmax, WarpRowsOfEveryVectorWidthAndAlignmentMatchTheCpu) {
  // Rows of whole 16-byte groups (read a vector at a time), rows that are not (one element
  // at a time), and rows that start unaligned: a column slice, and a slice off the front.
  const View skip_first_column = [](const Tensor& t) { return t.slice(1, 1, t.size(1), 1); };
  const View skip_first_row = [](const Tensor& t) { return t.slice(0, 1, t.size(0), 1); };
  for (ScalarType t : {kFloat, kHalf, kBFloat16}) {
    for (int64_t n : {4, 8, 24, 128, 200, 1000, 1016, 1020, 1024}) {
      for (const auto& [view, extra_column] :
           {std::pair{kSame, 0}, std::pair{skip_first_column, 1}, std::pair{skip_first_row, 0}}) {
        const Tensor x = values({37, n + extra_column}, t, -4, 4);
        for (const char* op : {"aten::_softmax", "aten::_log_softmax"}) {
          const std::string m = check(op, x, view, {int64_t{-1}, false}, tolerances(t));
          EXPECT_TRUE(m.empty()) << m << where(t, x.sizes().vec());
        }
      }
    }
  }
  const Tensor h = values({5, 1000}, kHalf);
  EXPECT_EQ(mismatch(softmax(h.cuda(), 1, kFloat), softmax(h, 1, kFloat)), "");  // half to float, 4 a time
}

TEST_F(CudaSoftmax, WarpRowsWithInfinitiesAndNaNGiveTheCpusResults) {
  // Rows with +inf, with NaN, all -inf, half -inf (a masked attention row), and a plain
  // one: the warp-row max skips NaN, and the sum makes such rows NaN as on the CPU.
  const double inf = std::numeric_limits<double>::infinity();
  for (ScalarType t : {kFloat, kHalf, kBFloat16}) {
    for (int64_t n : {8, 1000, 1024}) {
      Tensor x = values({5, n}, t, -4, 4);
      x.select(0, 0).select(0, n / 2).fill_(inf);
      x.select(0, 1).select(0, 1).fill_(std::numeric_limits<double>::quiet_NaN());
      x.select(0, 2).fill_(-inf);
      x.select(0, 3).slice(0, 0, n / 2, 1).fill_(-inf);
      for (const char* op : {"aten::_softmax", "aten::_log_softmax"}) {
        const std::string m = check(op, x, kSame, {int64_t{-1}, false}, tolerances(t));
        EXPECT_TRUE(m.empty()) << m << where(t, x.sizes().vec());
      }
    }
  }
}

TEST_F(CudaSoftmax, IntegerInputsRaiseAsOnTheCpu) {
  const std::string m = check("aten::_softmax", values({3, 4}, kInt64), kSame, {int64_t{1}, false});
  EXPECT_TRUE(m.empty()) << m;
}

}  // namespace
}  // namespace ember::gpu_test
