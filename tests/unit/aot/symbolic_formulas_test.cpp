// Tests of derivative formulas and meta functions written over SymInt (Note [aot],
// "Dynamic shapes"): a small function using var, std, prod, gather, scatter, scatter_add,
// index, index_select, cat, repeat, a transposed convolution, the 3-D pools, a strided
// slice, diagonal, masked_scatter or as_strided (sizes, strides and offset over the symbols), trained
// with a dynamic batch (and a dynamic length where the op allows) at three sizes under
// "aot_eager" and "inductor", traces once, keeps one cache entry, specializes no size,
// and gives eager's loss and gradients (values, dtype, sizes and strides) at every size;
// so do convolutions with a dynamic image size under layout optimization (channels_last
// over the symbols) and batch norm and 3-D convolutions on a 5-D input, contiguous or
// channels_last_3d. The FFTs and the complex views, without gradients (a complex value
// requiring grad is graph break GB0010), compile once for every size and equal eager.
#include <gtest/gtest.h>

#include <functional>

#include "ember/ember.h"
#include "ember/ops/fft.h"
#include "inductor/inductor.h"
#include "support/compile_helpers.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::LogCapture;

class SymbolicFormulas : public testing::CompileDirTest, public ::testing::WithParamInterface<std::string> {};

Tensor leaf(std::vector<int64_t> sizes) { return (randn(sizes) * 0.5).detach().requires_grad_(); }

/// A loss of (x, aux), where x requires grad and aux does not (an index or a target).
using Loss = std::function<Tensor(const Tensor&, const Tensor&)>;
/// The inputs (x, aux) of one call at a case's sizes.
using Inputs = std::function<std::pair<Tensor, Tensor>(int64_t batch, int64_t length)>;

/// The gradients of `leaves` after `loss.backward()`, cloned, and the slots cleared.
std::vector<Tensor> take_grads(const Tensor& loss, const std::vector<Tensor>& leaves) {
  loss.backward();
  std::vector<Tensor> out;
  for (const Tensor& p : leaves) {
    out.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
    const_cast<Tensor&>(p).mutable_grad() = Tensor();
  }
  return out;
}

/// `actual` has `expected`'s sizes, strides and dtype and its values within tolerance.
void expect_same_tensor(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_TRUE(actual.defined()) << what << ": no gradient";
  ASSERT_EQ(actual.strides().vec(), expected.strides().vec()) << what << ": strides";
  testing::expect_close(actual, expected, 1e-4, 1e-5, what);
}

/// Compiles `loss` with dynamic=true under the test's backend and trains it at each
/// (batch, length): one trace, one cache entry, no specialization, no interpreter, and
/// the loss and the gradients of x and `params` equal eager's. Returns the log text
/// (channels `dynamic`, `recompiles` and `extra_logs`).
std::string expect_one_symbolic_compile(const Loss& loss, const Inputs& inputs, const std::vector<Tensor>& params,
                                        const std::vector<std::pair<int64_t, int64_t>>& sizes,
                                        const std::string& backend, const std::string& extra_logs = "") {
  LogCapture logs;
  set_logs("dynamic,recompiles" + (extra_logs.empty() ? "" : "," + extra_logs));
  int traces = 0;
  auto f = [&](const Tensor& x, const Tensor& aux) {
    ++traces;
    return loss(x, aux);
  };
  auto fn = compile(f, {.backend = backend, .name = "f", .arg_names = {"x", "aux"}, .dynamic = true});
  for (auto [batch, length] : sizes) {
    const std::string what = "batch " + std::to_string(batch) + ", length " + std::to_string(length);
    auto [x0, aux] = inputs(batch, length);
    Tensor x = x0.detach().requires_grad_();
    std::vector<Tensor> leaves{x};
    leaves.insert(leaves.end(), params.begin(), params.end());
    const Tensor compiled = fn(x, aux);
    const std::vector<Tensor> grads = take_grads(compiled, leaves);
    const Tensor expected = loss(x, aux);
    const std::vector<Tensor> expected_grads = take_grads(expected, leaves);
    expect_same_tensor(compiled, expected, what + ": loss");
    for (size_t i = 0; i < leaves.size(); ++i)
      expect_same_tensor(grads[i], expected_grads[i], what + ": gradient of leaf " + std::to_string(i));
  }
  EXPECT_EQ(fn.cache_size(), 1u) << "one entry for every size\n" << logs.text();
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
  return logs.text();
}

// No size equals another of the same call, nor an index's 3 (duck shaping would make them
// one symbol).
const std::vector<std::pair<int64_t, int64_t>> kSizes{{4, 5}, {6, 7}, {5, 11}};

/// x of [batch, length] and no aux.
std::pair<Tensor, Tensor> matrix(int64_t batch, int64_t length) { return {randn({batch, length}), randn({batch})}; }

TEST_P(SymbolicFormulas, VarOverTheBatchAndOverTheLengthCompilesOnce) {
  auto loss = [](const Tensor& x, const Tensor&) {
    return var(x, std::vector<int64_t>{0}).sum() + var(x, std::vector<int64_t>{1}, Scalar(0), true).mean() +
           var(x).sum();
  };
  expect_one_symbolic_compile(loss, matrix, {}, kSizes, GetParam());
}

TEST_P(SymbolicFormulas, StdOverTheBatchAndOverTheLengthCompilesOnce) {
  auto loss = [](const Tensor& x, const Tensor&) {
    return std(x, std::vector<int64_t>{0}).sum() + std(x, std::vector<int64_t>{1}, Scalar(0)).mean();
  };
  expect_one_symbolic_compile(loss, matrix, {}, kSizes, GetParam());
}

TEST_P(SymbolicFormulas, ProdOverTheLengthAndOverEverythingCompilesOnce) {
  auto loss = [](const Tensor& x, const Tensor&) {
    Tensor near_one = x * 0.1 + 1.0;
    return prod(near_one, 1).sum() + prod(near_one) + prod(near_one, 0, /*keepdim=*/true).sum();
  };
  expect_one_symbolic_compile(loss, matrix, {}, kSizes, GetParam());
}

/// x of [batch, length] and an index of [batch, 3] into its rows.
std::pair<Tensor, Tensor> matrix_and_row_index(int64_t batch, int64_t length) {
  return {randn({batch, length}), (rand({batch, 3}) * static_cast<double>(length)).floor().to(kLong)};
}

TEST_P(SymbolicFormulas, GatherCompilesOnce) {
  Tensor w = leaf({3});
  auto loss = [w](const Tensor& x, const Tensor& index) { return (gather(x, 1, index) * w).sum(); };
  expect_one_symbolic_compile(loss, matrix_and_row_index, {w}, kSizes, GetParam());
}

TEST_P(SymbolicFormulas, ScatterAndScatterAddCompileOnce) {
  Tensor w = leaf({3});
  auto loss = [w](const Tensor& x, const Tensor& index) {
    Tensor src = x.narrow(1, 0, 3) * w;
    Tensor a = scatter_add(x * 2.0, 1, index, src);
    Tensor b = scatter(x, 1, index, Scalar(0.5));
    return (a * a).sum() + (b * x).sum();
  };
  expect_one_symbolic_compile(loss, matrix_and_row_index, {w}, kSizes, GetParam());
}

/// x of [batch, length] and an index of [batch] with values in [0, batch).
std::pair<Tensor, Tensor> matrix_and_batch_index(int64_t batch, int64_t length) {
  return {randn({batch, length}), (rand({batch}) * static_cast<double>(batch)).floor().to(kLong)};
}

TEST_P(SymbolicFormulas, IndexAndIndexSelectCompileOnce) {
  Tensor w = leaf({1});
  auto loss = [w](const Tensor& x, const Tensor& rows) {
    Tensor picked = index(x, {rows});                // [B, L], rows repeated or left out
    Tensor selected = index_select(x, 0, rows) * w;  // the same rows again
    return (picked * selected).sum();
  };
  expect_one_symbolic_compile(loss, matrix_and_batch_index, {w}, kSizes, GetParam());
}

TEST_P(SymbolicFormulas, CatAlongTheBatchAndTheLengthCompilesOnce) {
  Tensor w = leaf({1});
  auto loss = [w](const Tensor& x, const Tensor&) {
    Tensor rows = cat({x, x * w}, 0);           // [2B, L]
    Tensor cols = cat({x * 2.0, x.relu()}, 1);  // [B, 2L]
    return (rows * rows).mean() + (cols * cols).sum();
  };
  expect_one_symbolic_compile(loss, matrix, {w}, kSizes, GetParam());
}

TEST_P(SymbolicFormulas, RepeatCompilesOnce) {
  auto loss = [](const Tensor& x, const Tensor& aux) {
    Tensor r = repeat(x, {2, 1, 3});  // [2, B, 3L]
    return (r * r.sum({-1}, true)).mean() + (repeat(aux, {2}) * 0.0).sum();
  };
  expect_one_symbolic_compile(loss, matrix, {}, kSizes, GetParam());
}

TEST_P(SymbolicFormulas, TransposedConvolutionCompilesOnce) {
  Tensor w = leaf({3, 4, 3, 3}), b = leaf({4});
  auto loss = [w, b](const Tensor& x, const Tensor&) {
    Tensor y = convolution(x, w, b, {2, 2}, {1, 1}, {1, 1}, /*transposed=*/true, {1, 1}, 1);
    return (y * y).mean();
  };
  auto images = [](int64_t batch, int64_t length) {
    return std::pair<Tensor, Tensor>{randn({batch, 3, length, length + 1}), randn({batch})};
  };
  expect_one_symbolic_compile(loss, images, {w, b}, kSizes, GetParam());
}

TEST_P(SymbolicFormulas, LayoutOptimizationOfConvolutionsWithADynamicImageSizeCompilesOnce) {
  // aot/layout.cpp converts convolutions whose input has a symbolic height and width too:
  // the first convolution reads a channels_last clone; batch norm, the relus and max
  // pooling follow the layout (max pooling of a channels_last input is channels_last, as
  // ATen's), so the second convolution's input needs no clone; what the graph returns
  // (the gradients) keeps eager's strides.
  config().aot.layout_optimization = true;
  Tensor w1 = leaf({4, 3, 3, 3}), b1 = leaf({4}), w2 = leaf({5, 4, 3, 3}), gamma = leaf({4}), beta = leaf({4});
  auto loss = [w1, b1, w2, gamma, beta](const Tensor& x, const Tensor&) {
    Tensor h = batch_norm(conv2d(x, w1, b1, {1, 1}, {1, 1}), gamma, beta, std::nullopt, std::nullopt, true);
    h = max_pool2d(h.relu(), {2, 2});
    Tensor y = conv2d(h, w2, std::nullopt, {1, 1}, {1, 1}).relu();
    return (y * y).mean();
  };
  auto images = [](int64_t batch, int64_t length) {
    return std::pair<Tensor, Tensor>{randn({batch, 3, length + 3, length + 6}), randn({batch})};
  };
  const std::string logs =
      expect_one_symbolic_compile(loss, images, {w1, b1, w2, gamma, beta}, kSizes, GetParam(), "aot");
  EXPECT_NE(logs.find("1 convolution inputs made channels_last"), std::string::npos) << logs;
}

/// Batch norm with weight and bias over the input's symbolic channels, a 3-D convolution,
/// relu and a strided 3-D convolution on a 5-D input [batch, 3, length, length + 1,
/// length + 2], contiguous or channels_last_3d.
void expect_conv3d_block_compiles_once(bool channels_last_3d, const std::string& backend) {
  Tensor gamma = leaf({3}), beta = leaf({3}), w1 = leaf({4, 3, 3, 3, 3}), b1 = leaf({4}), w2 = leaf({2, 4, 1, 3, 3});
  auto loss = [gamma, beta, w1, b1, w2](const Tensor& x, const Tensor&) {
    Tensor h = batch_norm(x, gamma, beta, std::nullopt, std::nullopt, true);
    h = convolution(h, w1, b1, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, false, {0, 0, 0}, 1).relu();
    Tensor y = convolution(h, w2, std::nullopt, {1, 2, 2}, {0, 1, 1}, {1, 1, 1}, false, {0, 0, 0}, 1);
    return (y * y).mean();
  };
  auto volumes = [channels_last_3d](int64_t batch, int64_t length) {
    Tensor x = randn({batch, 3, length, length + 1, length + 2});
    if (channels_last_3d) x = x.permute({0, 2, 3, 4, 1}).contiguous().permute({0, 4, 1, 2, 3});
    return std::pair<Tensor, Tensor>{x, randn({batch})};
  };
  expect_one_symbolic_compile(loss, volumes, {gamma, beta, w1, b1, w2}, kSizes, backend);
}

TEST_P(SymbolicFormulas, BatchNormAndConv3dOnAFiveDimensionalInputCompileOnce) {
  // Batch norm's symbolic channels meet its weight's: a guard, not a specialization of
  // every dim (spatial_meta.cpp).
  expect_conv3d_block_compiles_once(false, GetParam());
}

TEST_P(SymbolicFormulas, BatchNormAndConv3dOnAChannelsLast3dInputCompileOnce) {
  // Note [3-D convolution]'s layout rule over SymInt: a symbolic batch is above 1, so
  // oneDNN's channels_last_3d result is every size's.
  expect_conv3d_block_compiles_once(true, GetParam());
}

TEST_P(SymbolicFormulas, ThreeDimensionalPoolingCompilesOnce) {
  // The 3-D pools are composites over SymInt (ops/pool3d.cpp): their windows, divisors,
  // argmax indices and adaptive averaging matrices follow the symbols.
  auto loss = [](const Tensor& x, const Tensor&) {
    Tensor m = std::get<0>(max_pool3d_with_indices(x, {2, 2, 2}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, true));
    Tensor a = avg_pool3d(x, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, false, false);
    Tensor g = call_op("aten::_adaptive_avg_pool3d", {x, std::vector<int64_t>{2, 1, 3}})[0].to_tensor();
    return (m * m).mean() + a.sum() + (g * g).sum();
  };
  auto volumes = [](int64_t batch, int64_t length) {
    return std::pair<Tensor, Tensor>{randn({batch, 3, length, length + 1, length + 2}), randn({batch})};
  };
  expect_one_symbolic_compile(loss, volumes, {}, kSizes, GetParam());
}

TEST_P(SymbolicFormulas, StridedSliceCompilesOnce) {
  // Slices of step 2 and 3 along the symbolic length: their backward is a slice_scatter
  // into zeros of the input's symbolic sizes, its end start + (n - 1) * step + 1.
  auto loss = [](const Tensor& x, const Tensor&) {
    Tensor a = slice(x, 1, 1, std::nullopt, 2);
    Tensor b = slice(x, 1, std::nullopt, -1, 3);
    return (a * a).sum() + b.sum() * 0.5;
  };
  expect_one_symbolic_compile(loss, matrix, {}, kSizes, GetParam());
}

TEST_P(SymbolicFormulas, DiagonalCompilesOnce) {
  // Diagonals of [batch, length] at offsets 0 and -1 and of its transpose at offset 1
  // (batch < length in every case, so each has one length formula: batch or batch - 1):
  // their backward masks zeros of the input's symbolic sizes.
  auto loss = [](const Tensor& x, const Tensor&) {
    Tensor d0 = diagonal(x, 0, 0, 1), d1 = diagonal(x.t(), 1, 0, 1), dm = diagonal(x, -1, 0, 1);
    return (d0 * d0).sum() + d1.sum() * 2.0 + (dm * dm * dm).sum();
  };
  expect_one_symbolic_compile(loss, matrix, {}, kSizes, GetParam());
}

TEST_P(SymbolicFormulas, MaskedScatterCompilesOnce) {
  // x's elements above 0 replaced by the leading elements of 2 * x (as many as the mask's
  // ones): source's gradient is sized by source's symbolic sizes.
  auto loss = [](const Tensor& x, const Tensor&) {
    Tensor y = masked_scatter(x, gt(x, Scalar(0)), x * 2.0);
    return (y * y).sum();
  };
  expect_one_symbolic_compile(loss, matrix, {}, kSizes, GetParam());
}

TEST_P(SymbolicFormulas, AsStridedOverSymbolicSizesStridesAndOffsetCompilesOnce) {
  // Views of [batch, length] by as_strided with sizes, strides and an offset over the
  // symbols (PyTorch's SymInt[] size, SymInt[] stride, SymInt? storage_offset): the first
  // two columns of every row, columns 1 … 3 of every row but the first, and every row's
  // first element twice (a zero stride): the backward scatters into zeros of the input's
  // symbolic extent.
  auto loss = [](const Tensor& x, const Tensor&) {
    const SymInt rows = sym_size(x, 0), cols = sym_size(x, 1);
    Tensor a = x.as_strided({rows, 2}, {cols, 1});
    Tensor b = x.as_strided({rows - 1, 3}, {cols, 1}, cols + 1);
    Tensor c = x.as_strided({rows, 2}, {cols, 0}, 0);
    return (a * a).sum() + b.sum() * 0.5 + (c * b.sum(1, true).mean()).sum();
  };
  expect_one_symbolic_compile(loss, matrix, {}, kSizes, GetParam());
}

TEST_P(SymbolicFormulas, AsStridedOfASymbolicInputWithStaticArgumentsGuardsItsExtentOnly) {
  // A view of fixed geometry of a [batch, 3] input (the first two rows) guards that the
  // input reaches that far (8 <= 3*s0 - 1), as PyTorch guards the storage's size, and
  // specializes nothing: batches 5 and 8 share one entry.
  LogCapture logs;
  set_logs("dynamic,guards");
  auto f = [](const Tensor& x) { return (x.as_strided({2, 3}, {6, 1}) * 2.0).sum(); };
  auto fn = compile(f, {.backend = GetParam(), .name = "strided", .arg_names = {"x"}, .dynamic = true});
  for (int64_t batch : {5, 8, 5}) {
    Tensor x = leaf({batch, 3});
    Tensor loss = fn(x);
    const std::vector<Tensor> grads = take_grads(loss, {x});
    const std::vector<Tensor> expected = take_grads(f(x), {x});
    expect_same_tensor(grads[0], expected[0], "batch " + std::to_string(batch));
  }
  EXPECT_EQ(fn.cache_size(), 1u) << logs.text();
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

/// Compiles `f` (no gradients) with dynamic=true under `backend` and calls it on x of
/// each size: one trace, one cache entry, no size specialized, no interpreter, at most one
/// inductor compile, and every output equal to eager's in values, dtype, sizes and strides.
void expect_one_symbolic_inference_compile(const std::function<std::vector<Tensor>(const Tensor&)>& f,
                                           const std::vector<std::vector<int64_t>>& sizes,
                                           const std::string& backend) {
  LogCapture logs;
  set_logs("dynamic,recompiles");
  int traces = 0;
  auto counted = [&](const Tensor& x) {
    ++traces;
    return f(x);
  };
  auto fn = compile(counted, {.backend = backend, .name = "f", .arg_names = {"x"}, .dynamic = true});
  const int64_t compiles_before = inductor::compiler_invocations();
  for (const std::vector<int64_t>& size : sizes) {
    const Tensor x = randn(size);
    const std::vector<Tensor> got = fn(x);
    const std::vector<Tensor> expected = f(x);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const std::string what = "sizes " + ::testing::PrintToString(size) + ", output " + std::to_string(i);
      ASSERT_EQ(got[i].dtype(), expected[i].dtype()) << what;
      ASSERT_EQ(got[i].sizes().vec(), expected[i].sizes().vec()) << what;
      ASSERT_EQ(got[i].strides().vec(), expected[i].strides().vec()) << what;
      const bool complex = is_complex(got[i].dtype());
      testing::expect_close(complex ? view_as_real(got[i]) : got[i], complex ? view_as_real(expected[i]) : expected[i],
                            1e-4, 1e-5, what);
    }
  }
  EXPECT_EQ(fn.cache_size(), 1u) << "one entry for every size\n" << logs.text();
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
  EXPECT_LE(inductor::compiler_invocations() - compiles_before, 1) << "one compile serves every size";
}

// Lengths even and odd: the onesided length s1 // 2 + 1 covers both.
const std::vector<std::vector<int64_t>> kSignalSizes{{4, 6}, {6, 9}, {5, 16}, {7, 11}};

TEST_P(SymbolicFormulas, RealToComplexAndBackOverSymbolicLengthsCompilesOnce) {
  // _fft_r2c along the length (onesided: s1 // 2 + 1 entries, as PyTorch's meta_fft_r2c),
  // its real view, and _fft_c2r back with the length read as a SymInt and with irfft's
  // default 2 * (m - 1): extern calls that get each call's sizes.
  auto f = [](const Tensor& x) {
    const Tensor spectrum = _fft_r2c(x, {1}, /*normalization=*/0, /*onesided=*/true);
    const Tensor back = _fft_c2r(spectrum, {1}, /*normalization=*/2, sym_size(x, 1));
    const Tensor even = _fft_c2r(spectrum, {1}, /*normalization=*/2, (sym_size(spectrum, 1) - 1) * 2);
    return std::vector<Tensor>{spectrum, view_as_real(spectrum) * 2.0, back + 1.0, even};
  };
  expect_one_symbolic_inference_compile(f, kSignalSizes, GetParam());
}

TEST_P(SymbolicFormulas, ComplexToComplexOverSymbolicSizesCompilesOnce) {
  // A two-sided r2c over both dims, an inverse c2c along the batch, abs, and the complex
  // view of a real [s0, s1, 2] tensor: every size over the symbols.
  auto f = [](const Tensor& x) {
    const Tensor both = _fft_r2c(x, {0, 1}, /*normalization=*/1, /*onesided=*/false);
    const Tensor rows = _fft_c2c(both, {0}, /*normalization=*/0, /*forward=*/false);
    const Tensor pairs = cat({x.unsqueeze(-1), (x * 2.0).unsqueeze(-1)}, -1);
    return std::vector<Tensor>{rows, abs(rows), view_as_complex(pairs)};
  };
  expect_one_symbolic_inference_compile(f, kSignalSizes, GetParam());
}

TEST_P(SymbolicFormulas, AnFftOfValuesRequiringGradBreaksTheGraphAndTrainsAtEverySize) {
  // A complex value that requires grad is graph break GB0010: the transforms run eagerly
  // (their formulas in eager autograd) and the function runs in segments, one entry for
  // every size, no size specialized, eager's loss and gradient.
  LogCapture logs;
  set_logs("dynamic,recompiles,graph_breaks");
  auto loss = [](const Tensor& x) {
    const Tensor spectrum = _fft_r2c(x * 2.0, {1}, /*normalization=*/0, /*onesided=*/true);
    const Tensor back = _fft_c2r(spectrum, {1}, /*normalization=*/2, sym_size(x, 1));
    return (back * x).sum() + (x * x).mean();
  };
  auto fn = compile(loss, {.backend = GetParam(), .name = "f", .arg_names = {"x"}, .dynamic = true});
  for (auto [batch, length] : kSizes) {
    const std::string what = "batch " + std::to_string(batch) + ", length " + std::to_string(length);
    const Tensor x = randn({batch, length}).requires_grad_();
    const Tensor compiled = fn(x);
    const std::vector<Tensor> grads = take_grads(compiled, {x});
    const Tensor expected = loss(x);
    const std::vector<Tensor> expected_grads = take_grads(expected, {x});
    expect_same_tensor(compiled, expected, what + ": loss");
    expect_same_tensor(grads[0], expected_grads[0], what + ": gradient");
  }
  EXPECT_NE(logs.text().find("GB0010"), std::string::npos) << logs.text();
  EXPECT_EQ(fn.cache_size(), 1u) << logs.text();
  EXPECT_EQ(logs.text().find("specialized"), std::string::npos) << logs.text();
}

INSTANTIATE_TEST_SUITE_P(Backends, SymbolicFormulas, ::testing::Values("aot_eager", "inductor"));

}  // namespace
}  // namespace ember
