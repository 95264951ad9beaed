// capture/events.cpp — compile times and compile events (events.h), and compile_times().
#include "capture/events.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <tuple>

#include "kernels/cpu/autotune.h"

namespace ember {
namespace capture {
namespace {

struct Times {
  std::mutex mu;
  std::vector<CompileTimeRow> rows;  // per function, in the order phases first started
  std::map<std::tuple<std::string, std::string, std::string>, size_t> index;  // (function, phase, parent)

  /// The row of (function, phase, parent), made (count 0) when first asked for. Locked.
  CompileTimeRow& row(const std::string& function, const std::string& phase, const std::string& parent) {
    auto [it, fresh] = index.try_emplace({function, phase, parent}, rows.size());
    if (fresh) rows.push_back({function, phase, 0, 0, parent, 0});
    return rows[it->second];
  }
};
Times& times() {
  static Times* t = new Times;
  return *t;
}

void record(const std::string& function, const std::string& phase, const std::string& parent, double seconds,
            double cpu_seconds) {
  Times& t = times();
  std::lock_guard lock(t.mu);
  CompileTimeRow& r = t.row(function, phase, parent);
  ++r.count;
  r.total_seconds += seconds;
  r.cpu_seconds += cpu_seconds;
}

/// The phases open on this thread, innermost first (each links to the one around it).
thread_local PhaseTimer* t_innermost = nullptr;

struct Observers {
  std::mutex mu;
  std::map<int, CompileObserver> observers;
  int next = 0;
};
Observers& observers() {
  static Observers* o = new Observers;
  return *o;
}

}  // namespace

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

PhaseTimer::PhaseTimer(std::string phase, Nesting nesting)
    : PhaseTimer(t_innermost ? t_innermost->function_ : std::string(kNoFunction), std::move(phase), nesting) {}

PhaseTimer::PhaseTimer(std::string function, std::string phase, Nesting nesting)
    : outer_(t_innermost), function_(std::move(function)), phase_(std::move(phase)), nesting_(nesting) {
  for (const PhaseTimer* o = outer_; o; o = o->outer_) {
    if (o->function_ == function_ && o->nesting_ == Nesting::Parts) {
      parent_ = o->phase_;
      break;
    }
  }
  {
    Times& t = times();
    std::lock_guard lock(t.mu);
    t.row(function_, phase_, parent_);  // its place in the table: where it first started
  }
  t_innermost = this;
  start_cpu_ = thread_cpu_seconds();
  start_ = std::chrono::steady_clock::now();
}

PhaseTimer::~PhaseTimer() {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double cpu = thread_cpu_seconds() - start_cpu_ + process_cpu_;
  t_innermost = outer_;
  if (outer_) {
    outer_->nested_seconds_ += seconds;
    outer_->nested_cpu_ += cpu;
  }
  if (nesting_ == Nesting::OwnTime) {
    seconds -= nested_seconds_;
    cpu -= nested_cpu_;
  }
  record(function_, phase_, parent_, seconds, cpu);
}

std::vector<Tensor> timed_run(const std::string& function, const std::string& phase,
                              const std::function<std::vector<Tensor>()>& run) {
  std::string f = function.empty() ? current_compile_function() : function;
  PhaseTimer timer(f.empty() ? std::string(kNoFunction) : std::move(f), phase);
  const kernels::cpu::TuningTime before = kernels::cpu::tuning_time_this_thread();
  std::vector<Tensor> out = run();
  const kernels::cpu::TuningTime& after = kernels::cpu::tuning_time_this_thread();
  if (after.seconds > before.seconds)
    record_part("autotuning (timing runs)", after.seconds - before.seconds, after.cpu_seconds - before.cpu_seconds);
  return out;
}

std::string current_compile_function() { return t_innermost ? t_innermost->function_ : std::string(); }

void add_process_cpu_time(double seconds) {
  for (PhaseTimer* p = t_innermost; p; p = p->outer_) p->process_cpu_ += seconds;
}

void record_part(const std::string& part, double seconds, double cpu_seconds) {
  PhaseTimer* inner = t_innermost;
  if (!inner) return;
  // An OwnTime phase's own time leaves the part out, as it does a phase timed inside it.
  if (inner->nesting_ == Nesting::OwnTime) {
    inner->nested_seconds_ += seconds;
    inner->nested_cpu_ += cpu_seconds;
  }
  const PhaseTimer* parent = inner;
  while (parent && !(parent->function_ == inner->function_ && parent->nesting_ == Nesting::Parts))
    parent = parent->outer_;
  record(inner->function_, part, parent ? parent->phase_ : "", seconds, cpu_seconds);
}

int add_compile_observer(CompileObserver observer) {
  Observers& o = observers();
  std::lock_guard lock(o.mu);
  o.observers.emplace(o.next, std::move(observer));
  return o.next++;
}

void remove_compile_observer(int id) {
  Observers& o = observers();
  std::lock_guard lock(o.mu);
  o.observers.erase(id);
}

bool has_observers() {
  Observers& o = observers();
  std::lock_guard lock(o.mu);
  return !o.observers.empty();
}

void notify(const CompileEvent& event) {
  Observers& o = observers();
  std::lock_guard lock(o.mu);
  for (auto& [id, fn] : o.observers) fn(event);
}

}  // namespace capture

std::vector<CompileTimeRow> compile_times_rows() {
  capture::Times& t = capture::times();
  std::lock_guard lock(t.mu);
  std::vector<CompileTimeRow> rows;
  for (const CompileTimeRow& r : t.rows)
    if (r.count > 0) rows.push_back(r);  // a phase still open has no time yet
  return rows;
}

void reset_compile_times() {
  capture::Times& t = capture::times();
  std::lock_guard lock(t.mu);
  t.rows.clear();
  t.index.clear();
}

namespace {

/// One line of the table: a row, or a phase's "(rest)".
struct TableLine {
  std::string function, phase;
  std::string count;
  double total, cpu;
  int64_t n;
};

/// Appends the rows of `function` under `parent` (and theirs, indented), each phase with
/// parts followed by its "(rest)".
void add_lines(const std::vector<CompileTimeRow>& rows, const std::string& function, const std::string& parent,
               int depth, std::vector<TableLine>& out) {
  const std::string indent(static_cast<size_t>(2 * depth), ' ');
  for (const CompileTimeRow& r : rows) {
    if (r.function != function || r.parent != parent) continue;
    out.push_back({r.function, indent + r.phase, std::to_string(r.count), r.total_seconds, r.cpu_seconds, r.count});
    double parts = 0, parts_cpu = 0;
    bool has_parts = false;
    for (const CompileTimeRow& c : rows) {
      if (c.function == function && c.parent == r.phase) {
        has_parts = true;
        parts += c.total_seconds;
        parts_cpu += c.cpu_seconds;
      }
    }
    if (!has_parts || depth > 8) continue;
    add_lines(rows, function, r.phase, depth + 1, out);
    out.push_back({r.function, indent + "  (rest)", "", r.total_seconds - parts, r.cpu_seconds - parts_cpu, r.count});
  }
}

}  // namespace

std::string compile_times() {
  const std::vector<CompileTimeRow> rows = compile_times_rows();
  // Functions in first-seen order; a row whose parent has no row (still open) is top-level.
  std::vector<std::string> functions;
  for (const auto& r : rows)
    if (std::find(functions.begin(), functions.end(), r.function) == functions.end()) functions.push_back(r.function);
  std::vector<TableLine> lines;
  for (const std::string& f : functions) {
    std::vector<std::string> roots = {""};
    for (const auto& r : rows) {
      if (r.function != f || r.parent.empty()) continue;
      const bool parent_known = std::any_of(rows.begin(), rows.end(), [&](const CompileTimeRow& p) {
        return p.function == f && p.phase == r.parent;
      });
      if (!parent_known && std::find(roots.begin(), roots.end(), r.parent) == roots.end()) roots.push_back(r.parent);
    }
    for (const std::string& root : roots) add_lines(rows, f, root, 0, lines);
  }
  size_t fw = 8, pw = 5;
  for (const auto& l : lines) {
    fw = std::max(fw, l.function.size());
    pw = std::max(pw, l.phase.size());
  }
  std::string out =
      "Compile times (seconds; a phase's parts are indented under it, and its (rest) is its time outside them;\n"
      "cpu: the compiling thread's CPU time plus that of the C++ compiler processes it waited for)\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-*s  %-*s  %7s  %10s  %10s  %10s\n", static_cast<int>(fw), "function",
                static_cast<int>(pw), "phase", "count", "total", "average", "cpu");
  out += line;
  for (const auto& l : lines) {
    const double average = l.n ? l.total / static_cast<double>(l.n) : 0;
    std::snprintf(line, sizeof line, "%-*s  %-*s  %7s  %10.6f  %10.6f  %10.6f\n", static_cast<int>(fw),
                  l.function.c_str(), static_cast<int>(pw), l.phase.c_str(), l.count.c_str(), l.total, average, l.cpu);
    out += line;
  }
  return out;
}

}  // namespace ember
