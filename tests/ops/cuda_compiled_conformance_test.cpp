// Compiled conformance on CUDA: every case of tests/ops/cases_cuda/ whose op runs eagerly
// on cuda:0, made inside a function compiled with the "inductor" backend (so its graph is
// compiled for CUDA: generated kernels where the op lowers, the eager CUDA op as an extern
// call otherwise), against the same call made eagerly on cuda:0: dtype, sizes, strides of
// dims larger than 1, values within assert_close's tolerances, and the inputs afterwards.
// Per op, one compiled function makes all of its cases (one NVRTC translation unit); when
// it fails as a whole, each case is compiled alone so the failure names it. Prints
// `cuda compiled: <ops> ops, <cases> cases, <failed> failed`. Skips, saying why, without a
// GPU or the case files (docs/testing.md, "Conformance on CUDA").
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "case_runner.h"
#include "ember/compile.h"
#include "ember/cuda.h"
#include "ember/ember.h"
#include "ember/logging.h"
#include "ops/dispatch.h"
#include "ops/registry.h"

namespace ember::conformance {
namespace {

constexpr uint64_t kSeed = 7;

std::string cases_dir() {
  const char* env = std::getenv("EMBER_CUDA_CASES_DIR");
  return env && *env ? std::string(env) : std::string(EMBER_CASES_DIR);
}

/// One case: its stack on cuda:0, eager's outputs and inputs afterwards.
struct Case {
  const json* c = nullptr;
  Stack args;
  size_t num_inputs = 0;
  std::vector<Tensor> want, inputs_after;
};

/// The cases' calls made by one function compiled with "inductor" on fresh copies of their
/// inputs: per case, its outputs then its inputs afterwards; or the error.
std::pair<std::vector<std::vector<Tensor>>, std::string> run_compiled(const ops::OpDef& op,
                                                                       const std::vector<Case*>& cases) {
  std::vector<Tensor> inputs;
  for (const Case* k : cases)
    for (const Tensor& t : TensorSlots(k->args).tensors) inputs.push_back(t.clone());
  std::vector<size_t> out_counts(cases.size(), 0);
  std::vector<const Stack*> stacks;
  std::vector<size_t> num_inputs;
  for (const Case* k : cases) {
    stacks.push_back(&k->args);
    num_inputs.push_back(k->num_inputs);
  }
  auto fn = [&](const std::vector<Tensor>& ts) { return call_each(op, stacks, num_inputs, ts, out_counts); };
  try {
    auto compiled = compile(fn, {.backend = "inductor", .name = "cuda_conformance"});
    manual_seed(kSeed);
    const std::vector<Tensor> outs = compiled(inputs);
    cuda::synchronize();
    std::vector<std::vector<Tensor>> per_case;
    size_t o = 0, i = 0;
    for (size_t k = 0; k < cases.size(); ++k) {
      std::vector<Tensor> v(outs.begin() + static_cast<std::ptrdiff_t>(o),
                            outs.begin() + static_cast<std::ptrdiff_t>(o + out_counts[k]));
      v.insert(v.end(), inputs.begin() + static_cast<std::ptrdiff_t>(i),
               inputs.begin() + static_cast<std::ptrdiff_t>(i + cases[k]->num_inputs));
      per_case.push_back(std::move(v));
      o += out_counts[k];
      i += cases[k]->num_inputs;
    }
    return {per_case, ""};
  } catch (const std::exception& e) {
    return {{}, std::string("compiled: raised: ") + e.what()};
  }
}

void check(const Case& k, const std::vector<Tensor>& got) {
  std::vector<Tensor> want = k.want;
  want.insert(want.end(), k.inputs_after.begin(), k.inputs_after.end());
  if (got.size() != want.size())
    throw Mismatch{"compiled: " + std::to_string(got.size()) + " tensors, eager " + std::to_string(want.size())};
  const bool values = k.c->value("values", true);
  for (size_t i = 0; i < got.size(); ++i) {
    const bool output = i < k.want.size();
    const std::string what = output ? "output " + std::to_string(i) : "input " + std::to_string(i - k.want.size()) +
                                                                           " after the call";
    if (got[i].defined() && want[i].defined() && !(got[i].device() == want[i].device()))
      throw Mismatch{what + ": on " + got[i].device().str() + ", eager on " + want[i].device().str()};
    check_same(got[i], want[i], what, values || !output, /*strides=*/true);
  }
}

TEST(CudaCompiledConformance, EveryCaseCompiledForCudaEqualsEagerCuda) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  std::error_code ec;
  if (!std::filesystem::is_directory(cases_dir(), ec))
    GTEST_SKIP() << "no CUDA conformance cases in " << cases_dir() << " (docs/testing.md, \"Conformance on CUDA\")";
  register_builtin_backends();
  const bool stderr_was = logging::set_stderr_enabled(false);
  Tally tally("cuda compiled");
  const std::vector<CaseFile> files = load_case_files(cases_dir());
  for (const auto& [name, entries] : cases_by_op(files)) {
    const ops::OpDef* op = ops::registry().find(name);
    if (!op) continue;
    std::vector<Case> cases;
    for (const auto& [f, c] : entries) {
      if (c->at("expect").contains("error")) continue;  // argument checks: the CPU's cases
      Case k;
      k.c = c;
      try {
        k.args = build_stack(*f, *op, *c, Device("cuda:0"));
        // Fresh copies of every tensor, those inside lists included, as run_compiled makes:
        // a copy of a strided view is contiguous, so both sides must start from copies.
        std::vector<Tensor> copies;
        for (const Tensor& t : TensorSlots(k.args).tensors) copies.push_back(t.clone());
        Stack eager = TensorSlots::with(k.args, copies);
        manual_seed(kSeed);
        k.want = *result_tensors(ops::call(*op, eager));
        k.inputs_after = TensorSlots(eager).tensors;
        cuda::synchronize();
      } catch (const std::exception&) {
        continue;  // not run eagerly on CUDA (no kernel, not tensors): test_cuda_conformance says why
      }
      k.num_inputs = TensorSlots(k.args).tensors.size();
      cases.push_back(std::move(k));
    }
    if (cases.empty()) continue;
    std::vector<Case*> all;
    for (Case& k : cases) all.push_back(&k);
    // Random ops draw in call order: one function for all cases draws as eager did only
    // case by case, so those run one case per compile.
    const bool random = op->nondeterministic_seeded;
    const auto together = random ? std::pair<std::vector<std::vector<Tensor>>, std::string>{{}, "random"}
                                 : run_compiled(*op, all);
    for (Case& k : cases) {
      tally.run(name, *k.c, "cuda compiled ", [&] {
        if (together.second.empty()) return check(k, together.first.at(static_cast<size_t>(&k - cases.data())));
        const auto alone = run_compiled(*op, {&k});
        if (!alone.second.empty()) throw Mismatch{alone.second};
        check(k, alone.first.at(0));
      });
    }
  }
  logging::set_stderr_enabled(stderr_was);
  tally.report();
}

}  // namespace
}  // namespace ember::conformance
