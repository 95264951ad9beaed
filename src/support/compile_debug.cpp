// support/compile_debug.cpp — the TORCH_COMPILE_DEBUG run directory: its name (local time
// to the microsecond and the pid, as PyTorch), and the dynamo debug.log sink.
#include "support/compile_debug.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <mutex>

#include "ember/config.h"
#include "ember/error.h"
#include "ember/logging.h"

namespace ember::compile_debug {
namespace {

namespace fs = std::filesystem;

struct Run {
  std::string parent;  // trace.debug_dir it was made under
  fs::path dir;
  logging::SinkId sink = 0;
};

std::mutex g_mu;
std::unique_ptr<Run> g_run;

std::string run_name() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "run_%04d_%02d_%02d_%02d_%02d_%02d_%06lld-pid_%d", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(micros), static_cast<int>(getpid()));
  return buf;
}

void close_run() {
  if (!g_run) return;
  logging::remove_sink(g_run->sink);
  g_run.reset();
}

}  // namespace

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  EMBER_CHECK(out.good()) << "TORCH_COMPILE_DEBUG: cannot write " << path.string();
}

std::optional<fs::path> run_dir() {
  std::lock_guard lock(g_mu);
  const Config::Inductor::Trace& trace = config().inductor.trace;
  if (!trace.enabled) {
    close_run();
    return std::nullopt;
  }
  if (g_run && g_run->parent == trace.debug_dir) return g_run->dir;
  close_run();
  auto run = std::make_unique<Run>();
  run->parent = trace.debug_dir;
  const fs::path parent = trace.debug_dir.empty() ? fs::current_path() : fs::path(trace.debug_dir);
  run->dir = parent / "torch_compile_debug" / run_name();
  std::error_code ec;
  fs::create_directories(run->dir / "torchdynamo", ec);
  if (!ec) fs::create_directories(run->dir / "torchinductor", ec);
  EMBER_CHECK(!ec) << "TORCH_COMPILE_DEBUG: cannot create " << run->dir.string() << ": " << ec.message();
  // Each line is flushed as it comes, so a crash keeps the log up to its last line.
  auto log = std::make_shared<std::ofstream>(run->dir / "torchdynamo" / "debug.log", std::ios::app);
  EMBER_CHECK(log->good()) << "TORCH_COMPILE_DEBUG: cannot write " << (run->dir / "torchdynamo/debug.log").string();
  run->sink = logging::add_sink(
      [log](const logging::Record& r) {
        *log << r.text;
        log->flush();
      },
      "+dynamo");
  g_run = std::move(run);
  return g_run->dir;
}

}  // namespace ember::compile_debug
