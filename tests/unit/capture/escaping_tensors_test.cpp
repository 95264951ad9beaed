// Tensors made while a compiled function is traced that outlive the call (Note [escaping
// tensors]): a function-local static module, a tensor pushed into an outer vector, a tensor
// assigned to a captured variable, a module's cached tensor. Each becomes a real tensor
// holding the value eager would have given it; nothing made once is made again by a replay.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

using testing::expect_close;

class EscapingTensors : public testing::DiagnosticsTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    DiagnosticsTest::SetUp();
    manual_seed(0);
  }
};

/// One function-local static per instantiation, so that each backend's test builds its own.
template <int Instance>
void expect_static_module_built_once(const std::string& backend) {
  nn::Linear* made = nullptr;
  auto fn = compile(
      [&made](const Tensor& x) {
        static nn::Linear lin(4, 3);  // built while the first call is traced
        made = &lin;
        return lin(x) * 2;
      },
      {.backend = backend});
  const Tensor x = randn({2, 4});
  const Tensor first = fn(x);
  ASSERT_NE(made, nullptr);
  const Tensor w = made->weight();
  ASSERT_FALSE(w.is_fake()) << "the static module's weight must be a real tensor after the call";
  const Tensor w_before = w.clone();
  EXPECT_TRUE(w.requires_grad());
  for (int call = 0; call < 3; ++call) {
    const Tensor y = fn(x);
    expect_close(y, first, 1e-5, 1e-5, "call " + std::to_string(call) + " must not draw new weights");
  }
  expect_close(made->weight(), w_before, 0, 0, "the weights are the ones drawn once");
  // Eager use of the same module (it raised "has no data" when the weights stayed fakes).
  expect_close((*made)(x)*2, first, 1e-5, 1e-5, "eager use equals the compiled result");
}

TEST_P(EscapingTensors, StaticModuleBuiltInTheFirstTraceKeepsItsWeightsAndIsUsableEagerly) {
  if (GetParam() == "eager") {
    expect_static_module_built_once<0>(GetParam());
  } else {
    expect_static_module_built_once<1>(GetParam());
  }
}

TEST_P(EscapingTensors, TensorPushedIntoAnOuterVectorHoldsEagersValue) {
  std::vector<Tensor> kept;
  auto fn = compile(
      [&kept](const Tensor& x) {
        kept.push_back(x * 2 + 1);
        return x.sum();
      },
      {.backend = GetParam()});
  std::vector<Tensor> inputs;
  for (int call = 0; call < 3; ++call) {
    inputs.push_back(randn({3}));
    fn(inputs.back());
  }
  ASSERT_EQ(kept.size(), 3u) << "the push happens on every call, as eagerly";
  for (size_t i = 0; i < kept.size(); ++i) {
    ASSERT_FALSE(kept[i].is_fake()) << i;
    expect_close(kept[i], inputs[i] * 2 + 1, 1e-6, 1e-6, "kept[" + std::to_string(i) + "]");
  }
}

TEST_P(EscapingTensors, TensorAssignedToACapturedVariableHoldsEagersValue) {
  Tensor saved;
  auto fn = compile(
      [&saved](const Tensor& x) {
        Tensor y = x.exp();
        saved = y * 3;
        return y;
      },
      {.backend = GetParam()});
  for (int call = 0; call < 3; ++call) {
    const Tensor x = randn({2, 2});
    const Tensor y = fn(x);
    ASSERT_FALSE(saved.is_fake());
    expect_close(saved, x.exp() * 3, 1e-6, 1e-6, "call " + std::to_string(call));
    expect_close(y, x.exp(), 1e-6, 1e-6);
  }
}

TEST_P(EscapingTensors, ModuleCacheFilledWhileTracingIsReal) {
  // CausalSelfAttention caches its mask for the last sequence length it saw.
  nn::CausalSelfAttention attn(8, 2);
  auto fn = compile([&attn](const Tensor& x) { return attn.forward(x); }, {.backend = GetParam()});
  const Tensor x = randn({1, 5, 8});
  const Tensor compiled = fn(x);
  expect_close(compiled, attn.forward(x), 1e-5, 1e-5, "eager call after the compiled one");
  expect_close(fn(x), attn.forward(x), 1e-5, 1e-5, "second compiled call");
}

TEST_P(EscapingTensors, AFunctionWhoseFirstCallMadeStateReplaysAfterwards) {
  Tensor state;
  int runs = 0;
  auto fn = compile(
      [&](const Tensor& x) {
        ++runs;
        if (!state.defined()) state = zeros({3});
        return x + state;
      },
      {.backend = GetParam()});
  for (int call = 0; call < 4; ++call) expect_close(fn(ones({3})), ones({3}), 0, 0);
  EXPECT_FALSE(state.is_fake());
  EXPECT_EQ(runs, 2) << "the first call made the state; the second traced again and later calls replay";
  EXPECT_EQ(fn.cache_size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Backends, EscapingTensors, ::testing::Values("eager", "inductor"));

}  // namespace
}  // namespace ember
