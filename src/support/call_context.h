// support/call_context.h — per-thread context of the op call in progress: the user's
// source location (set by the outermost public API call) and the stack of ops being
// dispatched. Errors read it to say which op failed and on which user line.
#pragma once

#include <source_location>
#include <string>
#include <string_view>
#include <vector>

namespace ember::support {

/// A user's source line. `file` points at storage that outlives the call (a
/// std::source_location's file name, or a graph node's).
struct UserLoc {
  const char* file = "";
  unsigned line = 0;
};

struct CallContext {
  /// The outermost public API call's location (or, while a graph runs, the line that
  /// created the node being run).
  UserLoc user_loc{};
  bool has_user_loc = false;
  /// Names of the ops being dispatched, outermost first.
  std::vector<const char*> op_stack;
};

CallContext& call_context();

/// Whether `file` is one of Ember's own sources rather than the user's: a file under
/// Ember's src/ (its build maps that folder to "@ember/src/" in source locations, see
/// CMakeLists.txt) or a public header under include/ember/, in the source tree or where
/// it is installed. A public call made from one of them is Ember calling itself, and its
/// line is not the user's.
inline bool is_ember_internal(const char* file) {
  const std::string_view f(file);
  if (f.starts_with("@ember/")) return true;
  const size_t at = f.find("include/ember/");
  return at != std::string_view::npos && (at == 0 || f[at - 1] == '/');
}

/// Sets the user location for the duration of a public API call, unless an outer
/// call already set one or the call is made from Ember's own code (internal calls never
/// replace the user's line, nor stand in for it).
class UserLocScope {
 public:
  explicit UserLocScope(const std::source_location& loc) : UserLocScope(UserLoc{loc.file_name(), loc.line()}) {}
  explicit UserLocScope(UserLoc loc) {
    CallContext& c = call_context();
    if (!c.has_user_loc && !is_ember_internal(loc.file)) {
      c.user_loc = loc;
      c.has_user_loc = true;
      owner_ = true;
    }
  }
  ~UserLocScope() {
    if (owner_) call_context().has_user_loc = false;
  }
  UserLocScope(const UserLocScope&) = delete;
  UserLocScope& operator=(const UserLocScope&) = delete;

 private:
  bool owner_ = false;
};

/// Pushes an op name for the duration of its dispatch.
class OpScope {
 public:
  explicit OpScope(const char* name) { call_context().op_stack.push_back(name); }
  ~OpScope() { call_context().op_stack.pop_back(); }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;
};

/// "file.cpp:12" for a source location.
std::string format_loc(const std::source_location& loc);
std::string format_loc(const UserLoc& loc);

}  // namespace ember::support
