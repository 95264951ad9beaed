// When a compiled graph runs in the interpreter instead of the backend's compiled code
// (AOT autograd cannot trace it for training), it says so once per function, at WARNING,
// with the reason; a graph whose results eager would give a grad_fn runs compiled through
// AOT autograd, and one whose outputs need no gradient runs its inference graph even when
// parameters require grad. See Note [capture], "Interpreted graphs".
#include <gtest/gtest.h>

#include <regex>

#include "ember/ember.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

using testing::count_of;
using testing::expect_close;

class InterpretedGraphsTest : public testing::CompileDirTest {};

std::shared_ptr<nn::Sequential> small_model() {
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(4, 8));
  model->push_back(std::make_shared<nn::ReLU>());
  model->push_back(std::make_shared<nn::Linear>(8, 3));
  return model;
}

TEST_F(InterpretedGraphsTest, EvalWithoutNoGradRunsCompiledAndStaysDifferentiable) {
  auto model = small_model();
  model->eval();
  auto forward = compile([](nn::Sequential& m, const Tensor& x) { return m.forward(x); },
                         {.backend = "inductor", .name = "eval_forward"});
  testing::LogCapture logs;
  Tensor x = randn({2, 4});
  for (int i = 0; i < 3; ++i) {
    Tensor out = forward(*model, x);
    expect_close(out, model->forward(x));
    ASSERT_TRUE(out.requires_grad()) << "eager's result requires grad, so the compiled one does";
    EXPECT_EQ(out.grad_fn()->name(), "CompiledFunctionBackward");
  }
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
  // The result is differentiable, as eager's is.
  forward(*model, x).sum().backward();
  EXPECT_TRUE(model->named_parameters()[0].second.grad().defined());
}

TEST_F(InterpretedGraphsTest, OutputsThatNeverNeedAGradientRunCompiled) {
  auto model = small_model();
  model->eval();
  auto predict = compile([](nn::Sequential& m, const Tensor& x) { return argmax(m.forward(x), 1); },
                         {.backend = "inductor", .name = "predict"});
  set_logs("inductor");  // an interpreted run was an INFO line there before it was a warning
  testing::LogCapture logs;
  Tensor x = randn({5, 4});
  Tensor classes = predict(*model, x);
  EXPECT_EQ(classes.to_vector<int64_t>(), argmax(model->forward(x), 1).to_vector<int64_t>());
  EXPECT_FALSE(classes.requires_grad());
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("running it eagerly"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("Step 3: torchinductor done compiling graph predict"), std::string::npos) << logs.text();
}

TEST_F(InterpretedGraphsTest, UnderNoGradTheGraphRunsCompiledWithoutAWarning) {
  auto model = small_model();
  model->eval();
  auto forward = compile([](nn::Sequential& m, const Tensor& x) { return m.forward(x); },
                         {.backend = "inductor", .name = "no_grad_forward"});
  testing::LogCapture logs;
  NoGradGuard no_grad;
  Tensor x = randn({2, 4});
  expect_close(forward(*model, x), model->forward(x));
  EXPECT_EQ(logs.text().find("runs in the interpreter"), std::string::npos) << logs.text();
}

TEST_F(InterpretedGraphsTest, AWriteAotAutogradCannotTraceRunsInterpretedAndSaysWhyOnce) {
  Tensor w = randn({3});
  w.requires_grad_();
  auto loss_of = compile(
      [&w](const Tensor& x) {
        Tensor y = x * w;
        y.select(0, 0).mul_(2);  // a write into a view of a value that requires grad
        return y.sum();
      },
      {.backend = "inductor", .name = "loss"});
  testing::LogCapture logs;
  for (int step = 0; step < 3; ++step) {
    Tensor x = randn({3});
    w.mutable_grad() = Tensor();
    loss_of(x).backward();
    Tensor expected = x.clone();
    expected.select(0, 0).mul_(2);
    expect_close(w.grad(), expected);
  }
  const std::string t = logs.text();
  EXPECT_EQ(count_of(t, "runs in the interpreter"), 1u) << t;
  EXPECT_NE(t.find("'_lifted_tensor_0' requires grad"), std::string::npos) << t;
  EXPECT_NE(t.find("AOT autograd cannot compile it for training"), std::string::npos) << t;
}

}  // namespace
}  // namespace ember
