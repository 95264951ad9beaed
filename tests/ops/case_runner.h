// tests/ops/case_runner.h — what the conformance tests share: reading the case files
// tests/ops/gen_cases.py writes, rebuilding a case's arguments (PyTorch's geometry through
// Ember's view ops), assert_close-style comparisons, and the tally that prints one line
// per failing case and the summary. See docs/testing.md.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"
#include "ops/registry.h"

namespace ember::conformance {

using nlohmann::json;

/// One family's cases (<family>.json) and tensors (<family>.safetensors).
struct CaseFile {
  std::string family;
  json doc;
  std::map<std::string, Tensor> tensors;
};

/// Every case file under EMBER_CASES_DIR, sorted by name.
std::vector<CaseFile> load_case_files();

/// A failed check; thrown inside one case and reported with the case's id.
struct Mismatch {
  std::string what;
};

ScalarType dtype_of(const std::string& name);

/// Arguments in the order of Ember's schema; omitted ones take the schema's default. Each
/// tensor is a fresh copy of the stored base with the recorded view transforms applied
/// (on `meta`: a meta tensor of its sizes, and factories get device=meta).
Stack build_stack(const CaseFile& f, const ops::OpDef& op, const json& c, bool meta);

/// Element i (row-major) of any tensor, as double.
std::vector<double> values_of(const Tensor& t);
std::string shape_str(IntArrayRef s);
/// The multi-index of row-major element `flat` of `sizes`, as text.
std::string index_str(size_t flat, IntArrayRef sizes);
/// PyTorch's default assert_close tolerances (rtol, atol) for a dtype.
std::pair<double, double> tolerances(ScalarType t);

/// Sizes and dtype of `actual` against an expected output entry; with `strides`, the
/// strides of dims larger than 1 too.
void check_geometry(const Tensor& actual, const json& e, const std::string& what, bool strides);
/// assert_close: same dtype and shape; |a - e| <= atol + rtol * |e| (exact for integers
/// and bool); NaN equals NaN; infinities must match exactly.
void check_close(const Tensor& actual, const Tensor& expected, const std::string& what,
                 std::optional<ScalarType> tol_dtype = std::nullopt);
void check_output(const CaseFile& f, const Tensor& actual, const json& e, const std::string& what, bool values,
                  bool strides);
/// Flattens an op's result to the tensors matching the expected outputs, in order.
std::vector<std::pair<Tensor, json>> pair_outputs(const Stack& result, const json& expected);

/// The input a recorded gradient belongs to (an entry of a case's grads.inputs): argument
/// `arg` of `args`, element `index` of a list.
Tensor grad_input(const ops::OpDef& op, const Stack& args, const json& in);

/// EMBER_CONFORMANCE_FILTER: only ops whose name contains it ("" for all).
std::string filter();

/// Counts the ops and cases a test ran and reports each failing case on one line.
struct Tally {
  explicit Tally(const char* l) : label(l) {}
  const char* label;  // "conformance", "gradients" or "compiled"
  std::set<std::string> ops;
  int64_t cases = 0, failed = 0;

  /// Runs `check` for one case, counting it and reporting what went wrong.
  template <typename F>
  void run(const std::string& op, const json& c, const char* prefix, F&& check) {
    ops.insert(op);
    ++cases;
    try {
      check();
    } catch (const Mismatch& m) {
      fail(op, c, prefix, m.what);
    } catch (const std::exception& e) {
      fail(op, c, prefix, std::string("harness error: ") + e.what());
    }
  }
  void fail(const std::string& op, const json& c, const char* prefix, const std::string& why);
  /// Prints `<label>: <ops> ops, <cases> cases, <failed> failed` and expects no failure.
  void report() const;
};

/// Calls f(file, case, op name) for every case whose op matches EMBER_CONFORMANCE_FILTER.
template <typename F>
void for_each_case(F&& f) {
  const auto files = load_case_files();
  ASSERT_FALSE(files.empty()) << "no case files in " << EMBER_CASES_DIR;
  const std::string only = filter();
  for (const CaseFile& file : files) {
    for (const json& c : file.doc.at("cases")) {
      const std::string name = c.at("op").get<std::string>();
      if (only.empty() || name.find(only) != std::string::npos) f(file, c, name);
    }
  }
}

}  // namespace ember::conformance
