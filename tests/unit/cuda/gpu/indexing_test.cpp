// The CUDA indexing ops (index_select, embedding and its backward, gather, scatter,
// scatter_add, scatter_reduce, masked_scatter, index.Tensor, index_put; and randperm)
// against Ember's CPU on the same inputs: every
// dtype, each dim, int32 and int64 indices, repeated and negative indices, strided inputs,
// 0-dim and empty cases; writes to one element twice give the CPU's result exactly
// (deterministic order); out-of-range indices raise the CPU's error and message.
#include "data_helpers.h"
#include "support/error_of.h"

namespace ember::gpu_test {
namespace {

Tensor longs(const std::vector<int64_t>& v, IntArrayRef sizes, ScalarType dtype = kInt64) {
  return tensor(v, sizes, TensorOptions(kInt64)).to(dtype);
}

/// The CPU's error message for `op(cpu_args)` and the CUDA one for the same values on the
/// GPU; both must raise.
std::pair<std::string, std::string> errors(const std::string& op, const Stack& cpu_args) {
  Stack gpu_args;
  for (const IValue& v : cpu_args) gpu_args.push_back(v.is_tensor() ? IValue(v.to_tensor().cuda()) : v);
  const std::string c = testing::error_of([&] { call_op(op, cpu_args); });
  const std::string g = testing::error_of([&] { call_op(op, gpu_args); });
  return {c, g};
}

/// The first line of an error (the message without the location lines).
std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// --- index_select ------------------------------------------------------------------------

TEST_F(Gpu, IndexSelectMatchesTheCpuForEveryDtypeDimAndIndexDtype) {
  for (ScalarType t : kAllDtypes)
    for (int64_t dim : {0, 1, 2, -1})
      for (ScalarType it : {kInt64, kInt32}) {
        const Tensor idx = longs({3, 0, 3, 1}, {4}, it);
        EXPECT_EQ(compare_ok("aten::index_select", {varied({4, 5, 6}, t), dim, idx}, kExact), "") << t << " " << dim;
      }
}

TEST_F(Gpu, IndexSelectOfStridedZeroDimAndEmptyInputsMatchesTheCpu) {
  const Tensor x = varied({6, 5}, kFloat);
  EXPECT_EQ(compare_ok("aten::index_select", {x.t(), 1, longs({5, 0, 2}, {3})}, kExact), "");
  EXPECT_EQ(compare_ok("aten::index_select", {varied({}, kHalf), 0, longs({0}, {1})}, kExact), "");
  EXPECT_EQ(compare_ok("aten::index_select", {x, 0, longs({}, {0})}, kExact), "");
  EXPECT_EQ(compare_ok("aten::index_select", {x, 1, longs({4}, {})}, kExact), "");  // 0-dim index
}

TEST_F(Gpu, IndexSelectOutOfRangeRaisesTheCpusMessageOnEachPath) {
  // ATen words the error by path: a 1-d input, dim 1 of a 2-d one, an empty input.
  const std::vector<Stack> cases = {{varied({5}, kFloat), 0, longs({1, 7}, {2})},
                                    {varied({3, 5}, kFloat), 1, longs({-1}, {1})},
                                    {varied({0, 4}, kFloat), 0, longs({0}, {1})}};
  for (const Stack& c : cases) {
    const auto [cpu, gpu] = errors("aten::index_select", c);
    EXPECT_EQ(first_line(gpu), first_line(cpu));
  }
}

// --- embedding -----------------------------------------------------------------------------

TEST_F(Gpu, EmbeddingMatchesTheCpuForFloatDtypesAndIndexDtypes) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16})
    for (ScalarType it : {kInt64, kInt32}) {
      const Tensor idx = longs({1, 9, 0, 9, 4, 2}, {2, 3}, it);
      EXPECT_EQ(compare_ok("aten::embedding", {varied({10, 7}, t), idx, int64_t{-1}, false, false}, kExact), "") << t;
    }
  // A transposed weight and a 0-dim index.
  EXPECT_EQ(
      compare_ok("aten::embedding", {varied({7, 10}, kFloat).t(), longs({3}, {}), int64_t{-1}, false, false}, kExact),
      "");
}

TEST_F(Gpu, EmbeddingOutOfRangeRaisesIndexError) {
  const Tensor w = varied({4, 3}, kFloat).cuda();
  for (int64_t bad : {4, -1}) {
    const std::string msg = testing::error_of(
        [&] {
          embedding(w, longs({0, bad}, {2}).cuda());
        },
        ErrorKind::IndexError);
    EXPECT_EQ(first_line(msg).find("index out of range in self") != std::string::npos, true) << msg;
  }
}

TEST_F(Gpu, EmbeddingDenseBackwardWithPaddingAndFrequencyScalingMatchesTheCpu) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16})
    for (bool scale : {false, true}) {
      const Tensor idx = longs({1, 5, 1, 0, 5, 5, 3, 1}, {2, 4});
      const Tensor grad = varied({2, 4, 6}, t);
      EXPECT_EQ(compare_ok("aten::embedding_dense_backward", {grad, idx, int64_t{7}, int64_t{5}, scale}, tolerances(t)),
                "")
          << t << " scale_grad_by_freq=" << scale;
    }
}

// --- gather / scatter -------------------------------------------------------------------------

TEST_F(Gpu, GatherMatchesTheCpuForEveryDtypeAndDim) {
  for (ScalarType t : kAllDtypes)
    for (int64_t dim : {0, 1, 2}) {
      const Tensor idx = longs({0, 2, 1, 2, 0, 0, 1, 2, 2, 1, 0, 1}, {2, 3, 2});
      EXPECT_EQ(compare_ok("aten::gather", {varied({3, 4, 3}, t), dim, idx, false}, kExact), "") << t << " " << dim;
    }
}

TEST_F(Gpu, GatherOfStridedInputsAndZeroDimMatchesTheCpu) {
  const Tensor x = varied({5, 4}, kHalf);
  const Tensor idx = longs({3, 0, 1, 1, 2, 0, 3, 3}, {4, 2});
  EXPECT_EQ(compare_ok("aten::gather", {x.t(), 1, idx, false}, kExact), "");
  EXPECT_EQ(compare_ok("aten::gather", {x, 0, idx.t(), false}, kExact), "");
  EXPECT_EQ(compare_ok("aten::gather", {varied({}, kFloat), 0, longs({0}, {}), false}, kExact), "");
  EXPECT_EQ(compare_ok("aten::gather", {x, 0, longs({}, {0, 4}), false}, kExact), "");
}

TEST_F(Gpu, GatherOutOfRangeRaisesTheCpusMessage) {
  const auto [cpu, gpu] = errors("aten::gather", {varied({3, 5}, kFloat), 1, longs({0, 7, 1, -2}, {2, 2}), false});
  EXPECT_EQ(first_line(gpu), first_line(cpu));
  EXPECT_NE(gpu.find("index 7 is out of bounds for dimension 1 with size 5"), std::string::npos) << gpu;
}

TEST_F(Gpu, ScatterScatterValueAndScatterAddMatchTheCpuExactlyWithRepeatedIndices) {
  // Repeated targets along a line: scatter keeps the last write, scatter_add sums in
  // order, as the CPU does.
  for (ScalarType t : kAllDtypes)
    for (int64_t dim : {0, 1}) {
      const Tensor self = varied({4, 5}, t);
      const Tensor idx = longs({1, 1, 3, 0, 1, 1, 2, 0, 3, 3, 1, 1}, {3, 4});
      const Tensor src = varied({3, 5}, t).mul(t == kBool ? 1 : 3).to(t);
      EXPECT_EQ(compare_ok("aten::scatter.src", {self, dim, idx, src}, kExact), "") << t << " " << dim;
      EXPECT_EQ(compare_ok("aten::scatter.value", {self, dim, idx, Scalar(2)}, kExact), "") << t << " " << dim;
      EXPECT_EQ(compare_ok("aten::scatter_add", {self, dim, idx, src}, kExact), "") << t << " " << dim;
    }
}

TEST_F(Gpu, ScatterAddOfManyRepeatsIsTheCpusSumBitForBit) {
  const int64_t n = 20000;
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[i] = (i * 7) % 3;
  const Tensor src = rand({n}, TensorOptions(kFloat));
  EXPECT_EQ(compare_ok("aten::scatter_add", {zeros({3}), 0, longs(idx, {n}), src}, kExact), "");
  EXPECT_EQ(compare_ok("aten::scatter_add", {zeros({3}, kHalf), 0, longs(idx, {n}), src.to(kHalf)}, kExact), "");
}

TEST_F(Gpu, ScatterOfStridedOperandsMatchesTheCpu) {
  const Tensor self = varied({5, 4}, kFloat);
  const Tensor idx = longs({0, 4, 2, 1, 3, 0}, {2, 3});
  const Tensor src = varied({3, 3}, kFloat);
  EXPECT_EQ(compare_ok("aten::scatter.src", {self.t(), 1, idx, src.t()}, kExact), "");
  EXPECT_EQ(compare_ok("aten::scatter_add", {self, 0, idx.t().contiguous().t(), src}, kExact), "");
}

TEST_F(Gpu, ScatterInPlaceWritesIntoTheCudaTensor) {
  Tensor gpu = zeros({2, 3}).cuda();
  call_op("aten::scatter_.src", {gpu, 1, longs({2, 0}, {2, 1}).cuda(), varied({2, 1}, kFloat).cuda()});
  Tensor cpu = zeros({2, 3});
  call_op("aten::scatter_.src", {cpu, 1, longs({2, 0}, {2, 1}), varied({2, 1}, kFloat)});
  EXPECT_TRUE(gpu.is_cuda());
  EXPECT_EQ(mismatch(gpu, cpu, kExact), "");
}

TEST_F(Gpu, ScatterOutOfRangeRaisesTheCpusMessage) {
  const auto [cpu, gpu] = errors("aten::scatter_add", {zeros({2, 3}), 1, longs({0, 3}, {1, 2}), ones({1, 2})});
  EXPECT_EQ(first_line(gpu), first_line(cpu));
  EXPECT_NE(gpu.find("index 3 is out of bounds for dimension 1 with size 3"), std::string::npos) << gpu;
}

TEST_F(Gpu, ScatterReduceMatchesTheCpuForEveryReductionDtypeAndIncludeSelf) {
  // Repeated targets, untouched targets, and (without include_self) a first write that
  // replaces self: every reduction in each dtype's math type, integer mean's floor.
  for (ScalarType t : kAllDtypes)
    for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"})
      for (bool include_self : {true, false})
        for (int64_t dim : {0, 1}) {
          if (t == kBool && std::string(reduce) == "mean") continue;  // refused on both devices
          const Tensor self = varied({4, 5}, t);
          const Tensor idx = longs({1, 1, 3, 0, 1, 1, 2, 0, 3, 3, 1, 1}, {3, 4});
          const Tensor src = varied({3, 5}, t, 5);
          EXPECT_EQ(compare_ok("aten::scatter_reduce.two", {self, dim, idx, src, std::string(reduce), include_self},
                               kExact),
                    "")
              << t << " " << reduce << " include_self " << include_self << " dim " << dim;
        }
}

TEST_F(Gpu, ScatterReduceAmaxAndAminTakeANaNOfSrcAndStridedOperandsMatchTheCpu) {
  const Tensor self = tensor<float>({1.0f, 2.0f, 3.0f, 4.0f}, {4});
  const Tensor src = tensor<float>({NAN, 5.0f, -1.0f}, {3});
  const Tensor idx = longs({0, 0, 3}, {3});
  for (const char* reduce : {"amax", "amin"})
    EXPECT_EQ(compare_ok("aten::scatter_reduce.two", {self, 0, idx, src, std::string(reduce), true}, kExact), "")
        << reduce;
  const Tensor wide = varied({5, 4}, kFloat);
  EXPECT_EQ(compare_ok("aten::scatter_reduce.two",
                       {wide.t(), 1, longs({0, 4, 2, 4, 3, 0}, {2, 3}), varied({3, 3}, kFloat).t(), std::string("mean"),
                        false},
                       kExact),
            "");
}

TEST_F(Gpu, MaskedScatterMatchesTheCpuWithBroadcastMasksAndRaisesItsError) {
  for (ScalarType t : kAllDtypes) {
    const Tensor self = varied({3, 4}, t);
    const Tensor mask = varied({3, 4}, kBool, 3);
    EXPECT_EQ(compare_ok("aten::masked_scatter", {self, mask, varied({20}, t, 7)}, kExact), "") << t;
    EXPECT_EQ(compare_ok("aten::masked_scatter", {self, varied({4}, kBool), varied({3, 4}, t, 7)}, kExact), "") << t;
    // A transposed self and a strided source.
    EXPECT_EQ(compare_ok("aten::masked_scatter", {varied({4, 3}, t).t(), mask, varied({5, 4}, t, 2).t()}, kExact), "")
        << t;
  }
  // A uint8 mask counts each nonzero once, whatever its value.
  EXPECT_EQ(compare_ok("aten::masked_scatter",
                       {zeros({4}), tensor<int64_t>({0, 2, 7, 0}, {4}).to(kUInt8), varied({2}, kFloat)}, kExact),
            "");
  EXPECT_EQ(compare_ok("aten::masked_scatter", {zeros({0, 3}), zeros({0, 3}, kBool), varied({2}, kFloat)}, kExact),
            "");
  const auto [cpu, gpu] = errors("aten::masked_scatter", {zeros({2, 3}), ones({2, 3}, kBool), ones({5})});
  EXPECT_EQ(first_line(gpu), first_line(cpu));
  EXPECT_NE(gpu.find("Number of elements of source < number of ones in mask (source has 5, the mask 6)"),
            std::string::npos)
      << gpu;
}

TEST_F(Gpu, NonzeroOfACudaTensorGivesTheCpusCoordinatesOnTheDevice) {
  for (ScalarType t : kAllDtypes) {
    EXPECT_EQ(compare_ok("aten::nonzero", {varied({3, 4, 5}, t)}, kExact), "") << t;
    EXPECT_EQ(compare_ok("aten::nonzero", {varied({6, 5}, t).t()}, kExact), "") << t;
  }
  EXPECT_EQ(compare_ok("aten::nonzero", {zeros({4, 2})}, kExact), "");  // no element: [0, 2]
  EXPECT_EQ(compare_ok("aten::nonzero", {ones({})}, kExact), "");       // 0-dim: [1, 0]
  const Tensor gpu = nonzero(varied({8}, kFloat).cuda());
  EXPECT_TRUE(gpu.is_cuda());
}

TEST_F(Gpu, RandpermGivesTheCpusPermutationForTheSameSeed) {
  for (int64_t n : {0, 1, 7, 1000}) {
    manual_seed(11);
    const Tensor cpu = randperm(n);
    manual_seed(11);
    const Tensor gpu = randperm(n, TensorOptions().device("cuda"));
    ASSERT_TRUE(gpu.is_cuda());
    EXPECT_EQ(mismatch(gpu, cpu, kExact), "") << n;
  }
}

// --- index.Tensor / index_put --------------------------------------------------------------------

using Indices = std::vector<std::optional<Tensor>>;

Indices on_gpu(const Indices& in) {
  Indices out;
  for (const auto& t : in) out.push_back(t ? std::optional<Tensor>(t->cuda()) : std::nullopt);
  return out;
}

/// The index patterns: one tensor, broadcast pairs (adjacent and split by a slice),
/// negative values, int32, a bool mask, a 0-dim index.
std::vector<Indices> index_patterns() {
  return {
      {longs({2, 0, 2, -1}, {4})},
      {std::nullopt, longs({1, 3}, {2, 1}), longs({0, 4, -5}, {3})},
      {longs({1, 2}, {2}), std::nullopt, longs({0, 3}, {2})},
      {std::nullopt, longs({4, 0, 1}, {3}, kInt32)},
      {tensor<bool>({true, false, true}, {3}, TensorOptions(kBool))},
      {std::nullopt, std::nullopt, longs({2}, {})},
  };
}

TEST_F(Gpu, IndexMatchesTheCpuForEveryPatternAndDtype) {
  const std::vector<Indices> patterns = index_patterns();
  for (ScalarType t : kAllDtypes)
    for (size_t i = 0; i < patterns.size(); ++i) {
      const Tensor x = varied({3, 5, 6}, t);
      EXPECT_EQ(compare_ok("aten::index.Tensor", {x, patterns[i]}, {x.cuda(), on_gpu(patterns[i])}, kExact), "")
          << t << " pattern " << i;
    }
}

TEST_F(Gpu, IndexAndIndexPutTakeIndicesOnTheCpuBesideACudaTensorAsPyTorchDoes) {
  // x_cuda[cpu_index]: the indices move to x's device; the result stays there.
  for (const Indices& p : index_patterns()) {
    const Tensor x = varied({3, 5, 6}, kFloat);
    const Tensor got = index(x.cuda(), p);
    EXPECT_TRUE(got.is_cuda());
    EXPECT_EQ(mismatch(got, index(x, p), kExact), "");
    const Tensor v = varied(got.sizes(), kFloat, 3);
    Tensor target = x.cuda();
    index_put_(target, p, v.cuda(), true);
    EXPECT_EQ(mismatch(target, index_put(x, p, v, true), kExact), "");
  }
  // Gradients flow back through index_put with the same CPU indices.
  const Tensor w = varied({6, 4}, kFloat).cuda().requires_grad_(true);
  const Indices rows = {longs({5, 0, 5}, {3})};
  index(w, rows).sum().backward();
  EXPECT_TRUE(w.grad().is_cuda());
  EXPECT_EQ(w.grad().cpu().select(0, 5).to_vector<float>(), (std::vector<float>{2, 2, 2, 2}));
  // Indices on a CUDA device beside a CPU tensor are not moved: PyTorch raises too.
  const std::string e = testing::error_of([&] { index(varied({4}, kFloat), on_gpu(rows)); });
  EXPECT_NE(e.find("Expected all tensors to be on the same device"), std::string::npos) << e;
}

TEST_F(Gpu, IndexOfAStridedInputMatchesTheCpu) {
  const Tensor x = varied({6, 5, 3}, kFloat).permute({2, 0, 1});
  for (const Indices& p : index_patterns())
    EXPECT_EQ(compare_ok("aten::index.Tensor", {x, p}, {x.cuda(), on_gpu(p)}, kExact), "");
}

TEST_F(Gpu, IndexOutOfRangeRaisesTheCpusMessageWithTheFirstBadValue) {
  const Tensor x = varied({5, 4}, kFloat);
  const Indices idx = {longs({1, 9, -12}, {3})};
  const std::string cpu = testing::error_of([&] { index(x, idx); }, ErrorKind::IndexError);
  const std::string gpu = testing::error_of([&] { index(x.cuda(), on_gpu(idx)); }, ErrorKind::IndexError);
  EXPECT_EQ(first_line(gpu), first_line(cpu));
  EXPECT_NE(gpu.find("index 9 is out of bounds for dimension 0 with size 5"), std::string::npos) << gpu;
}

TEST_F(Gpu, IndexPutMatchesTheCpuExactlyWithAndWithoutAccumulate) {
  // Repeated indices: the last write wins, or the sums come in index order, on both.
  const std::vector<Indices> patterns = {
      {longs({2, 0, 2, 2}, {4})},
      {std::nullopt, longs({1, 1}, {2, 1}), longs({0, 0, 5}, {3})},
      {tensor<bool>({true, false, true}, {3}, TensorOptions(kBool))},
  };
  for (ScalarType t : kAllDtypes)
    for (bool acc : {false, true})
      for (size_t i = 0; i < patterns.size(); ++i) {
        const Tensor x = varied({3, 5, 6}, t);
        const Tensor result = index(x, patterns[i]);
        const Tensor v = varied(result.sizes(), t);
        EXPECT_EQ(compare_ok("aten::index_put", {x, patterns[i], v, acc},
                             {x.cuda(), on_gpu(patterns[i]), v.cuda(), acc}, kExact),
                  "")
            << t << " accumulate=" << acc << " pattern " << i;
        // A value that broadcasts.
        const Tensor one = varied({1}, t);
        EXPECT_EQ(compare_ok("aten::index_put", {x, patterns[i], one, acc},
                             {x.cuda(), on_gpu(patterns[i]), one.cuda(), acc}, kExact),
                  "")
            << t << " broadcast, accumulate=" << acc << " pattern " << i;
      }
}

TEST_F(Gpu, IndexPutAccumulateOfManyRepeatsIsTheCpusSumAndDeterministic) {
  const int64_t n = 30000;
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[i] = (i * 5) % 4;
  const Tensor v = rand({n, 8});
  const Indices cpu_idx = {longs(idx, {n})};
  const Tensor expected = index_put(zeros({4, 8}), cpu_idx, v, true);
  const Tensor a = index_put(zeros({4, 8}).cuda(), on_gpu(cpu_idx), v.cuda(), true);
  const Tensor b = index_put(zeros({4, 8}).cuda(), on_gpu(cpu_idx), v.cuda(), true);
  EXPECT_EQ(mismatch(a, expected, kExact), "");
  EXPECT_EQ(mismatch(b, a.cpu(), kExact), "");
}

TEST_F(Gpu, IndexPutOfManyRepeatedWritesToAOneDTensorKeepsTheLastWriteAsTheCpu) {
  // B = 5000 writes over 1000 targets: the sorted kernel (one thread per run of targets).
  const int64_t n = 5000;
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[i] = (i * 7919) % 1000 - (i % 3 == 0 ? 1000 : 0);  // some negative
  const Indices cpu_idx = {longs(idx, {n})};
  for (ScalarType t : {kFloat, kHalf, kInt64, kBool})
    for (bool acc : {false, true}) {
      const Tensor x = varied({1000}, t), v = varied({n}, t, 3);
      EXPECT_EQ(compare_ok("aten::index_put", {x, cpu_idx, v, acc}, {x.cuda(), on_gpu(cpu_idx), v.cuda(), acc}), "")
          << t << " accumulate=" << acc;
    }
}

TEST_F(Gpu, ScatterAlongLongLinesWithRepeatsMatchesTheCpuExactly) {
  // Lines of 300 positions onto 40 targets: the sorted kernel, per line, along either dim.
  std::vector<int64_t> idx(900);
  for (int64_t i = 0; i < 900; ++i) idx[i] = (i * 13) % 40;
  for (ScalarType t : {kFloat, kBFloat16, kInt32})
    for (bool add : {false, true}) {
      const std::string op = add ? "aten::scatter_add" : "aten::scatter.src";
      const Tensor rows = longs(idx, {3, 300});
      EXPECT_EQ(compare_ok(op, {varied({3, 40}, t), 1, rows, varied({3, 300}, t, 5)}), "") << t << " " << op;
      EXPECT_EQ(compare_ok(op, {varied({40, 3}, t), 0, rows.t(), varied({300, 3}, t, 5)}), "") << t << " " << op;
    }
  EXPECT_EQ(compare_ok("aten::scatter.value", {varied({3, 40}, kFloat), 1, longs(idx, {3, 300}), Scalar(1.5)}), "");
}

TEST_F(Gpu, IndexPutInPlaceWritesIntoTheCudaTensor) {
  Tensor gpu = zeros({4}, kInt64).cuda();
  index_put_(gpu, {longs({1, 3, 1}, {3}).cuda()}, longs({5, 6, 7}, {3}).cuda(), true);
  EXPECT_TRUE(gpu.is_cuda());
  EXPECT_EQ(gpu.to_vector<int64_t>(), (std::vector<int64_t>{0, 12, 0, 6}));
}

TEST_F(Gpu, IndexPutOutOfRangeRaisesTheCpusMessage) {
  const Tensor x = zeros({3, 4});
  const Indices idx = {std::nullopt, longs({0, -5}, {2})};
  const std::string cpu = testing::error_of([&] { index_put(x, idx, ones({3, 2}), false); }, ErrorKind::IndexError);
  const std::string gpu = testing::error_of(
      [&] {
        index_put(x.cuda(), on_gpu(idx), ones({3, 2}).cuda(), false);
      },
      ErrorKind::IndexError);
  EXPECT_EQ(first_line(gpu), first_line(cpu));
}

}  // namespace
}  // namespace ember::gpu_test
