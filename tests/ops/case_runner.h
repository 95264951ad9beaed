// tests/ops/case_runner.h — what the conformance tests share: reading the case files
// tests/ops/gen_cases.py writes, rebuilding a case's arguments (PyTorch's geometry through
// Ember's view ops) on a device, assert_close-style comparisons, running one case or its
// gradients against PyTorch's results, and the tally that prints one line per failing
// case and the summary. test_conformance reads tests/ops/cases/ (PyTorch on the CPU),
// test_cuda_conformance tests/ops/cases_cuda/ (PyTorch on CUDA). See docs/testing.md.
#pragma once

#include <gtest/gtest.h>

#include <complex>
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

/// Every case file under `dir`, sorted by name.
std::vector<CaseFile> load_case_files(const std::string& dir);
/// Every case file under EMBER_CASES_DIR.
inline std::vector<CaseFile> load_case_files() { return load_case_files(EMBER_CASES_DIR); }

/// A failed check; thrown inside one case and reported with the case's id.
struct Mismatch {
  std::string what;
};

/// The case needs an op that has no kernel for the device it runs on (a part of a
/// composite, a backward op): thrown inside one case, which the tally counts as skipped.
struct NoKernel {
  std::string op;
};

ScalarType dtype_of(const std::string& name);

/// Arguments in the order of Ember's schema; omitted ones take the schema's default. Each
/// tensor is a fresh copy of the stored base on `device` with the recorded view
/// transforms applied (on meta: a meta tensor of its sizes). A Device argument the case
/// gives becomes `device` (on meta, factories get device=meta when the case gives none).
Stack build_stack(const CaseFile& f, const ops::OpDef& op, const json& c, Device device);
inline Stack build_stack(const CaseFile& f, const ops::OpDef& op, const json& c, bool meta) {
  return build_stack(f, op, c, meta ? Device(kMeta) : Device(kCPU));
}

/// Element i (row-major) of any tensor (a CUDA one is copied to the host), as double; a
/// complex tensor's real and imaginary parts interleaved (2 values per element).
std::vector<double> values_of(const Tensor& t);
using Complex = std::complex<double>;
/// assert_close on complex values (torch.isclose): |a - e| <= atol + rtol * |e| on the
/// modulus; NaN (in either part) equals NaN.
bool complex_close(Complex a, Complex e, double rtol, double atol);
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

/// Views: an output PyTorch returns as a view of (or as) argument `view_of` must have
/// PyTorch's strides and storage offset and (off meta) share that argument's storage; an
/// output PyTorch returns as a new tensor must share no argument's storage.
void check_aliasing(const Tensor& actual, const json& e, const ops::OpDef& op, const Stack& args,
                    const std::string& what, bool meta);
/// Random ops: statistics of Ember's sample against PyTorch's distribution.
void check_stat(const Stack& args, const std::vector<std::pair<Tensor, json>>& outs, const json& stat);

/// What running a case left: the arguments as passed (handles to the inputs, showing
/// in-place writes) and the result (empty when the case expects an error).
struct CaseRun {
  Stack args;
  Stack result;
};
/// Runs one case on `device` and checks it against PyTorch's recorded results: an error
/// where PyTorch raised, else each output's dtype, sizes and values (assert_close), views'
/// geometry and aliasing, written arguments and random ops' statistics; an output entry
/// that names a device (cases from a device) must be on that device type. Throws
/// Mismatch, or NoKernel when an op the call reaches has no kernel for `device`.
CaseRun run_case(const CaseFile& f, const ops::OpDef& op, const json& c, Device device);
/// Runs one case's gradients on `device`: the same float32/float64 inputs as PyTorch's
/// require grad, the op runs through the dispatcher, autograd::grad takes the stored
/// upstream gradients, and each input's gradient must be PyTorch's (an absent one counts
/// as zeros) and on `device`. Throws Mismatch or NoKernel.
void run_grad(const CaseFile& f, const ops::OpDef& op, const json& c, Device device);

/// A stack's tensors (Tensor, Tensor[] and Tensor?[] arguments, in order) and how to put
/// others in their places: what the compiled replays pass to a compiled function.
struct TensorSlots {
  std::vector<Tensor> tensors;
  explicit TensorSlots(const Stack& s);
  /// `s` with its tensors replaced by ts[first], ts[first + 1], … in order.
  static Stack with(Stack s, const std::vector<Tensor>& ts, size_t first = 0);
};

/// The tensors of a result, in order (lists flattened; None skipped); nullopt when it
/// holds a value of another kind.
std::optional<std::vector<Tensor>> result_tensors(const Stack& r);

/// The body of a traced form holding several cases in one graph: `op` called on each of
/// `stacks` in turn, stack k's tensor slots taken in order from `ts` (`num_inputs[k]` of
/// them); `out_counts[k]` gets stack k's number of outputs. Returns every output in order.
std::vector<Tensor> call_each(const ops::OpDef& op, const std::vector<const Stack*>& stacks,
                              const std::vector<size_t>& num_inputs, const std::vector<Tensor>& ts,
                              std::vector<size_t>& out_counts);

/// A compiled result `got` against eager's `want`: sizes, dtype, (with `strides`) the
/// strides of dims larger than 1, and (with `values`) values within the dtype's
/// assert_close tolerances (NaN where NaN). Throws Mismatch naming `what`.
void check_same(const Tensor& got, const Tensor& want, const std::string& what, bool values, bool strides = false);

/// Every case of every op whose name matches EMBER_CONFORMANCE_FILTER, grouped by op in
/// the order the files first name them (pointing into `files`).
using CasesOfOp = std::pair<std::string, std::vector<std::pair<const CaseFile*, const json*>>>;
std::vector<CasesOfOp> cases_by_op(const std::vector<CaseFile>& files);
/// Whether eager Ember runs case `c` and returns tensors (the compiled replays compare only
/// those; the eager test reports the others).
bool runs_eagerly(const CaseFile& f, const ops::OpDef& op, const json& c);

/// EMBER_CONFORMANCE_FILTER: only ops whose name contains it ("" for all).
std::string filter();

/// Counts the ops and cases a test ran and reports each failing case on one line.
/// Whether EMBER_CONFORMANCE_TRACE is set: every replay then prints each case's id before
/// running it (flushed), so a case that crashes the process is named by the last line.
bool trace_cases();

struct Tally {
  explicit Tally(const char* l) : label(l) {}
  const char* label;  // "conformance", "gradients", "compiled", "cuda conformance", …
  std::set<std::string> ops;
  int64_t cases = 0, failed = 0;
  /// Cases skipped because an op they reach has no kernel for their device, per that op.
  std::map<std::string, int64_t> skipped;

  /// Runs `check` for one case, counting it and reporting what went wrong (a NoKernel
  /// case is counted in `skipped` only).
  template <typename F>
  void run(const std::string& op, const json& c, const char* prefix, F&& check) {
    if (trace_cases()) std::cout << "RUN " << prefix << c.at("id").get<std::string>() << " [" << op << "]" << std::endl;
    try {
      check();
    } catch (const NoKernel& k) {
      ++skipped[k.op];
      return;
    } catch (const Mismatch& m) {
      fail(op, c, prefix, m.what);
    } catch (const std::exception& e) {
      fail(op, c, prefix, std::string("harness error: ") + e.what());
    }
    ops.insert(op);
    ++cases;
  }
  void fail(const std::string& op, const json& c, const char* prefix, const std::string& why);
  /// Prints `<label>: <ops> ops, <cases> cases, <failed> failed` (and the skipped cases,
  /// per missing kernel) and expects no failure.
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
