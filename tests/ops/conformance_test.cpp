// Conformance: every op against PyTorch. Replays the cases of tests/ops/cases/*.json
// (written by tests/ops/gen_cases.py from torch.ops.aten) through the registry's one
// dispatch path, on CPU (values, with assert_close's tolerances; views: strides, storage
// offset and aliasing) and on the meta device (sizes and dtype), and checks gradients
// against PyTorch's autograd. See docs/testing.md for the file format.
#include <gtest/gtest.h>

#include "case_runner.h"
#include "ember/ember.h"
#include "ops/dispatch.h"
#include "ops/registry.h"

namespace ember::conformance {
namespace {

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
      run_case(f, *op, c, kCPU);
      if (!c.at("expect").contains("error") && c.value("meta", true)) run_meta(f, *op, c);
    });
  });
  tally.report();
}

TEST(Conformance, EveryRegisteredOpHasCases) {
  std::map<std::string, std::pair<int64_t, std::string>> covered;  // op -> (cases, reason)
  for (const CaseFile& f : load_case_files()) {
    for (auto it = f.doc.at("ops").begin(); it != f.doc.at("ops").end(); ++it) {
      // An op may have cases in several families (complex_ops adds complex samples of
      // pointwise ops): its cases add up, and any family's reason counts.
      auto& [cases, reason] = covered[it.key()];
      cases += it->value("cases", int64_t{0});
      if (reason.empty()) reason = it->value("reason", "");
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

TEST(Conformance, EveryGradientMatchesPyTorch) {
  Tally tally("gradients");
  for_each_case([&](const CaseFile& f, const json& c, const std::string& name) {
    if (!c.contains("grads")) return;
    const ops::OpDef* op = ops::registry().find(name);
    // Composite ops (the losses) differentiate through the ops they decompose into.
    if (!op || !(op->derivative || op->decomposition)) return;  // no formula in Ember: not counted
    tally.run(name, c, "grad ", [&] { run_grad(f, *op, c, kCPU); });
  });
  tally.report();
}

// --- every op inside a compiled graph ---------------------------------------------------

TEST(Conformance, EveryDifferentiableOpHasGradientCases) {
  std::map<std::string, std::pair<int64_t, std::string>> covered;  // op -> (gradient cases, reason)
  for (const CaseFile& f : load_case_files()) {
    for (auto it = f.doc.at("ops").begin(); it != f.doc.at("ops").end(); ++it) {
      auto& [cases, reason] = covered[it.key()];  // summed over families, as above
      cases += it->value("grad_cases", int64_t{0});
      if (reason.empty()) reason = it->value("grads_reason", "");
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
