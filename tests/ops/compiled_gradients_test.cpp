// Compiled gradients: every gradient case of every op with a derivative formula (the cases
// EveryGradientMatchesPyTorch checks against PyTorch) run through ember::compile with the
// inductor backend — AOT autograd's joint graph, partition, compiled forward and backward
// — against the same calls made eagerly: each input's gradient from autograd::grad with
// the case's upstream gradients must be eager's within the dtype's assert_close
// tolerances (the case's tol_dtype where PyTorch computed a gradient in a lower
// precision). A C++ compile costs about a second, so one compiled function makes the calls
// of every case of kOpsPerGraph ops; when it fails as a whole, or AOT autograd could not
// compile it (it ran in the interpreter), each op runs alone, and a failing op each case
// alone, so that each failure names its case. See docs/testing.md.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <sstream>

#include "case_runner.h"
#include "ember/compile.h"
#include "ember/ember.h"
#include "ember/logging.h"
#include "inductor/inductor.h"
#include "ops/dispatch.h"
#include "ops/registry.h"

namespace ember::conformance {
namespace {

constexpr uint64_t kSeed = 11;
constexpr size_t kOpsPerGraph = 16;

/// One gradient case: its op, file and entry.
struct GradCase {
  const ops::OpDef* op = nullptr;
  const CaseFile* file = nullptr;
  const json* c = nullptr;
};

/// The gradients a run gave, per case and input (undefined: none), or the error that
/// stopped it; whether the compiled function ran in the interpreter.
struct GradRun {
  std::string error;
  std::vector<std::vector<Tensor>> grads;
  bool interpreted = false;
};

/// Runs `cases` once: eagerly, or inside one function compiled with inductor.
GradRun run_grads(const std::vector<const GradCase*>& cases, bool compiled) {
  EnableGradGuard enable;
  std::vector<Stack> stacks;
  std::vector<std::vector<Tensor>> inputs;  // per case, the tensors whose gradients are checked
  std::vector<Tensor> all;                  // every tensor of every case, the function's argument
  std::vector<size_t> tensor_counts;
  for (const GradCase* k : cases) {
    const ops::OpDef& op = *k->op;
    Stack args = build_stack(*k->file, op, *k->c, /*meta=*/false);
    const json& g = k->c->at("grads");
    std::vector<Tensor> in;
    for (const json& i : g.at("inputs")) {
      Tensor t = grad_input(op, args, i);
      t.requires_grad_();
      in.push_back(t);
    }
    // In-place ops write a clone of their leaf input, as the generator did.
    for (const json& name : g.value("clone_written", json::array())) {
      const auto i = static_cast<size_t>(op.schema.index_of(name.get<std::string>()));
      args[i] = args[i].to_tensor().clone();
    }
    size_t n = 0;
    for (const IValue& v : args) {
      if (v.is_tensor() && v.to_tensor().defined()) all.push_back(v.to_tensor()), ++n;
      if (v.is_tensor_list())
        for (const Tensor& t : v.to_tensor_list()) all.push_back(t), ++n;
      if (v.is_optional_tensor_list())
        for (const auto& t : v.to_optional_tensor_list())
          if (t) all.push_back(*t), ++n;
    }
    tensor_counts.push_back(n);
    stacks.push_back(std::move(args));
    inputs.push_back(std::move(in));
  }
  std::vector<size_t> out_counts(cases.size(), 0);
  auto fn = [&](const std::vector<Tensor>& ts) {
    std::vector<Tensor> outs;
    size_t first = 0;
    for (size_t k = 0; k < cases.size(); ++k) {
      Stack s = stacks[k];
      size_t at = first;
      for (IValue& v : s) {
        if (v.is_tensor() && v.to_tensor().defined()) v = ts.at(at++);
        if (v.is_tensor_list()) {
          std::vector<Tensor> list = v.to_tensor_list();
          for (Tensor& t : list) t = ts.at(at++);
          v = list;
        }
        if (v.is_optional_tensor_list()) {
          std::vector<std::optional<Tensor>> list = v.to_optional_tensor_list();
          for (auto& t : list)
            if (t) t = ts.at(at++);
          v = list;
        }
      }
      size_t count = 0;
      for (const IValue& r : ops::call(*cases[k]->op, s)) {
        if (r.is_tensor()) outs.push_back(r.to_tensor()), ++count;
        if (r.is_tensor_list())
          for (const Tensor& t : r.to_tensor_list()) outs.push_back(t), ++count;
      }
      out_counts[k] = count;
      first += tensor_counts[k];
    }
    return outs;
  };
  GradRun run;
  logging::ScopedSink interpreted([&run](const logging::Record& r) {
    if (r.text.find("runs in the interpreter") != std::string::npos) run.interpreted = true;
  });
  try {
    manual_seed(kSeed);
    std::vector<Tensor> outs;
    if (compiled) {
      auto f = compile(fn, {.backend = "inductor", .name = "gradients"});
      outs = f(all);
    } else {
      outs = fn(all);
    }
    std::vector<Tensor> roots, ups, wrt;
    size_t o = 0;
    for (size_t k = 0; k < cases.size(); ++k) {
      const json& up = cases[k]->c->at("grads").at("upstream");
      if (up.size() != out_counts[k]) throw Mismatch{"outputs and upstream gradients differ in number"};
      for (size_t j = 0; j < out_counts[k]; ++j, ++o) {
        if (up[j].is_null()) continue;
        roots.push_back(outs.at(o));
        ups.push_back(cases[k]->file->tensors.at(up[j].get<std::string>()).clone());
      }
      for (const Tensor& t : inputs[k]) wrt.push_back(t);
    }
    const std::vector<Tensor> got = autograd::grad(roots, wrt, ups, /*retain_graph=*/false, /*allow_unused=*/true);
    size_t at = 0;
    for (size_t k = 0; k < cases.size(); ++k) {
      run.grads.emplace_back(got.begin() + static_cast<std::ptrdiff_t>(at),
                             got.begin() + static_cast<std::ptrdiff_t>(at + inputs[k].size()));
      at += inputs[k].size();
    }
  } catch (const Mismatch& m) {
    run.error = m.what;
  } catch (const std::exception& e) {
    run.error = std::string(compiled ? "compiled: " : "eager: ") + e.what();
  }
  return run;
}

/// Case `index`'s compiled gradients against eager's (an undefined one counts as zeros).
void check_grads(const GradCase& k, const GradRun& compiled, const GradRun& eager, size_t index) {
  if (!eager.error.empty()) throw Mismatch{"eager raised: " + eager.error};
  if (!compiled.error.empty()) throw Mismatch{compiled.error};
  const std::vector<Tensor>& got = compiled.grads.at(index);
  const std::vector<Tensor>& want = eager.grads.at(index);
  const json& ins = k.c->at("grads").at("inputs");
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string what = "gradient of '" + ins[i].at("arg").get<std::string>() + "'";
    if (!want[i].defined() || !got[i].defined()) {
      const Tensor& some = want[i].defined() ? want[i] : got[i];
      if (!some.defined()) continue;
      for (double v : values_of(some))
        if (v != 0) throw Mismatch{what + ": one of compiled and eager gives none, the other a nonzero gradient"};
      continue;
    }
    std::optional<ScalarType> tol;
    if (ins[i].contains("tol_dtype")) tol = dtype_of(ins[i].at("tol_dtype").get<std::string>());
    check_close(got[i], want[i], what, tol);
  }
}

TEST(Conformance, EveryGradientCompiledWithInductorEqualsEager) {
  register_builtin_backends();
  Tally tally("compiled gradients");
  const bool stderr_was = logging::set_stderr_enabled(false);
  const auto start = std::chrono::steady_clock::now();
  const int64_t compiles_before = inductor::compiler_invocations();
  const std::vector<CaseFile> files = load_case_files();
  ASSERT_FALSE(files.empty()) << "no case files in " << EMBER_CASES_DIR;
  std::vector<std::string> order;
  std::map<std::string, std::vector<GradCase>> by_op;
  const std::string only = filter();
  for (const CaseFile& f : files)
    for (const json& c : f.doc.at("cases")) {
      const std::string name = c.at("op").get<std::string>();
      if (!c.contains("grads") || (!only.empty() && name.find(only) == std::string::npos)) continue;
      const ops::OpDef* op = ops::registry().find(name);
      if (!op || !op->derivative) continue;  // as EveryGradientMatchesPyTorch
      if (!by_op.count(name)) order.push_back(name);
      by_op[name].push_back({op, &f, &c});
    }
  int64_t interpreted = 0;
  // Checks `cases` run together; false when the run failed as a whole or ran interpreted.
  auto check_together = [&](const std::vector<const GradCase*>& cases, bool last_resort) {
    const GradRun eager = run_grads(cases, false), compiled = run_grads(cases, true);
    const bool whole = compiled.error.empty() && eager.error.empty();
    if (!last_resort && (!whole || compiled.interpreted)) return false;
    interpreted += compiled.interpreted ? static_cast<int64_t>(cases.size()) : 0;
    for (size_t k = 0; k < cases.size(); ++k) {
      tally.run(cases[k]->op->name, *cases[k]->c, "compiled grad ", [&] {
        if (!whole && cases.size() > 1) throw Mismatch{"the run of its op's cases failed: " + compiled.error};
        check_grads(*cases[k], compiled, eager, k);
      });
    }
    return true;
  };
  for (size_t first = 0; first < order.size(); first += kOpsPerGraph) {
    std::vector<const GradCase*> chunk;
    for (size_t i = first; i < std::min(order.size(), first + kOpsPerGraph); ++i)
      for (const GradCase& k : by_op[order[i]]) chunk.push_back(&k);
    if (check_together(chunk, false)) continue;
    for (size_t i = first; i < std::min(order.size(), first + kOpsPerGraph); ++i) {
      std::vector<const GradCase*> cases;
      for (const GradCase& k : by_op[order[i]]) cases.push_back(&k);
      if (check_together(cases, false)) continue;
      for (const GradCase* k : cases) check_together({k}, true);  // each failure names its case
    }
  }
  logging::set_stderr_enabled(stderr_was);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "compiled gradients conformance: " << inductor::compiler_invocations() - compiles_before
            << " C++ compiles, " << seconds << " s, " << interpreted
            << " cases run in the interpreter (writes AOT autograd does not trace)" << std::endl;
  tally.report();
}

}  // namespace
}  // namespace ember::conformance
