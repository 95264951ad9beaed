// inductor/kernel_profile.cpp — see kernel_profile.h.
#include "inductor/kernel_profile.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "ember/cuda.h"
#include "support/logging.h"

namespace ember::inductor {

KernelProfile::KernelProfile(std::string graph_name, std::filesystem::path file, std::vector<Step> steps)
    : graph_name_(std::move(graph_name)),
      file_(std::move(file)),
      steps_(std::move(steps)),
      total_ns_(steps_.size(), 0) {}

KernelProfile::~KernelProfile() {
  // No logging here: a compiled function held in a static may be freed after the logging
  // system during exit. A failed last write leaves the file of the last power-of-two call.
  std::lock_guard lock(mu_);
  if (calls_ > 0) write_locked(/*log_failure=*/false);
}

void KernelProfile::add_call(const std::vector<int64_t>& ns) {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < total_ns_.size(); ++i) total_ns_[i] += ns[i];
  ++calls_;
  if ((calls_ & (calls_ - 1)) == 0) write_locked(/*log_failure=*/true);
}

std::string KernelProfile::table() const {
  std::lock_guard lock(mu_);
  return table_locked();
}

std::string KernelProfile::table_locked() const {
  int64_t all = 0;
  for (int64_t t : total_ns_) all += t;
  size_t width = 4;
  for (const Step& s : steps_) width = std::max(width, s.what.size());
  std::ostringstream os;
  os << "kernel profile of graph " << graph_name_ << ": " << calls_ << " calls, " << steps_.size()
     << " steps; mean ms per call; GB/s over each step's operands (each read or written once)\n";
  char line[512];
  std::snprintf(line, sizeof line, "%3s  %-*s  %10s  %10s  %7s  %8s\n", "#", static_cast<int>(width), "step",
                "total ms", "mean ms", "share", "GB/s");
  os << line;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const double total_ms = static_cast<double>(total_ns_[i]) / 1e6;
    const double mean_ms = calls_ ? total_ms / static_cast<double>(calls_) : 0.0;
    const double share = all ? 100.0 * static_cast<double>(total_ns_[i]) / static_cast<double>(all) : 0.0;
    const double gbps = mean_ms > 0 ? static_cast<double>(steps_[i].bytes) / (mean_ms * 1e6) : 0.0;
    std::snprintf(line, sizeof line, "%3zu  %-*s  %10.3f  %10.4f  %6.1f%%  %8.1f\n", i, static_cast<int>(width),
                  steps_[i].what.c_str(), total_ms, mean_ms, share, gbps);
    os << line;
  }
  std::snprintf(line, sizeof line, "     %-*s  %10.3f  %10.4f\n", static_cast<int>(width), "all steps",
                static_cast<double>(all) / 1e6,
                calls_ ? static_cast<double>(all) / 1e6 / static_cast<double>(calls_) : 0.0);
  os << line;
  return os.str();
}

void KernelProfile::write_locked(bool log_failure) const {
  std::ofstream out(file_, std::ios::trunc);
  out << table_locked();
  if (!out && log_failure) EMBER_LOG(inductor, WARNING) << "kernel profile: cannot write " << file_.string();
}

struct CudaStepEvents::Pair {
  ember::cuda::Event begin{true}, end{true};
  bool ran = false;
};

CudaStepEvents::CudaStepEvents(size_t steps) {
  for (size_t i = 0; i < steps; ++i) pairs_.push_back(std::make_unique<Pair>());
}
CudaStepEvents::~CudaStepEvents() = default;

void CudaStepEvents::start(int step) {
  pairs_[step]->begin.record();
  pairs_[step]->ran = true;
}
void CudaStepEvents::stop(int step) { pairs_[step]->end.record(); }

void CudaStepEvents::collect(std::vector<int64_t>& ns) {
  for (size_t i = 0; i < pairs_.size(); ++i) {
    if (!pairs_[i]->ran) continue;
    pairs_[i]->end.synchronize();
    ns[i] += static_cast<int64_t>(static_cast<double>(pairs_[i]->begin.elapsed_time(pairs_[i]->end)) * 1e6);
  }
}

}  // namespace ember::inductor
