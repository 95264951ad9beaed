// debug/bisect.h — the compiler bisector (PyTorch's CompilerBisector): given a failing graph,
// the first place in the compiler stack where its failure appears. First the backends in
// order (eager, aot_eager, inductor: the first that fails); then, within the inductor, each
// subsystem (graph passes, lowerings, fusions) disabled whole, and the first whose
// disabling removes the failure bisected by count to the decision that brings it in. See
// Note [minifier] (docs/notes/minifier.md), "The compiler bisector".
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "debug/repro.h"

namespace ember::debug {

struct BisectOptions {
  /// The backend whose failure is chased; the backends tried are those before it in
  /// eager → aot_eager → inductor (for `inductor_inner`: eager → inductor_inner; for any
  /// other backend, custom ones included: eager → it).
  std::string backend = "inductor";
  /// Compare with eager against an fp64 reference (same()) after each run.
  bool accuracy = false;
  double tolerance = 1e-3;
  /// The failure to chase (a launcher's); when unset, the first failure a backend shows.
  /// A run that fails differently counts as not failing (as in the minifier).
  std::optional<Failure> target;
  /// One line per run and per conclusion (default: stderr).
  std::function<void(const std::string&)> progress;
};

struct BisectResult {
  /// Whether some backend shows the failure. When false, nothing below is set.
  bool failed = false;
  /// The failure chased.
  std::optional<Failure> failure;
  /// The first backend that fails, and the one before it (which passes; "" for eager).
  std::string backend;
  std::string last_passing;
  /// The subsystem of that backend whose `decision`-th decision brings the failure in
  /// ("lowerings"), or "" when it is the backend as a whole: one that made no decision of
  /// the inductor's (it does not run the inductor's steps, or they had nothing to do), or
  /// one where no subsystem's disabling removes the failure.
  std::string subsystem;
  /// The knob that limits the subsystem ("inductor.bisect_max_lowerings"); with it set to
  /// `decision - 1` the graph passes, with `decision` it fails.
  std::string knob;
  int64_t decision = 0;
  /// One decision of the subsystem: "lowering", "fusion", "graph pass application".
  std::string decision_noun;
  /// What that decision was: "aten::relu (%relu)", "fused %mul into its users' kernel (root %add)".
  std::string what;
  /// Subsystems whose disabling did not remove the failure, in the order tried.
  std::vector<std::string> ruled_out;
  /// Graph runs (each one compile with its backend).
  size_t runs = 0;

  /// The final line: "inductor lowering #5: aten::relu (%relu) — with it the failure
  /// appears, without it the graph passes", "the failure appears with backend aot_eager
  /// (eager passes)", "no failure: …".
  std::string summary() const;
};

/// Bisects `g` run on `inputs`. Sets the bisector's knobs (inductor.bisect_max_*) for each
/// run and restores them after; other knobs stay as the caller set them.
BisectResult bisect(const Graph& g, const std::vector<Tensor>& inputs, const BisectOptions& options = {});

/// The backends bisect() tries for `backend`, in order.
std::vector<std::string> bisect_backends(const std::string& backend);

}  // namespace ember::debug
