// capture/call_reports.h — the text the call path of a compiled function reports, as the
// guide words it: the WON'T CONVERT report of a frame capture could not convert, the
// recompile logs (recompiles, recompiles_verbose) and the cache_size_limit warning. The
// call path (compiled_function.cpp) decides when each is said; this file says it.
#pragma once

#include <string>
#include <vector>

#include "ember/compile.h"

namespace ember::capture {

/// "WON'T CONVERT fn file line N\ndue to:\n…\n\nfrom user code:\n   File "…", line N, in fn"
/// and, with TORCHDYNAMO_VERBOSE, Ember's internal stack after the user frame.
std::string wont_convert_report(const std::string& name, const SourceLoc& where, const Error& e);

/// Why the cache entries (newest first) did not accept a call.
struct EntryFailures {
  std::string first;             // the first failing guard
  std::vector<std::string> all;  // every failing guard (recompiles_verbose)
};

/// The `recompiles` log: each distinct first failure once, with how many entries share
/// it. `hint` (a number argument's value changed, …) follows when not empty.
std::string recompile_report(const std::string& name, const SourceLoc& where, const std::vector<EntryFailures>& entries,
                             const std::string& hint);
/// The `recompiles_verbose` log: every failing guard of every entry ("guard 0 failures").
std::string recompile_verbose_report(const std::string& name, const SourceLoc& where,
                                     const std::vector<EntryFailures>& entries, const std::string& hint);

/// The warning said when a function reaches config.cache_size_limit (once per function).
std::string cache_limit_warning(const std::string& name, const SourceLoc& where, int64_t limit,
                                const std::string& last_reason, const std::string& hint);

}  // namespace ember::capture
