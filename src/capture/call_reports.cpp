// capture/call_reports.cpp — see call_reports.h.
#include "capture/call_reports.h"

#include <algorithm>

#include "ember/config.h"

namespace ember::capture {
namespace {

constexpr const char* kVerboseHint =
    "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially if you're reporting a bug to "
    "Ember).";

std::string header(const std::string& name, const SourceLoc& where) {
  return "Recompiling function " + name + " in " + where.str() + "\n    triggered by the following guard failure(s):";
}

std::string with_hint(std::string text, const std::string& hint) {
  if (!hint.empty()) text += "\n    note: " + hint;
  return text;
}

}  // namespace

std::string wont_convert_report(const std::string& name, const SourceLoc& where, const Error& e) {
  // The context is "  at file:line", and with TORCHDYNAMO_VERBOSE the internal stack on
  // the lines after it: only the first line names the user's frame.
  const std::string& context = e.context();
  const size_t eol = context.find('\n');
  std::string user_line = context.substr(0, eol);
  const std::string stack = eol == std::string::npos ? "" : context.substr(eol + 1);
  if (auto p = user_line.find("at "); p != std::string::npos) {
    user_line = user_line.substr(p + 3);
  } else {
    user_line.clear();
  }
  std::string out = "WON'T CONVERT " + name + " " + where.file + " line " + std::to_string(where.line) + "\ndue to:\n" +
                    error_kind_name(e.kind()) + ": " + e.message() + "\n\nfrom user code:\n";
  const size_t colon = user_line.find_last_of(':');
  if (colon != std::string::npos && colon > 0) {
    out +=
        "   File \"" + user_line.substr(0, colon) + "\", line " + user_line.substr(colon + 1) + ", in " + name + "\n";
  } else {
    // No op names a line (a backend failed on the whole graph): the function's own line.
    out += "   File \"" + where.file + "\", line " + std::to_string(where.line) + ", in " + name + "\n";
  }
  // A BackendCompilerFailed message carries the hint already: it is said once.
  const bool hinted = e.message().find("Set TORCHDYNAMO_VERBOSE=1") != std::string::npos;
  if (!stack.empty()) {
    out += "\n" + stack;
  } else if (!config().dynamo.verbose && !hinted) {
    out += "\n" + std::string(kVerboseHint);
  }
  return out;
}

std::string recompile_report(const std::string& name, const SourceLoc& where, const std::vector<EntryFailures>& entries,
                             const std::string& hint) {
  // The same failure in several entries (grad mode, a module flag) is said once.
  std::vector<std::pair<std::string, size_t>> distinct;
  for (const EntryFailures& e : entries) {
    auto it = std::find_if(distinct.begin(), distinct.end(), [&](const auto& d) { return d.first == e.first; });
    if (it == distinct.end()) {
      distinct.emplace_back(e.first, 1);
    } else {
      ++it->second;
    }
  }
  std::string out = header(name, where);
  for (const auto& [failure, count] : distinct) {
    out += "\n    - " + failure;
    if (count > 1) {
      out += count == entries.size()
                 ? " (each of the " + std::to_string(count) + " cache entries)"
                 : " (" + std::to_string(count) + " of the " + std::to_string(entries.size()) + " cache entries)";
    }
  }
  return with_hint(out, hint);
}

std::string recompile_verbose_report(const std::string& name, const SourceLoc& where,
                                     const std::vector<EntryFailures>& entries, const std::string& hint) {
  std::string out = header(name, where);
  for (size_t i = 0; i < entries.size(); ++i) {
    out += std::string(i ? "\n" : "") + "\n    guard " + std::to_string(i) + " failures:";
    for (const std::string& f : entries[i].all) out += "\n    - " + f;
  }
  return with_hint(out, hint);
}

std::string cache_limit_warning(const std::string& name, const SourceLoc& where, int64_t limit,
                                const std::string& last_reason, const std::string& hint) {
  std::string out = "torch._dynamo hit config.cache_size_limit (" + std::to_string(limit) + ")\n   function: '" + name +
                    "' (" + where.str() + ")\n   last reason: " + last_reason;
  if (!hint.empty()) out += "\n   " + hint;
  return out +
         "\nFrom now on, calls that no compiled entry accepts run eagerly (said once).\nTo log all recompilation "
         "reasons, use TORCH_LOGS=\"recompiles\".";
}

}  // namespace ember::capture
