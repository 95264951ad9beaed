// A module attribute read while tracing (nn::Attribute: LayerNorm::eps, Dropout::p, the
// training flag, …) is guarded on its value (Note [module attributes]): changed after the
// first call, the function recompiles and gives eager's answer, per module kind, for
// modules passed as arguments and modules captured by the function; the recompile log
// names the attribute.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

using testing::expect_close;

class ModuleAttributes : public testing::DiagnosticsTest {
 protected:
  void SetUp() override {
    DiagnosticsTest::SetUp();
    manual_seed(0);
  }
};

/// Calls `module` compiled (captured by the function) on x, runs `change`, and checks that
/// the compiled function then gives what the module gives eagerly.
template <typename M>
void expect_follows(M& module, const Tensor& x, const std::function<void()>& change, const std::string& what) {
  auto fn = compile([&module](const Tensor& in) { return module.forward(in); });
  expect_close(fn(x), module.forward(x), 1e-5, 1e-5, what + ", before the change");
  change();
  expect_close(fn(x), module.forward(x), 1e-5, 1e-5, what + ", after the change");
  EXPECT_EQ(fn.cache_size(), 2u) << what << ": the change must recompile";
}

TEST_F(ModuleAttributes, LayerNormEpsAffineAndShapeAreGuarded) {
  nn::LayerNorm ln({4});
  {
    NoGradGuard no_grad;
    ln.tensor("weight").mul_(3);  // affine parameters that matter
  }
  const Tensor x = randn({2, 4});
  expect_follows(
      ln, x, [&] { ln.eps = 10.0; }, "LayerNorm.eps");
  expect_follows(
      ln, x, [&] { ln.elementwise_affine = false; }, "LayerNorm.elementwise_affine");
  nn::LayerNorm ln2({4}, 1e-5, false);
  expect_follows(
      ln2, x,
      [&] {
        ln2.normalized_shape = std::vector<int64_t>{2, 4};
      },
      "LayerNorm.normalized_shape");
}

TEST_F(ModuleAttributes, DropoutProbabilityIsGuarded) {
  nn::Dropout drop(0.5);
  const Tensor x = randn({64});
  auto fn = compile([&drop](const Tensor& in) { return drop.forward(in); });
  fn(x);
  drop.p = 0.0;
  expect_close(fn(x), x, 0, 0, "p = 0 keeps every element");
}

TEST_F(ModuleAttributes, TrainingFlagOfACapturedModuleIsGuarded) {
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(8, 8));
  model->push_back(std::make_shared<nn::Dropout>(0.5));
  const Tensor x = randn({4, 8});
  auto fn = compile([&model](const Tensor& in) { return model->forward(in); });
  fn(x);
  model->eval();
  expect_close(fn(x), model->forward(x), 0, 0, "eval() turns dropout off in the compiled function too");
}

TEST_F(ModuleAttributes, GeluApproximationIsGuarded) {
  nn::GELU gelu;
  expect_follows(
      gelu, randn({16}), [&] { gelu.approximate = "tanh"; }, "GELU.approximate");
}

TEST_F(ModuleAttributes, Conv2dStridePaddingAndDilationAreGuarded) {
  nn::Conv2d conv(2, 3, {3, 3});
  const Tensor x = randn({1, 2, 9, 9});
  expect_follows(
      conv, x,
      [&] {
        conv.stride = std::vector<int64_t>{2, 2};
      },
      "Conv2d.stride");
  expect_follows(
      conv, x,
      [&] {
        conv.padding = std::vector<int64_t>{1, 2};
      },
      "Conv2d.padding");
  expect_follows(
      conv, x,
      [&] {
        conv.dilation = std::vector<int64_t>{2, 1};
      },
      "Conv2d.dilation");
}

TEST_F(ModuleAttributes, BatchNormEpsMomentumAndRunningStatsAreGuarded) {
  const Tensor x = randn({4, 3, 2, 2}) * 2 + 1;
  nn::BatchNorm2d bn(3);
  bn.eval();
  bn.tensor("running_var").fill_(0.5);
  expect_follows(
      bn, x, [&] { bn.eps = 1.0; }, "BatchNorm2d.eps");
  expect_follows(
      bn, x, [&] { bn.track_running_stats = false; }, "BatchNorm2d.track_running_stats");
  // In training the running statistics are updated with `momentum`: compare them with a
  // twin module run eagerly.
  nn::BatchNorm2d compiled_bn(3), eager_bn(3);
  auto fn = compile([&compiled_bn](const Tensor& in) { return compiled_bn.forward(in); });
  fn(x);
  eager_bn.forward(x);
  compiled_bn.momentum = 0.5;
  eager_bn.momentum = 0.5;
  fn(x);
  eager_bn.forward(x);
  expect_close(compiled_bn.tensor("running_mean"), eager_bn.tensor("running_mean"), 1e-6, 1e-6, "running_mean");
  expect_close(compiled_bn.tensor("running_var"), eager_bn.tensor("running_var"), 1e-6, 1e-6, "running_var");
}

TEST_F(ModuleAttributes, EmbeddingPaddingIndexIsGuarded) {
  // padding_idx changes no value, only which row gets no gradient.
  nn::Embedding emb(5, 3);
  const Tensor idx = tensor<int64_t>({0, 1, 1, 4});
  auto fn = compile([&emb](const Tensor& i) { return emb.forward(i); });
  auto grad_of_weight = [&](bool compiled) {
    emb.zero_grad();
    (compiled ? fn(idx) : emb.forward(idx)).sum().backward();
    return emb.weight().grad();
  };
  grad_of_weight(true);
  emb.padding_idx = 1;
  expect_close(grad_of_weight(true), grad_of_weight(false), 0, 0, "row 1 gets no gradient");
}

TEST_F(ModuleAttributes, AttentionHeadCountIsGuarded) {
  nn::CausalSelfAttention attn(8, 2);
  expect_follows(
      attn, randn({1, 3, 8}), [&] { attn.n_head = 4; }, "CausalSelfAttention.n_head");
}

TEST_F(ModuleAttributes, SequentialLengthIsGuarded) {
  nn::Sequential seq;
  seq.push_back(std::make_shared<nn::Linear>(4, 4));
  expect_follows(
      seq, randn({2, 4}), [&] { seq.push_back(std::make_shared<nn::ReLU>()); }, "Sequential length");
}

TEST_F(ModuleAttributes, ModuleListLengthIsGuarded) {
  nn::ModuleList list;
  list.push_back(std::make_shared<nn::Linear>(4, 4));
  auto run = [&list](const Tensor& in) {
    Tensor x = in;
    for (const auto& m : list) x = std::static_pointer_cast<nn::UnaryModule>(m)->forward(x);
    return x;
  };
  auto fn = compile(run);
  const Tensor x = randn({2, 4});
  fn(x);
  list.push_back(std::make_shared<nn::Linear>(4, 2));
  expect_close(fn(x), run(x), 1e-5, 1e-5, "the appended layer runs");
}

/// A user's module with a configuration value of its own.
class Scale : public nn::UnaryModule {
 public:
  nn::Attribute<double> factor{this, "factor", 2.0};
  Tensor forward(const Tensor& x) override { return x * factor; }
  std::string name() const override { return "Scale"; }
};

TEST_F(ModuleAttributes, UserModulesGuardTheirOwnAttributes) {
  Scale s;
  expect_follows(
      s, randn({3}), [&] { s.factor = -1.5; }, "Scale.factor");
}

TEST_F(ModuleAttributes, RecompileLogNamesTheAttributeThatChanged) {
  set_logs("recompiles");
  testing::LogCapture logs;
  nn::LayerNorm ln({4});
  auto as_argument = compile([](nn::LayerNorm& m, const Tensor& x) { return m.forward(x); },
                             {.name = "norm", .arg_names = {"ln", "x"}});
  auto captured = compile([&ln](const Tensor& x) { return ln.forward(x); }, {.name = "captured"});
  const Tensor x = randn({2, 4});
  as_argument(ln, x);
  captured(x);
  ln.eps = 0.5;
  as_argument(ln, x);
  captured(x);
  EXPECT_NE(logs.text().find("module attribute 'ln.eps' == 1e-05 (actual 0.5)"), std::string::npos) << logs.text();
  EXPECT_NE(logs.text().find("module attribute 'LayerNorm.eps' == 1e-05 (actual 0.5)"), std::string::npos)
      << logs.text();
}

TEST_F(ModuleAttributes, ChangingTheAttributeBackReusesTheFirstEntry) {
  nn::LayerNorm ln({4});
  int traces = 0;
  auto fn = compile([&](const Tensor& x) {
    ++traces;
    return ln.forward(x);
  });
  const Tensor x = randn({2, 4});
  fn(x);
  ln.eps = 0.5;
  fn(x);
  ln.eps = 1e-5;
  expect_close(fn(x), ln.forward(x), 1e-6, 1e-6);
  EXPECT_EQ(traces, 2) << "eps back at 1e-05 passes the first entry's guards";
}

}  // namespace
}  // namespace ember
