// bench/compare.h — compiled against eager for the benchmark programs: a row's output,
// W7's gradients and the state a W8/W9 step leaves, group by group, each element within
// its group's tolerance (bench_inductor_workloads on the CPU, bench_cuda_inductor_workloads
// on cuda:0).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "workloads.h"

namespace ember::bench {

// The tolerance of tests/e2e/workloads_compiled_test.cpp (why: see there).
constexpr double kAtol = 1e-4, kRtol = 1e-4;

/// The largest |a - e| and whether every element is within tolerance.atol_for(e) + kRtol * |e|
/// (NaN fails).
struct Diff {
  double max_abs = 0;
  bool close = true;
};

inline Diff compare(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected,
                    const CheckedTensors& tolerance) {
  NoGradGuard no_grad;
  Diff d;
  if (actual.size() != expected.size()) return {INFINITY, false};
  for (size_t i = 0; i < actual.size(); ++i) {
    const Tensor& a = actual[i];
    const Tensor& e = expected[i];
    if (a.defined() != e.defined()) return {INFINITY, false};
    if (!a.defined()) continue;
    if (a.sizes().vec() != e.sizes().vec()) return {INFINITY, false};
    const Tensor err = (a - e).abs();
    d.max_abs = std::max(d.max_abs, max(err).item<double>());
    // max() propagates NaN, so a NaN anywhere fails the comparison.
    const double excess = max(err - (e.abs() * kRtol + tolerance.atol_for(e))).item<double>();
    if (!(excess <= 0)) d.close = false;
  }
  if (std::isnan(d.max_abs)) d.close = false;
  return d;
}

/// What a row compares, compiled against eager: its output, then W7's gradients, then the
/// state a W8/W9 step leaves (each side's own copy).
inline std::vector<CheckedTensors> results_of(const Workload& w, const Tensor& out, const StepState& state) {
  std::vector<CheckedTensors> r{{w.training ? "loss or output" : "output", {out}, kAtol}};
  if (w.grads) r.push_back({"gradients", w.grads(), kAtol});
  if (state)
    for (auto& group : state()) r.push_back(std::move(group));
  return r;
}

/// The largest difference over every group, whether all are close, and the groups that are not.
inline Diff compare_groups(const std::vector<CheckedTensors>& actual, const std::vector<CheckedTensors>& expected,
                           std::string* failed) {
  Diff all;
  if (actual.size() != expected.size()) return {INFINITY, false};
  for (size_t i = 0; i < actual.size(); ++i) {
    const Diff d = compare(actual[i].tensors, expected[i].tensors, expected[i]);
    all.max_abs = std::max(all.max_abs, d.max_abs);
    if (!d.close) {
      all.close = false;
      *failed += (failed->empty() ? "" : ", ") + expected[i].what;
    }
  }
  return all;
}

}  // namespace ember::bench
