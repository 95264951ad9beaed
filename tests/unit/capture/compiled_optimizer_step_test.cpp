// A compiled optimizer step (Note [outside state] in docs/notes/capture.md): `opt.step()`
// compiled alone is traced until the optimizer's state exists, then one graph updating every
// parameter and its state is replayed behind guards, with the gradients read from the
// parameters' slots at each call. Over 50 steps it equals eager's step() (to the bit with
// the interpreter, within 16 float32 ulps of max(|x|, 1) with the inductor's fused
// kernels), parameters and every state tensor, for SGD and AdamW with each option,
// with the eager, aot_eager and inductor backends; an emptied gradient, a gradient of
// another geometry and another optimizer are guard misses, never a reuse.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "ember/ember.h"
#include "inductor/inductor.h"
#include "support/compile_helpers.h"

namespace ember {
namespace {

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

struct OptimizerCase {
  std::string name;
  MakeOptimizer make;
  bool makes_state = true;  // whether its first step creates state (SGD without momentum does not)
};
void PrintTo(const OptimizerCase& c, std::ostream* os) { *os << c.name; }

std::unique_ptr<optim::Optimizer> make_sgd(std::vector<Tensor> p, optim::SGDOptions o) {
  return std::make_unique<optim::SGD>(std::move(p), o);
}
std::unique_ptr<optim::Optimizer> make_adamw(std::vector<Tensor> p, optim::AdamWOptions o) {
  return std::make_unique<optim::AdamW>(std::move(p), o);
}

std::vector<OptimizerCase> optimizer_cases() {
  using optim::AdamWOptions;
  using optim::SGDOptions;
  auto sgd = [](SGDOptions o) { return [o](std::vector<Tensor> p) { return make_sgd(std::move(p), o); }; };
  auto adamw = [](AdamWOptions o) { return [o](std::vector<Tensor> p) { return make_adamw(std::move(p), o); }; };
  return {
      {"SgdPlain", sgd({.lr = 0.05}), false},
      {"SgdMomentumWeightDecay", sgd({.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01})},
      {"SgdDampening", sgd({.lr = 0.05, .momentum = 0.8, .dampening = 0.3})},
      {"SgdNesterovMaximize", sgd({.lr = 0.05, .momentum = 0.9, .weight_decay = 0.1, .nesterov = true, .maximize = true})},
      {"AdamW", adamw({.lr = 0.01, .weight_decay = 0.05})},
      {"AdamWAmsgrad", adamw({.lr = 0.01, .betas = {0.8, 0.99}, .amsgrad = true})},
      {"AdamWAmsgradMaximize", adamw({.lr = 0.01, .eps = 1e-6, .amsgrad = true, .maximize = true})},
  };
}

/// Three float32 parameters of different shapes, the same for the same seed.
std::vector<Tensor> make_params(uint64_t seed) {
  manual_seed(seed);
  std::vector<Tensor> ps = {randn({4, 3}), randn({5}), randn({2, 3, 2})};
  for (Tensor& p : ps) p.requires_grad_();
  return ps;
}

/// Gradients of step `k`: new tensors each step, as backward() after zero_grad() makes.
std::vector<Tensor> make_grads(const std::vector<Tensor>& params, int k) {
  manual_seed(1000 + static_cast<uint64_t>(k));
  std::vector<Tensor> gs;
  for (const Tensor& p : params) gs.push_back(randn(p.sizes()));
  return gs;
}

/// Every state tensor of `opt`, in a fixed order (undefined ones as undefined tensors).
std::vector<Tensor> state_tensors(const optim::Optimizer& opt) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < opt.params().size(); ++i) {
    if (const auto* sgd = dynamic_cast<const optim::SGD*>(&opt)) {
      out.push_back(sgd->state(i).momentum_buffer);
    } else {
      const auto& st = dynamic_cast<const optim::AdamW&>(opt).state(i);
      for (const Tensor& t : {st.step, st.exp_avg, st.exp_avg_sq, st.max_exp_avg_sq}) out.push_back(t);
    }
  }
  return out;
}

/// How far a backend's step may be from eager's, in float32 ulps of max(|x|, 1). The
/// interpreter runs eager's kernels in eager's order: equal to the bit. The inductor's
/// fused kernels may contract a product and a sum that eager computes in two kernels into
/// one multiply-add (one rounding fewer, shown at the operands' scale when the result
/// cancels), and a momentum recurrence carries such differences a few steps.
int ulps_for(const std::string& backend) { return backend == "inductor" ? 16 : 0; }

/// Equal dtype and sizes, and every element within `ulps` float32 ulps of max(|x|, 1).
void expect_ulp_close(const Tensor& actual, const Tensor& expected, const std::string& what, int ulps) {
  ASSERT_EQ(actual.defined(), expected.defined()) << what;
  if (!expected.defined()) return;
  ASSERT_FALSE(actual.is_fake()) << what;
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec()) << what;
  const auto a = actual.to_vector<float>(), e = expected.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) {
    const float m = std::max({std::abs(a[i]), std::abs(e[i]), 1.0f});
    const float ulp = std::nextafter(m, INFINITY) - m;
    ASSERT_LE(std::abs(a[i] - e[i]), static_cast<float>(ulps) * ulp) << what << " at " << i << ": " << a[i]
                                                                      << " vs eager " << e[i];
  }
}

void expect_same_state(const optim::Optimizer& compiled, const optim::Optimizer& eager, const std::string& when,
                       int ulps = ulps_for("inductor")) {
  for (size_t i = 0; i < eager.params().size(); ++i) {
    expect_ulp_close(compiled.params()[i], eager.params()[i], "param " + std::to_string(i) + when, ulps);
  }
  const auto cs = state_tensors(compiled), es = state_tensors(eager);
  for (size_t i = 0; i < es.size(); ++i) expect_ulp_close(cs[i], es[i], "state tensor " + std::to_string(i) + when, ulps);
}

/// Sets each parameter's gradient slot to a copy of `grads[i]` (undefined stays undefined).
void set_grads(const std::vector<Tensor>& params, const std::vector<Tensor>& grads) {
  for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = grads[i].defined() ? grads[i].clone() : Tensor();
}

/// Step `k` with gradients `grads` (copies: new tensors, as backward() after zero_grad()
/// makes) on both optimizers, eagerly and through `compiled_step`, then compares them.
void step_both(optim::Optimizer& eager, optim::Optimizer& comp, const std::function<void()>& compiled_step,
               const std::vector<Tensor>& grads, int k, int ulps = ulps_for("inductor")) {
  eager.zero_grad();
  comp.zero_grad();
  set_grads(eager.params(), grads);
  set_grads(comp.params(), grads);
  eager.step();
  compiled_step();
  expect_same_state(comp, eager, " after step " + std::to_string(k), ulps);
}

class CompiledOptimizerStep : public testing::CompileDirTest,
                              public ::testing::WithParamInterface<std::tuple<std::string, OptimizerCase>> {};

TEST_P(CompiledOptimizerStep, FiftyStepsEqualEagerAndTraceOnlyUntilTheStateExists) {
  const auto& [backend, c] = GetParam();
  auto eager = c.make(make_params(5));
  auto comp = c.make(make_params(5));
  int traces = 0;
  auto step = compile(
      [&] {
        ++traces;
        comp->step();
      },
      {.backend = backend, .name = "opt_step"});
  for (int k = 0; k < 50; ++k) {
    // zero_grad(set_to_none) then new gradients: the compiled step must read the new ones.
    step_both(*eager, *comp, step, make_grads(eager->params(), k), k, ulps_for(backend));
    if (HasFatalFailure()) return;
  }
  // The first call makes the state (its trace is not kept: Note [escaping tensors]); the
  // second traces with the state as graph inputs; every later call replays that graph.
  EXPECT_EQ(traces, c.makes_state ? 2 : 1);
  EXPECT_EQ(step.cache_size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, CompiledOptimizerStep,
    ::testing::Combine(::testing::Values("eager", "aot_eager", "inductor"), ::testing::ValuesIn(optimizer_cases())),
    [](const auto& info) { return std::get<1>(info.param).name + "_" + std::get<0>(info.param); });

class CompiledOptimizerGuards : public testing::CompileDirTest {};

TEST_F(CompiledOptimizerGuards, AStepIsOneGraphUpdatingEveryParameter) {
  auto opt = make_adamw(make_params(1), {.lr = 0.01, .amsgrad = true});
  testing::RecordingBackend backend;
  auto step = compile([&] { opt->step(); }, {.custom_backend = backend.fn(), .name = "adamw_step"});
  for (int k = 0; k < 6; ++k) {
    set_grads(opt->params(), make_grads(opt->params(), k));
    step();
  }
  ASSERT_EQ(backend.graphs->size(), 2u) << "the first step's graph (making the state), then one graph";
  const std::string& g = backend.graphs->back();
  // Gradients are inputs named after their slots; parameters and state are written in place.
  for (const char* input : {"param_0.grad", "param_1.grad", "param_2.grad"}) {
    EXPECT_NE(g.find(input), std::string::npos) << input << "\n" << g;
  }
  EXPECT_EQ(dynamic_cast<optim::AdamW&>(*opt).state(0).step.item<double>(), 6.0);
}

TEST_F(CompiledOptimizerGuards, TheInductorUpdatesEachAdamWParameterInOneKernel) {
  // The writes into parameters and state are lifted out of the graph (the AOT runtime
  // copies the new values back), so the element-wise update of one parameter (exp_avg,
  // exp_avg_sq, max_exp_avg_sq and the parameter) is one kernel with four stores; the
  // step count and bias corrections are 0-dim kernels beside it.
  set_logs("output_code");
  testing::LogCapture logs;
  manual_seed(0);
  std::vector<Tensor> ps = {randn({64, 32}), randn({48})};
  for (Tensor& p : ps) p.requires_grad_();
  optim::AdamW opt(ps, {.lr = 0.01, .amsgrad = true});
  auto step = compile([&] { opt.step(); }, {.backend = "inductor", .name = "adamw_step"});
  for (int k = 0; k < 3; ++k) {
    set_grads(ps, make_grads(ps, k));
    step();
  }
  const std::string t = logs.text();
  const std::string last = t.substr(t.rfind("Output code written to"));  // the graph replayed
  EXPECT_EQ(testing::count_of(last, "// cpp_fused_"), 8u) << last;
  EXPECT_EQ(testing::count_of(last, ": Float[64, 32], computes"), 1u) << last;
  EXPECT_EQ(testing::count_of(last, ": Float[48], computes"), 1u) << last;
  EXPECT_EQ(testing::count_of(last, ": Float[], computes"), 2u) << "the step counts";
  EXPECT_EQ(testing::count_of(last, ": Double[], computes"), 4u) << "casts of the step counts and bias corrections";
}

TEST_F(CompiledOptimizerGuards, TheInductorStoresTheUpdatesStraightIntoTheParametersAndState) {
  // The writes lifted out of the graph (Note [aot]) are stored by the update kernels into
  // the parameters and state themselves (Note [inductor], "Writes into graph inputs"): the
  // same buffers, nothing copied after the graph, and each tensor's version bumped once,
  // as eager's in-place step bumps it.
  auto eager = make_adamw(make_params(3), {.lr = 0.01, .amsgrad = true});
  auto comp = make_adamw(make_params(3), {.lr = 0.01, .amsgrad = true});
  auto step = compile([&] { comp->step(); }, {.backend = "inductor", .name = "adamw_step"});
  for (int k = 0; k < 2; ++k) {  // the first step makes the state; the second compiles the replayed graph
    step_both(*eager, *comp, step, make_grads(eager->params(), k), k);
    if (HasFatalFailure()) return;
  }
  std::vector<Tensor> written = comp->params();
  for (const Tensor& t : state_tensors(*comp)) written.push_back(t);
  std::vector<const void*> buffers;
  std::vector<uint64_t> versions;
  for (const Tensor& t : written) {
    buffers.push_back(t.raw_data_ptr());
    versions.push_back(t._version());
  }
  const int64_t before = inductor::outputs_into_inputs();
  step_both(*eager, *comp, step, make_grads(eager->params(), 2), 2);
  // Per parameter: the parameter, exp_avg, exp_avg_sq and max_exp_avg_sq in its update
  // kernel, and the step count in its own 0-dim kernel.
  EXPECT_EQ(inductor::outputs_into_inputs() - before, 3 * 5);
  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(written[i].raw_data_ptr(), buffers[i]) << "tensor " << i;
    EXPECT_EQ(written[i]._version(), versions[i] + 1) << "tensor " << i;
  }
}

TEST_F(CompiledOptimizerGuards, AnEmptiedGradientIsAGuardMissAndTheParameterIsSkipped) {
  set_logs("recompiles");
  testing::LogCapture logs;
  auto eager = make_sgd(make_params(2), {.lr = 0.1, .momentum = 0.9});
  auto comp = make_sgd(make_params(2), {.lr = 0.1, .momentum = 0.9});
  int traces = 0;
  auto step = compile(
      [&] {
        ++traces;
        comp->step();
      },
      {.backend = "inductor", .name = "sgd_step"});
  for (int k = 0; k < 8; ++k) {
    auto grads = make_grads(eager->params(), k);
    if (k == 4 || k == 5) grads[1] = Tensor();  // this parameter got no gradient
    step_both(*eager, *comp, step, grads, k);
    if (HasFatalFailure()) return;
  }
  // Steps 0 and 1 trace (state made, then kept); step 4 misses and traces the step without
  // param 1; step 6 finds the first entry again.
  EXPECT_EQ(traces, 3);
  EXPECT_EQ(step.cache_size(), 2u);
  EXPECT_NE(logs.text().find("tensor 'param_1.grad' is None (expected a gradient)"), std::string::npos)
      << logs.text();
}

TEST_F(CompiledOptimizerGuards, AGradientOfOtherStridesIsAGuardMiss) {
  set_logs("recompiles");
  testing::LogCapture logs;
  auto eager = make_adamw(make_params(3), {});
  auto comp = make_adamw(make_params(3), {});
  auto step = compile([&] { comp->step(); }, {.backend = "inductor", .name = "adamw_step"});
  for (int k = 0; k < 4; ++k) {
    auto grads = make_grads(eager->params(), k);
    // At step 3 the first gradient is a transposed view: same sizes, other strides.
    if (k == 3) grads[0] = randn({3, 4}).t();
    for (size_t i = 0; i < grads.size(); ++i) {
      eager->params()[i].mutable_grad() = grads[i];
      comp->params()[i].mutable_grad() = grads[i];
    }
    eager->step();
    step();
    expect_same_state(*comp, *eager, " after step " + std::to_string(k));
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(step.cache_size(), 2u);
  EXPECT_NE(logs.text().find("tensor 'param_0.grad' stride mismatch at index 0. expected 3, actual 1"),
            std::string::npos)
      << logs.text();
}

TEST_F(CompiledOptimizerGuards, ABackwardInTheSameFunctionCompilesTheStepOnce) {
  // backward() is a graph break: the function is traced again at each call (meta functions
  // only) and its graphs are found by their text; the update after the break is one graph,
  // compiled once, whose gradients are the ones this call's backward() made.
  auto make = [](uint64_t seed) {
    auto m = std::make_shared<nn::Linear>(3, 4);
    manual_seed(seed);
    for (Tensor& p : m->parameters()) p.detach().copy_(randn(p.sizes()));
    return m;
  };
  auto em = make(9), cm = make(9);
  optim::AdamW eopt(em->parameters(), {.lr = 0.01, .amsgrad = true});
  optim::AdamW copt(cm->parameters(), {.lr = 0.01, .amsgrad = true});
  testing::RecordingBackend backend;
  auto train = compile(
      [&](const Tensor& x) {
        copt.zero_grad();
        Tensor loss = cm->forward(x).pow(2).mean();
        loss.backward();
        copt.step();
        return loss;
      },
      {.custom_backend = backend.fn(), .name = "train"});
  for (int k = 0; k < 8; ++k) {
    manual_seed(50 + static_cast<uint64_t>(k));
    Tensor x = randn({6, 3});
    eopt.zero_grad();
    em->forward(x).pow(2).mean().backward();
    eopt.step();
    train(x);
    expect_same_state(copt, eopt, " after step " + std::to_string(k));
    if (HasFatalFailure()) return;
  }
  size_t step_graphs = 0;
  for (const std::string& g : *backend.graphs) step_graphs += g.find("param_0.grad") != std::string::npos;
  EXPECT_EQ(step_graphs, 2u) << "the first step's (making the state), then one for every later step";
}

TEST_F(CompiledOptimizerGuards, AnotherOptimizerPassedAsArgumentIsAGuardMiss) {
  auto a = make_sgd(make_params(4), {.lr = 0.1, .momentum = 0.5});
  auto b = make_sgd(make_params(4), {.lr = 0.1, .momentum = 0.5});
  auto ea = make_sgd(make_params(4), {.lr = 0.1, .momentum = 0.5});
  auto eb = make_sgd(make_params(4), {.lr = 0.1, .momentum = 0.5});
  int traces = 0;
  auto step = compile(
      [&](optim::Optimizer& opt) {
        ++traces;
        opt.step();
      },
      {.backend = "inductor", .name = "any_step"});
  for (int k = 0; k < 3; ++k) {
    const auto grads = make_grads(a->params(), k);
    for (auto* o : {a.get(), b.get(), ea.get(), eb.get()}) set_grads(o->params(), grads);
    step(*a);
    ea->step();
    step(*b);
    eb->step();
    expect_same_state(*a, *ea, " (a) after step " + std::to_string(k));
    expect_same_state(*b, *eb, " (b) after step " + std::to_string(k));
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(traces, 4) << "each optimizer: its first step, then its entry";
  EXPECT_EQ(step.cache_size(), 2u);
}

}  // namespace
}  // namespace ember
