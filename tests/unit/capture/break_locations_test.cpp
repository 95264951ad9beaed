// Every graph-break kind of capture/graph_breaks.def, triggered the way users write it
// (printing with <<, `if (tensor)`, item(), data_ptr(), …): explain(), the fullgraph error
// and the break warning all name the user's file and line, never a file inside Ember.
#include <gtest/gtest.h>

#include <functional>
#include <sstream>

#include "ember/ember.h"
#include "support/compile_helpers.h"
#include "support/error_of.h"

namespace ember {
namespace {

using testing::error_of;

class BreakLocationsTest : public testing::DiagnosticsTest {};

/// A function that breaks its graph once, at `line` of this file.
struct Scenario {
  std::string id;   // the break's stable id in graph_breaks.def
  std::string how;  // what the user wrote
  std::function<Tensor(const Tensor&)> fn;
  int line;
};

Tensor leaf() {
  Tensor w = ones({3});
  w.requires_grad_();
  return w;
}

// Each scenario's breaking expression is on the line its __LINE__ names.
// clang-format off
std::vector<Scenario> scenarios() {
  return {
      {"GB0001", "x.item<double>()", [](const Tensor& x) { Tensor y = x * 2; return y * y.sum().item<double>(); }, __LINE__},
      {"GB0001", "Scalar item()", [](const Tensor& x) { Tensor y = x * 2; return y * y.sum().item().to<double>(); }, __LINE__},
      {"GB0001", "_local_scalar_dense(tensor)", [](const Tensor& x) { Tensor y = x * 2; return y * _local_scalar_dense(y.sum()).to<double>(); }, __LINE__},
      {"GB0002", "if (tensor)", [](const Tensor& x) { Tensor y = x * 2; if (y.sum() > 0) return y + 1; return y - 1; }, __LINE__},
      {"GB0002", "tensor.is_nonzero()", [](const Tensor& x) { Tensor y = x * 2; Tensor s = y.sum() > 0; return s.is_nonzero() ? y : -y; }, __LINE__},
      {"GB0003", "tensor.data_ptr<float>()", [](const Tensor& x) { Tensor y = x * 2; return y * static_cast<double>(*y.data_ptr<float>()); }, __LINE__},
      {"GB0003", "tensor.raw_data_ptr()", [](const Tensor& x) { Tensor y = x * 2; return y * static_cast<double>(*static_cast<float*>(y.raw_data_ptr())); }, __LINE__},
      {"GB0003", "tensor.to_vector<float>()", [](const Tensor& x) { Tensor y = x * 2; return y * static_cast<double>(y.to_vector<float>()[0]); }, __LINE__},
      {"GB0004", "stream << tensor", [](const Tensor& x) { Tensor y = x * 2; std::ostringstream os; os << y; return y + 1; }, __LINE__},
      {"GB0004", "tensor.str()", [](const Tensor& x) { Tensor y = x * 2; std::string s = y.str(); return y + 1; }, __LINE__},
      {"GB0006", "nonzero(tensor)", [](const Tensor& x) { Tensor y = x * 2; return nonzero(y > 0).sum() + y.sum(); }, __LINE__},
      {"GB0007", "graph_break()", [](const Tensor& x) { Tensor y = x * 2; graph_break(); return y + 1; }, __LINE__},
      {"GB0008", "loss.backward()", [w = leaf()](const Tensor& x) { Tensor loss = (x * w).sum(); loss.backward(); return x * 2; }, __LINE__},
      {"GB0009", "tensor.requires_grad_()", [](const Tensor& x) { Tensor y = x * 2; y.requires_grad_(); return y + 1; }, __LINE__},
      {"GB0009", "tensor.retain_grad()", [w = leaf()](const Tensor& x) { Tensor y = x * w; y.retain_grad(); return y + 1; }, __LINE__},
      {"GB0009", "tensor.register_hook()", [w = leaf()](const Tensor& x) { Tensor y = x * w; y.register_hook([](const Tensor& g) { return g; }); return y + 1; }, __LINE__},
      {"GB0010", "_fft_r2c(tensor that requires grad)", [w = leaf()](const Tensor& x) { Tensor y = x * w; return _fft_r2c(y, {0}, 0, true); }, __LINE__},
      {"GB0011", "tensor.resize_()", [](const Tensor& x) { Tensor y = x * 2; y.resize_({2}); return y + 1; }, __LINE__},
  };
}
// clang-format on

/// The ids of graph_breaks.def, in order.
std::vector<std::string> registered_break_ids() {
  return {
#define GRAPH_BREAK(name, id, what, hint) id,
#include "capture/graph_breaks.def"
#undef GRAPH_BREAK
  };
}

std::string here(int line) { return "break_locations_test.cpp:" + std::to_string(line); }

TEST_F(BreakLocationsTest, EveryBreakKindHasAScenario) {
  for (const std::string& id : registered_break_ids()) {
    bool found = false;
    for (const Scenario& s : scenarios()) found = found || s.id == id;
    EXPECT_TRUE(found) << id << " has no scenario in this test: add one that triggers it";
  }
}

TEST_F(BreakLocationsTest, ExplainNamesTheUsersLineForEveryBreak) {
  for (const Scenario& s : scenarios()) {
    auto out = explain(s.fn)(ones({3}));
    ASSERT_EQ(out.break_reasons.size(), 1u) << s.how;
    const BreakReason& b = out.break_reasons[0];
    EXPECT_EQ(b.reason.rfind(s.id + ":", 0), 0u) << s.how << ": " << b.reason;
    EXPECT_NE(b.loc.file.find("break_locations_test.cpp"), std::string::npos) << s.how << ": " << b.loc.str();
    EXPECT_EQ(b.loc.line, static_cast<unsigned>(s.line)) << s.how << ": " << b.loc.str();
  }
}

TEST_F(BreakLocationsTest, FullgraphErrorNamesTheUsersLineForEveryBreak) {
  for (const Scenario& s : scenarios()) {
    auto compiled = compile(s.fn, {.fullgraph = true});
    const std::string msg = error_of([&] { compiled(ones({3})); }, ErrorKind::Unsupported);
    EXPECT_NE(msg.find(s.id + ":"), std::string::npos) << s.how << ": " << msg;
    EXPECT_NE(msg.find(here(s.line)), std::string::npos) << s.how << ": " << msg;
    EXPECT_EQ(msg.find("src/core/"), std::string::npos) << s.how << ": " << msg;
    EXPECT_EQ(msg.find("include/ember/"), std::string::npos) << s.how << ": " << msg;
  }
}

TEST_F(BreakLocationsTest, BreakWarningNamesTheUsersLineForEveryBreak) {
  for (const Scenario& s : scenarios()) {
    testing::LogCapture logs;
    auto compiled = compile(s.fn, {.name = "brk"});
    compiled(ones({3}));
    EXPECT_NE(logs.text().find("from user code at "), std::string::npos) << s.how << ": " << logs.text();
    EXPECT_NE(logs.text().find(here(s.line)), std::string::npos) << s.how << ": " << logs.text();
  }
}

TEST_F(BreakLocationsTest, TensorAsBoolOutsideATraceRaisesAtTheUsersLineWhenItCan) {
  // `if (t)` gives C++ no line of its own; is_nonzero() carries one.
  const std::string msg = error_of([] { (void)ones({2}).is_nonzero(); });
  EXPECT_NE(msg.find("Boolean value of Tensor with more than one value is ambiguous"), std::string::npos) << msg;
  EXPECT_NE(msg.find(here(__LINE__ - 2)), std::string::npos) << msg;
  const std::string item = error_of([] { (void)ones({2}).item(); });
  EXPECT_NE(item.find(here(__LINE__ - 1)), std::string::npos) << item;
}

// Modules and losses are Ember's code calling Ember's ops: an error or a break inside one
// names the line that called the module, never a file inside Ember.
TEST_F(BreakLocationsTest, AModuleCalledAsAFunctionRaisesAtTheCallersLine) {
  nn::Linear lin(8, 4);
  const std::string eager = error_of([&] { lin(ones({2, 3})); });
  EXPECT_NE(eager.find("mat1 and mat2 shapes cannot be multiplied"), std::string::npos) << eager;
  EXPECT_NE(eager.find(here(__LINE__ - 2)), std::string::npos) << eager;
  auto compiled = compile([&](const Tensor& x) { return lin(x); });
  const std::string traced = error_of([&] { compiled(ones({2, 3})); });
  EXPECT_NE(traced.find(here(__LINE__ - 2)), std::string::npos) << traced;
  nn::MSELoss mse;
  const std::string loss = error_of([&] { mse(ones({2, 3}), ones({3, 2})); });
  EXPECT_NE(loss.find(here(__LINE__ - 1)), std::string::npos) << loss;
}

TEST_F(BreakLocationsTest, ErrorsAndBreaksInsideEmbersOwnCodeNeverNameItsFiles) {
  // forward() called directly has no line of its own: the message names none rather than
  // a line inside Ember.
  nn::LayerNorm ln({8});
  const std::string direct = error_of([&] { ln.forward(ones({2, 3})); });
  EXPECT_NE(direct.find("normalized_shape"), std::string::npos) << direct;
  EXPECT_EQ(direct.find("@ember/"), std::string::npos) << direct;
  EXPECT_EQ(direct.find("src/nn/"), std::string::npos) << direct;
  // A module built inside a trace sets requires_grad on its parameters (a break, made by
  // Ember's constructor): the break names the function's own line.
  auto fn = compile([](const Tensor& x) { static nn::Linear made_here(3, 2); return made_here(x); },
                    {.fullgraph = true});
  const int fn_line = __LINE__ - 2;
  const std::string brk = error_of([&] { fn(ones({2, 3})); }, ErrorKind::Unsupported);
  EXPECT_NE(brk.find("GB0009"), std::string::npos) << brk;
  EXPECT_NE(brk.find(here(fn_line)), std::string::npos) << brk;
  EXPECT_EQ(brk.find("@ember/"), std::string::npos) << brk;
  EXPECT_EQ(brk.find("module.cpp"), std::string::npos) << brk;
}

}  // namespace
}  // namespace ember
