// Conformance: every op against PyTorch. Replays the cases of tests/ops/cases/*.json
// (written by tests/ops/gen_cases.py from torch.ops.aten) through the registry's one
// dispatch path, on CPU (values, with assert_close's tolerances; views: strides, storage
// offset and aliasing) and on the meta device (sizes and dtype), and checks gradients
// against PyTorch's autograd. See docs/testing.md for the file format.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "case_runner.h"
#include "ember/ember.h"
#include "ops/dispatch.h"
#include "ops/registry.h"

namespace ember::conformance {
namespace {

const Tensor* first_tensor_arg(const Stack& args) {
  for (const auto& a : args)
    if (a.is_tensor()) return &a.to_tensor();
  return nullptr;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

/// Random ops: statistics of Ember's sample against PyTorch's distribution.
void check_stat(const Stack& args, const std::vector<std::pair<Tensor, json>>& outs, const json& stat) {
  const std::string kind = stat.at("kind").get<std::string>();
  const Tensor& out = outs.at(0).first;
  const auto v = values_of(out);
  if (v.empty()) return;
  const double m = mean_of(v);
  auto near = [&](double got, const char* name, double want, double tol) {
    if (std::fabs(got - want) > tol) {
      std::ostringstream os;
      os << kind << " " << name << " " << got << ", PyTorch's distribution gives " << want << " (tolerance " << tol
         << ")";
      throw Mismatch{os.str()};
    }
  };
  if (kind == "uniform" || kind == "normal") {
    double var = 0;
    for (double x : v) var += (x - m) * (x - m);
    const double sd = std::sqrt(var / static_cast<double>(v.size() > 1 ? v.size() - 1 : 1));
    if (kind == "uniform") {
      const double lo = stat.at("low").get<double>(), hi = stat.at("high").get<double>();
      for (size_t i = 0; i < v.size(); ++i) {
        const bool upper_ok = is_reduced_float(out.dtype()) ? v[i] <= hi : v[i] < hi;
        if (!(v[i] >= lo && upper_ok)) {
          throw Mismatch{"uniform value " + std::to_string(v[i]) + " at " + index_str(i, out.sizes()) + " outside [" +
                         std::to_string(lo) + ", " + std::to_string(hi) + ")"};
        }
      }
    }
    near(m, "mean", stat.at("mean").get<double>(), stat.at("tol_mean").get<double>());
    near(sd, "std", stat.at("std").get<double>(), stat.at("tol_std").get<double>());
  } else if (kind == "bernoulli") {
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] != 0 && v[i] != 1) throw Mismatch{"bernoulli value " + std::to_string(v[i]) + " is neither 0 nor 1"};
    near(m, "mean", stat.at("mean").get<double>(), stat.at("tol_mean").get<double>());
  } else if (kind == "dropout") {
    const Tensor* input = first_tensor_arg(args);
    if (!input) throw Mismatch{"dropout case without an input tensor"};
    const auto in = values_of(*input);
    const double p = stat.at("p").get<double>();
    const bool train = stat.at("train").get<bool>();
    const double scale = train ? (p == 1 ? 0 : 1 / (1 - p)) : 1;
    std::vector<double> keep(v.size());
    if (outs.size() > 1)
      keep = values_of(outs[1].first);
    else
      for (size_t i = 0; i < v.size(); ++i) keep[i] = v[i] != 0;
    const auto [rtol, atol] = tolerances(out.dtype());
    for (size_t i = 0; i < v.size(); ++i) {
      const double want = keep[i] != 0 ? in[i] * scale : 0;
      if (std::fabs(v[i] - want) > atol + rtol * std::fabs(want) + 1e-7) {
        throw Mismatch{"dropout output " + std::to_string(v[i]) + " at " + index_str(i, out.sizes()) + ", expected " +
                       std::to_string(want) + " (input " + std::to_string(in[i]) + ", kept " + std::to_string(keep[i]) +
                       ")"};
      }
    }
    near(mean_of(keep), "kept fraction", stat.at("keep_mean").get<double>(), stat.at("tol_mean").get<double>());
  } else {
    throw Mismatch{"unknown statistical check '" + kind + "'"};
  }
}

/// Views: an output PyTorch returns as a view of (or as) argument `view_of` must have
/// PyTorch's strides on every dim (size-1 dims too: a later view or a compiled graph
/// recorded by PyTorch reads them) and its storage offset, and (on CPU) share that
/// argument's storage; an output PyTorch returns as a new tensor must share no
/// argument's storage (a write to it would show through the input).
void check_aliasing(const Tensor& actual, const json& e, const ops::OpDef& op, const Stack& args,
                    const std::string& what, bool meta) {
  if (!actual.defined()) return;
  if (e.contains("view_of")) {
    const auto st = e.at("strides").get<std::vector<int64_t>>();
    if (actual.strides() != IntArrayRef(st))
      throw Mismatch{what + ": strides " + shape_str(actual.strides()) + ", PyTorch's view has " + shape_str(st)};
    const auto offset = e.at("storage_offset").get<int64_t>();
    if (actual.storage_offset() != offset) {
      throw Mismatch{what + ": storage offset " + std::to_string(actual.storage_offset()) + ", PyTorch's view has " +
                     std::to_string(offset)};
    }
    if (meta) return;
    const std::string name = e.at("view_of").get<std::string>();
    const int i = op.schema.index_of(name);
    if (i < 0 || !args[static_cast<size_t>(i)].is_tensor())
      throw Mismatch{"view_of names no tensor argument '" + name + "'"};
    if (actual.storage() != args[static_cast<size_t>(i)].to_tensor().storage())
      throw Mismatch{what + ": a new tensor; PyTorch returns a view of argument '" + name + "'"};
    return;
  }
  if (meta || actual.numel() == 0) return;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_tensor() && args[i].to_tensor().defined() && args[i].to_tensor().storage() == actual.storage()) {
      throw Mismatch{what + ": a view of argument '" + op.schema.arguments[i].name + "'; PyTorch returns a new tensor"};
    }
  }
}

/// Runs one case on CPU; throws Mismatch on any difference from PyTorch.
void run_cpu(const CaseFile& f, const ops::OpDef& op, const json& c) {
  Stack args = build_stack(f, op, c, /*meta=*/false);
  const Stack kept = args;  // handles to the inputs, to check in-place writes afterwards
  const json& expect = c.at("expect");
  if (expect.contains("error")) {
    try {
      ops::call(op, args);
    } catch (const InternalError& e) {
      throw Mismatch{"expected a user error (" + expect.at("error").get<std::string>() + ": " +
                     expect.value("message", "") + "), got an internal error: " + e.what()};
    } catch (const Error&) {
      return;
    }
    throw Mismatch{"PyTorch raises " + expect.at("error").get<std::string>() + " (" + expect.value("message", "") +
                   "), Ember returned normally"};
  }
  Stack result;
  try {
    result = ops::call(op, args);
  } catch (const Error& e) {
    throw Mismatch{std::string("raised ") + error_kind_name(e.kind()) + ": " + e.what()};
  }
  const bool values = c.value("values", true) && !expect.contains("stat");
  const bool strides = c.value("check_strides", false);
  auto outs = pair_outputs(result, expect.at("outputs"));
  for (size_t i = 0; i < outs.size(); ++i) {
    check_output(f, outs[i].first, outs[i].second, "output " + std::to_string(i), values, strides);
    check_aliasing(outs[i].first, outs[i].second, op, kept, "output " + std::to_string(i), /*meta=*/false);
  }
  for (const json& m : expect.value("mutated", json::array())) {
    const std::string name = m.at("arg").get<std::string>();
    const int i = op.schema.index_of(name);
    if (i < 0 || !kept[i].is_tensor()) throw Mismatch{"mutated argument '" + name + "' not found"};
    check_output(f, kept[i].to_tensor(), m, "argument '" + name + "' after the call", values, false);
  }
  if (expect.contains("stat")) check_stat(kept, outs, expect.at("stat"));
}

/// Runs one case on meta tensors: the outputs' sizes and dtype (views: strides and
/// storage offset) must match PyTorch's.
void run_meta(const CaseFile& f, const ops::OpDef& op, const json& c) {
  Stack args = build_stack(f, op, c, /*meta=*/true);
  Stack result;
  try {
    result = ops::call(op, args);
  } catch (const Error& e) {
    throw Mismatch{std::string("[meta] raised ") + error_kind_name(e.kind()) + ": " + e.what()};
  }
  for (auto& [t, e] : pair_outputs(result, c.at("expect").at("outputs"))) {
    if (!t.is_meta()) throw Mismatch{"[meta] an output is on " + t.device().str() + ", not meta"};
    check_geometry(t, e, "[meta] output", false);
    check_aliasing(t, e, op, args, "[meta] output", /*meta=*/true);
  }
}

TEST(Conformance, EveryCaseMatchesPyTorch) {
  Tally tally("conformance");
  for_each_case([&](const CaseFile& f, const json& c, const std::string& name) {
    const ops::OpDef* op = ops::registry().find(name);
    tally.run(name, c, "", [&] {
      if (!op) throw Mismatch{"op not registered"};
      run_cpu(f, *op, c);
      if (!c.at("expect").contains("error") && c.value("meta", true)) run_meta(f, *op, c);
    });
  });
  tally.report();
}

TEST(Conformance, EveryRegisteredOpHasCases) {
  std::map<std::string, std::pair<int64_t, std::string>> covered;  // op -> (cases, reason)
  for (const CaseFile& f : load_case_files()) {
    for (auto it = f.doc.at("ops").begin(); it != f.doc.at("ops").end(); ++it) {
      covered[it.key()] = {it->value("cases", int64_t{0}), it->value("reason", "")};
    }
  }
  std::vector<std::string> missing;
  for (const ops::OpDef* op : ops::registry().all()) {
    auto it = covered.find(op->name);
    if (it == covered.end() || (it->second.first == 0 && it->second.second.empty())) missing.push_back(op->name);
  }
  for (const auto& m : missing) std::cout << "no conformance cases (and no reason): " << m << "\n";
  EXPECT_TRUE(missing.empty()) << missing.size() << " registered ops lack conformance cases; add rows to "
                               << "tests/ops/gen_cases.py (or a reason) and regenerate";
}

/// Runs one case's gradients: the same float32/float64 inputs as PyTorch's require grad,
/// the op runs through the dispatcher, autograd::grad takes the stored upstream gradients,
/// and each input's gradient must be PyTorch's (an absent one counts as zeros).
void run_grad(const CaseFile& f, const ops::OpDef& op, const json& c) {
  EnableGradGuard enable;
  Stack args = build_stack(f, op, c, /*meta=*/false);
  const json& g = c.at("grads");
  std::vector<Tensor> inputs;
  for (const json& in : g.at("inputs")) {
    Tensor t = grad_input(op, args, in);
    t.requires_grad_();
    inputs.push_back(t);
  }
  // In-place ops write a clone of their leaf input, as the generator did.
  for (const json& name : g.value("clone_written", json::array())) {
    const int i = op.schema.index_of(name.get<std::string>());
    if (i < 0 || !args[static_cast<size_t>(i)].is_tensor())
      throw Mismatch{"clone_written: no tensor argument " + name.dump()};
    args[static_cast<size_t>(i)] = args[static_cast<size_t>(i)].to_tensor().clone();
  }
  Stack result;
  try {
    result = ops::call(op, args);
  } catch (const Error& e) {
    throw Mismatch{std::string("[grad] forward raised ") + error_kind_name(e.kind()) + ": " + e.what()};
  }
  std::vector<Tensor> flat;
  for (const IValue& r : result) {
    if (r.is_tensor_list()) {
      for (const Tensor& t : r.to_tensor_list()) flat.push_back(t);
    } else if (r.is_tensor()) {
      flat.push_back(r.to_tensor());
    }
  }
  const json& up = g.at("upstream");
  if (up.size() != flat.size()) {
    throw Mismatch{"[grad] " + std::to_string(flat.size()) + " outputs, PyTorch has " + std::to_string(up.size())};
  }
  std::vector<Tensor> outs, ups;
  for (size_t k = 0; k < flat.size(); ++k) {
    if (up[k].is_null()) continue;
    outs.push_back(flat[k]);
    ups.push_back(f.tensors.at(up[k].get<std::string>()).clone());
  }
  std::vector<Tensor> got;
  try {
    got = autograd::grad(outs, inputs, ups, /*retain_graph=*/false, /*allow_unused=*/true);
  } catch (const Error& e) {
    throw Mismatch{std::string("[grad] autograd::grad raised ") + error_kind_name(e.kind()) + ": " + e.what()};
  }
  if (got.size() != inputs.size()) throw Mismatch{"[grad] autograd::grad returned the wrong number of gradients"};
  for (size_t k = 0; k < inputs.size(); ++k) {
    const json& in = g.at("inputs")[k];
    const std::string what = "gradient of '" + in.at("arg").get<std::string>() +
                             (in.contains("index") ? "'[" + std::to_string(in.at("index").get<int64_t>()) + "]" : "'");
    if (in.at("ref").is_null()) {
      if (got[k].defined()) {
        for (double v : values_of(got[k]))
          if (v != 0) throw Mismatch{what + ": PyTorch gives none (unused input), Ember a nonzero gradient"};
      }
      continue;
    }
    const Tensor& expected = f.tensors.at(in.at("ref").get<std::string>());
    if (!got[k].defined()) {
      for (double v : values_of(expected))
        if (v != 0) throw Mismatch{what + ": Ember gives none, PyTorch a nonzero gradient"};
      continue;
    }
    if (got[k].dtype() != expected.dtype()) {
      throw Mismatch{what + ": dtype " + std::string(dtype_name(got[k].dtype())) + ", expected " +
                     std::string(dtype_name(expected.dtype()))};
    }
    if (got[k].sizes() != expected.sizes()) {
      throw Mismatch{what + ": shape " + shape_str(got[k].sizes()) + ", expected " + shape_str(expected.sizes())};
    }
    // tol_dtype: the gradient was computed in a lower precision than the input's (the
    // case's grads.tol_reason says why).
    std::optional<ScalarType> tol;
    if (in.contains("tol_dtype")) tol = dtype_of(in.at("tol_dtype").get<std::string>());
    check_close(got[k], expected, what, tol);
  }
}

TEST(Conformance, EveryGradientMatchesPyTorch) {
  Tally tally("gradients");
  for_each_case([&](const CaseFile& f, const json& c, const std::string& name) {
    if (!c.contains("grads")) return;
    const ops::OpDef* op = ops::registry().find(name);
    // Composite ops (the losses) differentiate through the ops they decompose into.
    if (!op || !(op->derivative || op->decomposition)) return;  // no formula in Ember: not counted
    tally.run(name, c, "grad ", [&] { run_grad(f, *op, c); });
  });
  tally.report();
}

// --- every op inside a compiled graph ---------------------------------------------------

TEST(Conformance, EveryDifferentiableOpHasGradientCases) {
  std::map<std::string, std::pair<int64_t, std::string>> covered;  // op -> (gradient cases, reason)
  for (const CaseFile& f : load_case_files()) {
    for (auto it = f.doc.at("ops").begin(); it != f.doc.at("ops").end(); ++it) {
      covered[it.key()] = {it->value("grad_cases", int64_t{0}), it->value("grads_reason", "")};
    }
  }
  std::vector<std::string> missing;
  for (const ops::OpDef* op : ops::registry().all()) {
    if (!op->derivative) continue;
    auto it = covered.find(op->name);
    if (it == covered.end() || (it->second.first == 0 && it->second.second.empty())) missing.push_back(op->name);
  }
  for (const auto& m : missing) std::cout << "derivative formula without gradient cases (and no reason): " << m << "\n";
  EXPECT_TRUE(missing.empty()) << missing.size() << " ops with a derivative formula lack gradient cases; give them "
                               << "float32/float64 ok samples in tests/ops/gen_cases.py (or a grads_reason)";
}

}  // namespace
}  // namespace ember::conformance
