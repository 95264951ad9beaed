// Tests of row kernels over size symbols (Note [dynamic shapes], "The inductor over
// symbolic graphs"): reductions along the last dim and along other dims (column kernels,
// segments, a whole-tensor sum split across threads at run time), softmax, log_softmax
// and layer norm with symbolic leading dims and a static or symbolic row length, each
// compiled once under dynamic=true for several sizes; every result has the sizes, strides
// and dtype of eager's and a static compile's, and their values within the static path's
// tolerance.
#include <gtest/gtest.h>

#include <functional>
#include <sstream>

#include "ember/ember.h"
#include "inductor/inductor.h"
#include "support/compile_helpers.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::expect_close;
using testing::LogCapture;

using Outputs = std::vector<Tensor>;
using Fn = std::function<Outputs(const Tensor&, const Tensor&)>;

class InductorSymbolicRows : public testing::CompileDirTest {
 protected:
  /// Runs `f` compiled with dynamic=true at every (x, y) of `inputs`: one compile for all
  /// of them, each result bitwise equal to a static compile's for those sizes and within
  /// the static path's tolerance (2e-5) of eager's, with eager's sizes, strides and dtype.
  /// Returns the report of the dynamic compile.
  inductor::CompileReport expect_one_compile_for_every_size(const Fn& f, const std::string& name,
                                                           const std::vector<std::pair<Tensor, Tensor>>& inputs) {
    auto dyn = compile(f, {.backend = "inductor", .name = name, .arg_names = {"x", "y"}, .dynamic = true});
    int64_t dynamic_compiles = 0;
    inductor::CompileReport report;
    for (const auto& [x, y] : inputs) {
      std::ostringstream what_os;
      what_os << name << " at x " << x.sizes() << ", y " << y.sizes();
      const std::string what = what_os.str();
      const int64_t before = inductor::compiler_invocations();
      const Outputs got = dyn(x, y);
      if (report.source.empty()) report = inductor::last_compile_report();
      dynamic_compiles += inductor::compiler_invocations() - before;
      auto fixed = compile(f, {.backend = "inductor", .name = name + "_static", .dynamic = false});
      const Outputs want_static = fixed(x, y), want = f(x, y);
      EXPECT_EQ(got.size(), want.size()) << what;
      for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
        const std::string w = what + ", output " + std::to_string(i);
        // The static kernel's code differs only in its numbers; the C++ compiler may still
        // contract a*b+c into an FMA in one and not the other (one ulp).
        EXPECT_EQ(got[i].strides().vec(), want_static[i].strides().vec()) << w;
        expect_close(got[i], want_static[i], 1e-6, 1e-6, w + " (static compile)");
        EXPECT_EQ(got[i].strides().vec(), want[i].strides().vec()) << w;
        expect_close(got[i], want[i], 2e-5, 2e-5, w + " (eager)");
      }
    }
    EXPECT_EQ(dyn.cache_size(), 1u) << name << ": one symbolic entry for every size";
    EXPECT_EQ(dynamic_compiles, 1) << name << ": one C++ compile for every size";
    return report;
  }
};

TEST_F(InductorSymbolicRows, ReductionsAlongAnyDimsCompileOnceForEverySize) {
  // Rows of a runtime length (sum, amax keepdim, var, prod along dim 1), columns (mean and
  // a prologue's sum along dim 0: 40000 rows split their reduced range at run time), a
  // whole-tensor sum with an epilogue (split across threads once it has 32768 elements),
  // and segments (sum over dims 0 and 2 of a [n, 3, m] tensor; amin over its middle dim).
  Fn f = [](const Tensor& x, const Tensor& y) {
    return Outputs{x.sum({1}),         amax(x, {1}, true),    var(x, std::vector<int64_t>{1}),
                   x.mean({0}),        (x * 2.0).sum({0}),    x.sum() * 2.0 + 1.0,
                   y.sum({0, 2}),      amin(y, {1}),          prod(x.abs() + 0.5, 1)};
  };
  std::vector<std::pair<Tensor, Tensor>> inputs;
  for (const auto& [n, m] : std::vector<std::pair<int64_t, int64_t>>{{7, 5}, {64, 33}, {100, 16}, {3000, 24}, {40000, 3}})
    inputs.emplace_back(randn({n, m}), randn({n, 3, m}));
  const inductor::CompileReport report = expect_one_compile_for_every_size(f, "reductions", inputs);
  EXPECT_TRUE(report.extern_calls.empty()) << "every reduction is a kernel";
  EXPECT_NE(report.source.find("mean columns of Float[s0, s1]"), std::string::npos) << report.source;
  EXPECT_NE(report.source.find("if (red >= 32768) {\n#pragma omp parallel num_threads"), std::string::npos) << "the whole-tensor sum's split\n" << report.source;
}

TEST_F(InductorSymbolicRows, SoftmaxLogSoftmaxAndLayerNormRowsCompileOnceForEverySize) {
  // softmax and log_softmax over a symbolic row length (with a prologue and an epilogue),
  // layer norm over a static one (the [n, 4, 32] input's leading dims symbolic), a
  // row-shaped epilogue (x - mean(x, -1, keepdim)).
  Tensor w = randn({32}), b = randn({32});
  Fn f = [&](const Tensor& x, const Tensor& y) {
    return Outputs{softmax(x, -1) * 2.0 + 1.0, log_softmax(x * 0.5 + 1.0, -1), layer_norm(y, {32}, w, b),
                   std::get<0>(native_layer_norm(y.relu(), {32}, std::nullopt, std::nullopt, 1e-5)),
                   x - x.mean({-1}, true)};
  };
  std::vector<std::pair<Tensor, Tensor>> inputs;
  for (const auto& [n, m] : std::vector<std::pair<int64_t, int64_t>>{{7, 5}, {64, 77}, {100, 16}, {3000, 24}})
    inputs.emplace_back(randn({n, m}), randn({n, 4, 32}));
  const inductor::CompileReport report = expect_one_compile_for_every_size(f, "norms", inputs);
  EXPECT_TRUE(report.extern_calls.empty()) << "every row is a kernel";
  EXPECT_NE(report.source.find("softmax rows of Float[s0, s1]"), std::string::npos) << report.source;
  EXPECT_NE(report.source.find("const int64_t rows = "), std::string::npos) << report.source;
}

}  // namespace
}  // namespace ember
