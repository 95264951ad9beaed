// capture/events.cpp — compile times and compile events (events.h), and compile_times().
#include "capture/events.h"

#include <cstdio>
#include <map>
#include <mutex>

namespace ember {
namespace capture {
namespace {

struct Times {
  std::mutex mu;
  std::vector<CompileTimeRow> rows;  // in first-seen order
};
Times& times() {
  static Times* t = new Times;
  return *t;
}

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

void record_compile_time(const std::string& function, const std::string& phase, double seconds) {
  Times& t = times();
  std::lock_guard lock(t.mu);
  for (CompileTimeRow& r : t.rows) {
    if (r.function == function && r.phase == phase) {
      ++r.count;
      r.total_seconds += seconds;
      return;
    }
  }
  t.rows.push_back({function, phase, 1, seconds});
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
  return t.rows;
}

void reset_compile_times() {
  capture::Times& t = capture::times();
  std::lock_guard lock(t.mu);
  t.rows.clear();
}

std::string compile_times() {
  const std::vector<CompileTimeRow> rows = compile_times_rows();
  size_t fw = 8, pw = 5;
  for (const auto& r : rows) {
    fw = std::max(fw, r.function.size());
    pw = std::max(pw, r.phase.size());
  }
  std::string out = "Compile times (seconds)\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-*s  %-*s  %7s  %10s  %10s\n", static_cast<int>(fw), "function",
                static_cast<int>(pw), "phase", "count", "total", "average");
  out += line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%-*s  %-*s  %7lld  %10.6f  %10.6f\n", static_cast<int>(fw), r.function.c_str(),
                  static_cast<int>(pw), r.phase.c_str(), static_cast<long long>(r.count), r.total_seconds,
                  r.average_seconds());
    out += line;
  }
  return out;
}

}  // namespace ember
