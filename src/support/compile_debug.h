// support/compile_debug.h — the run directory of TORCH_COMPILE_DEBUG=1
// (torch_compile_debug/run_<time>-pid_<pid>/) and its torchdynamo/debug.log, shared by
// capture (which opens the run at each compile) and the inductor backend (which writes
// torchinductor/ into it). See Note [inductor] (docs/notes/inductor.md), "The trace directory".
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace ember::compile_debug {

/// With config().inductor.trace.enabled: the run directory under
/// <trace.debug_dir>/torch_compile_debug/, created on the first call (with torchdynamo/
/// and torchinductor/) and kept for the process while debug_dir is unchanged; from then
/// on torchdynamo/debug.log receives the DEBUG lines of dynamo (a sink with its own
/// spec, "+dynamo", independent of TORCH_LOGS). Without it: std::nullopt, and the
/// debug.log sink of an earlier run is removed.
std::optional<std::filesystem::path> run_dir();

/// Writes `text` to `path` (replacing it) and flushes; raises ember::Error on failure.
void write_text(const std::filesystem::path& path, const std::string& text);

}  // namespace ember::compile_debug
