// capture/entries.h — what a compiled function's cache entries hold, read by tools that
// need the graphs a function captured on its calls (save_exported of a compiled function).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "capture/tracer.h"
#include "ember/compile.h"

namespace ember::capture {

/// One cache entry of a compiled function, as its calls left it.
struct EntryView {
  enum class Mode { Replay, Segments, Eager };
  /// Replay: one graph runs the call; Segments: graph breaks (or state read outside any
  /// graph) split it, and it is traced again on each call; Eager: capture failed.
  Mode mode = Mode::Replay;
  /// Replay: the captured graph (before AOT), as the backend was given it.
  std::shared_ptr<Graph> graph;
  /// Replay: what each of the graph's inputs (Graph::inputs(), in order) is read from.
  std::vector<InputSource> sources;
  /// The graphs and graph breaks the entry's trace made.
  size_t graph_count = 0;
  size_t break_count = 0;
  /// The state outside any graph the trace read ("" when none; Note [outside state]).
  std::string outside_state;
};

/// The function's cache entries, oldest first (a snapshot; entries published later are not in it).
std::vector<EntryView> entries(CompiledFunctionState& state);
/// The name of the function (CompileOptions::name or fn_<file>_<line>) and of its `i`th argument.
const std::string& function_name(const CompiledFunctionState& state);
std::string argument_name(const CompiledFunctionState& state, size_t i);

}  // namespace ember::capture
