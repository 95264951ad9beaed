// Compiled conformance: every case of every op that eager Ember runs (every overload, every
// argument combination the case files cover) run through the inductor backend, against
// the same calls made eagerly. Per op, two compiles whose graphs hold all of its cases side
// by side (independent subgraphs, one C++ translation unit each):
//   - graph:  a graph built as a parsed repro or an imported program names it: one call of
//             the op itself (its exact overload, every argument as the case gives it) per
//             case, its outputs recorded with PyTorch's geometry, and each view output read
//             again by a kernel (a clone), so kernels meet PyTorch's strides;
//   - traced: ember::compile of a function making every case's call through the dispatcher
//             (what capture records: composite ops decomposed, in-place ops functionalized).
// Cases PyTorch rejects must raise an ember::Error (not an internal error) in a compiled
// function too; they fail while tracing, so they cost no C++ compile. See docs/testing.md.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <sstream>

#include "case_runner.h"
#include "ember/compile.h"
#include "ember/ember.h"
#include "ember/graph.h"
#include "ember/logging.h"
#include "inductor/inductor.h"
#include "ops/dispatch.h"
#include "ops/registry.h"

namespace ember::conformance {
namespace {

/// One case of the op under test, as both compiled forms run it.
struct Case {
  const CaseFile* file = nullptr;
  const json* c = nullptr;
  size_t num_inputs = 0;  // its tensors (TensorSlots order)
  /// Eager's results: the outputs (flattened), and the inputs after the call.
  std::vector<Tensor> want, inputs_after;
};

/// What one compiled run gave: per case, its outputs and inputs afterwards; or the error
/// that stopped the whole run.
struct RunResult {
  std::string error;
  std::vector<std::vector<Tensor>> outputs, inputs_after;
};

constexpr uint64_t kSeed = 7;

/// Fresh inputs of `cases` (each case's tensors in TensorSlots order, concatenated), and
/// the stacks they fill.
std::vector<Tensor> fresh_inputs(const ops::OpDef& op, const std::vector<Case*>& cases, std::vector<Stack>& stacks) {
  std::vector<Tensor> ts;
  stacks.clear();
  for (const Case* k : cases) {
    stacks.push_back(build_stack(*k->file, op, *k->c, /*meta=*/false));
    for (const Tensor& t : TensorSlots(stacks.back()).tensors) ts.push_back(t);
  }
  return ts;
}

/// Splits a run's flat outputs and inputs into cases.
RunResult split(const std::vector<Case*>& cases, const std::vector<Tensor>& outs, const std::vector<Tensor>& ins,
                const std::vector<size_t>& out_counts) {
  RunResult r;
  size_t o = 0, i = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    r.outputs.emplace_back(outs.begin() + static_cast<std::ptrdiff_t>(o),
                           outs.begin() + static_cast<std::ptrdiff_t>(o + out_counts[k]));
    r.inputs_after.emplace_back(ins.begin() + static_cast<std::ptrdiff_t>(i),
                                ins.begin() + static_cast<std::ptrdiff_t>(i + cases[k]->num_inputs));
    o += out_counts[k];
    i += cases[k]->num_inputs;
  }
  return r;
}

/// A case's expected output entries, lists flattened (None entries kept).
std::vector<json> flat_outputs(const json& c) {
  std::vector<json> out;
  for (const json& e : c.at("expect").at("outputs")) {
    if (e.contains("list"))
      for (const json& x : e.at("list")) out.push_back(x);
    else
      out.push_back(e);
  }
  return out;
}

/// PyTorch's geometry of an expected output entry (a CPU tensor; undefined for None).
TensorMeta recorded_meta(const json& e) {
  TensorMeta m;
  if (e.value("none", false)) {
    m.undefined = true;
    return m;
  }
  m.sizes = e.at("shape").get<std::vector<int64_t>>();
  m.strides = e.at("strides").get<std::vector<int64_t>>();
  m.dtype = dtype_of(e.at("dtype").get<std::string>());
  m.storage_offset = e.value("storage_offset", int64_t{0});
  return m;
}

/// The graph form: per case, placeholders for its tensors and one call of the op (named
/// by its overload) whose outputs carry PyTorch's recorded geometry; a view output is also
/// cloned, so a generated kernel reads it through those strides. Run by the "inductor"
/// backend. The clones' values are eager's outputs again.
RunResult run_graph_form(const ops::OpDef& op, const std::vector<Case*>& cases) {
  std::vector<Stack> stacks;
  const std::vector<Tensor> inputs = fresh_inputs(op, cases, stacks);
  Graph g("conformance");
  std::vector<ValueRef> outputs;
  std::vector<size_t> out_counts;
  const ops::OpDef& clone = ops::registry().get("aten::clone");
  for (size_t k = 0; k < cases.size(); ++k) {
    std::vector<Arg> args;
    auto placeholder = [&](const Tensor& t) {
      const TensorMeta m{t.sizes().vec(), t.strides().vec(), t.dtype(), t.device(), t.storage_offset()};
      return g.add_placeholder("c" + std::to_string(k), m)->out();
    };
    for (const IValue& v : stacks[k]) {
      if (v.is_tensor()) {
        args.push_back(Arg::of_value(placeholder(v.to_tensor())));
      } else if (v.is_tensor_list() || v.is_optional_tensor_list()) {
        std::vector<std::optional<ValueRef>> refs;
        if (v.is_tensor_list())
          for (const Tensor& t : v.to_tensor_list()) refs.emplace_back(placeholder(t));
        else
          for (const auto& t : v.to_optional_tensor_list())
            refs.push_back(t ? std::optional<ValueRef>(placeholder(*t)) : std::nullopt);
        args.push_back(Arg::of_values(std::move(refs)));
      } else {
        args.push_back(Arg::of_literal(v));
      }
    }
    std::vector<TensorMeta> metas;
    std::vector<bool> is_view;
    for (const json& x : flat_outputs(*cases[k]->c)) {
      metas.push_back(recorded_meta(x));
      is_view.push_back(x.contains("view_of"));
    }
    Node* n = g.add_call(op, std::move(args), metas);
    size_t count = 0;
    for (size_t j = 0; j < metas.size(); ++j) {
      if (metas[j].undefined) continue;
      outputs.push_back(n->out(static_cast<uint32_t>(j)));
      ++count;
    }
    for (size_t j = 0; j < metas.size(); ++j) {
      if (metas[j].undefined || !is_view[j]) continue;
      TensorMeta dense = metas[j];
      dense.storage_offset = 0;
      dense.strides.assign(dense.sizes.size(), 1);
      for (size_t d = dense.sizes.size(); d-- > 1;)
        dense.strides[d - 1] = dense.strides[d] * std::max<int64_t>(dense.sizes[d], 1);
      Node* c =
          g.add_call(clone, {Arg::of_value(n->out(static_cast<uint32_t>(j))), Arg::of_literal(IValue())}, {dense});
      outputs.push_back(c->out());
      ++count;
    }
    out_counts.push_back(count);
  }
  g.set_output(outputs);
  std::vector<Tensor> examples;
  for (const Tensor& t : inputs) examples.push_back(t.clone());
  try {
    const CompiledGraph run = lookup_backend("inductor")(g, examples);
    manual_seed(kSeed);
    return split(cases, run(inputs), inputs, out_counts);
  } catch (const std::exception& e) {
    return RunResult{std::string("[graph] raised: ") + e.what(), {}, {}};
  }
}

/// The traced form: ember::compile of one function making every case's call.
RunResult run_traced_form(const ops::OpDef& op, const std::vector<Case*>& cases) {
  std::vector<Stack> stacks;
  const std::vector<Tensor> inputs = fresh_inputs(op, cases, stacks);
  std::vector<size_t> out_counts(cases.size(), 0);
  std::vector<const Stack*> stack_ptrs;
  std::vector<size_t> num_inputs;
  for (size_t k = 0; k < cases.size(); ++k) {
    stack_ptrs.push_back(&stacks[k]);
    num_inputs.push_back(cases[k]->num_inputs);
  }
  auto fn = [&](const std::vector<Tensor>& ts) { return call_each(op, stack_ptrs, num_inputs, ts, out_counts); };
  try {
    auto compiled = compile(fn, {.backend = "inductor", .name = "conformance"});
    manual_seed(kSeed);
    const std::vector<Tensor> outs = compiled(inputs);
    return split(cases, outs, inputs, out_counts);
  } catch (const std::exception& e) {
    return RunResult{std::string("[traced] raised: ") + e.what(), {}, {}};
  }
}

/// Case k of a run against eager's results: outputs (the graph form's clones of view
/// outputs against the views themselves) and inputs afterwards.
void check_case(const Case& k, const RunResult& r, size_t index, const char* form) {
  if (!r.error.empty()) throw Mismatch{r.error};
  const std::vector<Tensor>& got = r.outputs.at(index);
  std::vector<Tensor> want = k.want;
  if (got.size() > want.size()) {  // the graph form's clones, one per view output, in order
    size_t j = 0;
    for (const json& x : flat_outputs(*k.c)) {
      if (x.value("none", false)) continue;
      if (x.contains("view_of")) want.push_back(k.want.at(j));
      ++j;
    }
  }
  if (got.size() != want.size())
    throw Mismatch{std::string(form) + ": " + std::to_string(got.size()) + " outputs, eager " +
                   std::to_string(want.size())};
  const bool values = k.c->value("values", true);
  for (size_t i = 0; i < got.size(); ++i)
    check_same(got[i], want[i], std::string(form) + " output " + std::to_string(i), values);
  for (size_t i = 0; i < k.inputs_after.size(); ++i)
    check_same(r.inputs_after.at(index).at(i), k.inputs_after[i],
               std::string(form) + ": input " + std::to_string(i) + " after the call", true);
}

/// Case `index` of a run.
struct CaseRun {
  std::shared_ptr<const RunResult> run;
  size_t index = 0;
};

/// Runs `form` over all `cases` at once; when that fails as a whole (a compile or run
/// error), over each case alone, so each failure names its case.
template <typename Form>
std::vector<CaseRun> run_form(Form form, const ops::OpDef& op, const std::vector<Case*>& cases) {
  auto all = std::make_shared<const RunResult>(form(op, cases));
  std::vector<CaseRun> per_case;
  if (all->error.empty() || cases.size() == 1) {
    for (size_t k = 0; k < cases.size(); ++k) per_case.push_back({all, k});
    return per_case;
  }
  for (Case* k : cases) per_case.push_back({std::make_shared<const RunResult>(form(op, {k})), 0});
  return per_case;
}

/// A case PyTorch rejects: the call inside a compiled function must raise an ember::Error
/// that is not an internal error (in the trace, from the op's meta function, or at run time).
void check_error_case(const CaseFile& f, const ops::OpDef& op, const json& c) {
  const Stack args = build_stack(f, op, c, /*meta=*/false);
  auto fn = [&](const std::vector<Tensor>& ts) {
    std::optional<std::vector<Tensor>> r = result_tensors(ops::call(op, TensorSlots::with(args, ts)));
    return r ? *r : std::vector<Tensor>{};
  };
  auto compiled = compile(fn, {.backend = "inductor", .name = "conformance_error"});
  try {
    compiled(TensorSlots(args).tensors);
  } catch (const InternalError& e) {
    throw Mismatch{std::string("compiled: expected a user error, got an internal error: ") + e.what()};
  } catch (const Error&) {
    return;
  }
  throw Mismatch{"compiled: PyTorch raises " + c.at("expect").at("error").get<std::string>() + " (" +
                 c.at("expect").value("message", "") + "), the compiled function returned normally"};
}

TEST(Conformance, EveryOpCompiledWithInductorEqualsEager) {
  register_builtin_backends();
  Tally tally("compiled");
  // Graph breaks (nonzero) are expected here; their WARNING lines would only be noise.
  const bool stderr_was = logging::set_stderr_enabled(false);
  const auto start = std::chrono::steady_clock::now();
  const int64_t compiles_before = inductor::compiler_invocations();
  const std::vector<CaseFile> files = load_case_files();  // the cases point into it
  ASSERT_FALSE(files.empty()) << "no case files in " << EMBER_CASES_DIR;
  for (const auto& [name, entries] : cases_by_op(files)) {
    const ops::OpDef* op = ops::registry().find(name);
    if (!op) continue;  // the eager test reports it
    std::vector<Case> cases;
    for (const auto& [f, c] : entries) {
      if (c->at("expect").contains("error")) {
        tally.run(name, *c, "compiled ", [&] { check_error_case(*f, *op, *c); });
        continue;
      }
      if (!runs_eagerly(*f, *op, *c)) continue;
      Case k;
      k.file = f;
      k.c = c;
      k.num_inputs = TensorSlots(build_stack(*f, *op, *c, /*meta=*/false)).tensors.size();
      cases.push_back(std::move(k));
    }
    if (cases.empty()) continue;
    // Eager's results, drawing random numbers in the order the compiled forms do.
    manual_seed(kSeed);
    for (Case& k : cases) {
      Stack args = build_stack(*k.file, *op, *k.c, /*meta=*/false);
      k.want = *result_tensors(ops::call(*op, args));
      k.inputs_after = TensorSlots(args).tensors;
    }
    std::vector<Case*> all;
    for (Case& k : cases) all.push_back(&k);
    const auto graph = run_form(run_graph_form, *op, all);
    const auto traced = run_form(run_traced_form, *op, all);
    for (size_t k = 0; k < cases.size(); ++k) {
      tally.run(name, *cases[k].c, "compiled ", [&] {
        check_case(cases[k], *graph[k].run, graph[k].index, "[graph]");
        check_case(cases[k], *traced[k].run, traced[k].index, "[traced]");
      });
    }
  }
  logging::set_stderr_enabled(stderr_was);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "compiled conformance: " << inductor::compiler_invocations() - compiles_before << " C++ compiles, "
            << seconds << " s" << std::endl;
  tally.report();
}

}  // namespace
}  // namespace ember::conformance
