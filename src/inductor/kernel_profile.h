// inductor/kernel_profile.h — config().inductor.trace.kernel_profile: every step of a
// compiled graph (a generated kernel or an extern call) timed on each call, and the totals
// written as kernel_profile.txt into the graph's trace directory. See Note [inductor]
// (docs/notes/inductor.md), "The trace directory".
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ember::inductor {

class KernelProfile {
 public:
  /// One timed step: "kernel cpp_fused_relu_0" or "extern aten::mm (%mm)", and the bytes
  /// it reads and writes at the least (each operand's extent once), for GB/s.
  struct Step {
    std::string what;
    uint64_t bytes = 0;
  };

  KernelProfile(std::string graph_name, std::filesystem::path file, std::vector<Step> steps);
  /// Writes the file a last time.
  ~KernelProfile();
  KernelProfile(const KernelProfile&) = delete;
  KernelProfile& operator=(const KernelProfile&) = delete;

  /// One call's time per step, in nanoseconds (ns[i] for steps()[i]); counts the call and
  /// rewrites the file after calls 1, 2, 4, 8, … so that a running program's profile is
  /// on disk without a write per call.
  void add_call(const std::vector<int64_t>& ns);

  const std::vector<Step>& steps() const { return steps_; }
  /// The table: per step calls, total and mean ms, share of the graph's time, GB/s.
  std::string table() const;

 private:
  // Both need mu_ held.
  std::string table_locked() const;
  void write_locked(bool log_failure) const;

  const std::string graph_name_;
  const std::filesystem::path file_;
  const std::vector<Step> steps_;
  mutable std::mutex mu_;
  int64_t calls_ = 0;
  std::vector<int64_t> total_ns_;
};

/// Times a step into `ns` when a profile is on (a null `ns` costs one test per step).
class StepTimer {
 public:
  StepTimer(std::vector<int64_t>* ns, int step) : ns_(ns), step_(step) {
    if (ns_) start_ = std::chrono::steady_clock::now();
  }
  ~StepTimer() {
    if (ns_)
      (*ns_)[step_] +=
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
  }
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

 private:
  std::vector<int64_t>* ns_;
  int step_;
  std::chrono::steady_clock::time_point start_;
};

/// A call's steps on a CUDA device, timed with CUDA events: a step records an event pair
/// on the current stream around its launches (CudaStepTimer); collect() waits for the
/// events and adds each step's device time, in nanoseconds, to `ns`. (A host clock would
/// time the launches, which return before the kernels run.)
class CudaStepEvents {
 public:
  explicit CudaStepEvents(size_t steps);
  ~CudaStepEvents();
  CudaStepEvents(const CudaStepEvents&) = delete;
  CudaStepEvents& operator=(const CudaStepEvents&) = delete;
  void start(int step);
  void stop(int step);
  void collect(std::vector<int64_t>& ns);

 private:
  struct Pair;
  std::vector<std::unique_ptr<Pair>> pairs_;
};

/// Times a step with `events` when profiling a CUDA graph (null: does nothing).
class CudaStepTimer {
 public:
  CudaStepTimer(CudaStepEvents* events, int step) : events_(events), step_(step) {
    if (events_) events_->start(step_);
  }
  ~CudaStepTimer() {
    if (events_) events_->stop(step_);
  }
  CudaStepTimer(const CudaStepTimer&) = delete;
  CudaStepTimer& operator=(const CudaStepTimer&) = delete;

 private:
  CudaStepEvents* events_;
  int step_;
};

}  // namespace ember::inductor
