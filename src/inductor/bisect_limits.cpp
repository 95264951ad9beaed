// inductor/bisect_limits.cpp — the counters behind the compiler bisector's knobs
// (inductor.bisect_max_graph_passes, _lowerings, _fusions): each step of a compile counts
// its decisions and applies only the first N. Counted per thread, from the step's start,
// so the same graph gets the same numbering in every compile. See Note [minifier], "The
// compiler bisector", and pipeline.h.
#include <array>

#include "ember/config.h"
#include "inductor/pipeline.h"

namespace ember::inductor {
namespace {

constexpr size_t kSubsystems = 3;

std::array<std::vector<std::string>, kSubsystems>& decisions() {
  thread_local std::array<std::vector<std::string>, kSubsystems> d;
  return d;
}
/// The graph each subsystem is counting for, and the open BisectSpans.
std::array<std::string, kSubsystems>& graphs() {
  thread_local std::array<std::string, kSubsystems> g;
  return g;
}
thread_local int t_spans = 0;

}  // namespace

const char* bisect_decision_noun(BisectSubsystem s) {
  switch (s) {
    case BisectSubsystem::GraphPasses:
      return "graph pass application";
    case BisectSubsystem::Lowerings:
      return "lowering";
    case BisectSubsystem::Fusions:
      return "fusion";
  }
  return "";
}

int64_t& bisect_limit(BisectSubsystem s) {
  switch (s) {
    case BisectSubsystem::GraphPasses:
      return config().inductor.bisect_max_graph_passes;
    case BisectSubsystem::Lowerings:
      return config().inductor.bisect_max_lowerings;
    case BisectSubsystem::Fusions:
      return config().inductor.bisect_max_fusions;
  }
  return config().inductor.bisect_max_lowerings;
}

const char* bisect_subsystem_name(BisectSubsystem s) {
  switch (s) {
    case BisectSubsystem::GraphPasses:
      return "graph passes";
    case BisectSubsystem::Lowerings:
      return "lowerings";
    case BisectSubsystem::Fusions:
      return "fusions";
  }
  return "";
}

std::string bisect_limit_knob(BisectSubsystem s) {
  std::string name = bisect_subsystem_name(s);
  for (char& c : name)
    if (c == ' ') c = '_';
  return "inductor.bisect_max_" + name;
}

void bisect_begin(BisectSubsystem s, const std::string& graph) {
  graphs()[static_cast<size_t>(s)] = graph;
  if (t_spans == 0 || graph.empty()) decisions()[static_cast<size_t>(s)].clear();
}

BisectSpan::BisectSpan() { ++t_spans; }
BisectSpan::~BisectSpan() { --t_spans; }

bool bisect_allows(BisectSubsystem s, const std::string& what) {
  auto& d = decisions()[static_cast<size_t>(s)];
  const std::string& graph = graphs()[static_cast<size_t>(s)];
  d.push_back(t_spans > 0 && !graph.empty() ? what + " in graph " + graph : what);
  const int64_t max = bisect_limit(s);
  return max < 0 || static_cast<int64_t>(d.size()) <= max;
}

bool bisect_active() {
  if (t_spans > 0) return true;
  for (BisectSubsystem s : {BisectSubsystem::GraphPasses, BisectSubsystem::Lowerings, BisectSubsystem::Fusions})
    if (bisect_limit(s) >= 0) return true;
  return false;
}

std::string bisect_disabled_reason(BisectSubsystem s) {
  return "the compiler bisector's limit " + bisect_limit_knob(s) + "=" + std::to_string(bisect_limit(s)) +
         " disables " + bisect_decision_noun(s) + std::string(" #") +
         std::to_string(decisions()[static_cast<size_t>(s)].size());
}

const std::vector<std::string>& bisect_decisions(BisectSubsystem s) { return decisions()[static_cast<size_t>(s)]; }

}  // namespace ember::inductor
