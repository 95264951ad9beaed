// support/error.cpp — building error messages with their context (op, user line).
#include "ember/error.h"

#include <cxxabi.h>
#include <execinfo.h>

#include <cstdlib>

#include "ember/config.h"

#include <cstring>

#include "support/call_context.h"

namespace ember {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::RuntimeError: return "RuntimeError";
    case ErrorKind::ValueError: return "ValueError";
    case ErrorKind::IndexError: return "IndexError";
    case ErrorKind::TypeError: return "TypeError";
    case ErrorKind::NotImplementedError: return "NotImplementedError";
    case ErrorKind::Unsupported: return "Unsupported";
  }
  return "RuntimeError";
}

Error::Error(ErrorKind kind, std::string message, std::string context)
    : kind_(kind), message_(std::move(message)), context_(std::move(context)) {
  full_ = message_;
  if (!context_.empty()) full_ += "\n" + context_;
}

namespace support {

CallContext& call_context() {
  thread_local CallContext context;
  return context;
}

std::string format_loc(const std::source_location& loc) {
  return std::string(loc.file_name()) + ":" + std::to_string(loc.line());
}

std::string format_loc(const UserLoc& loc) { return std::string(loc.file) + ":" + std::to_string(loc.line); }

}  // namespace support

namespace detail {
namespace {

/// config().dynamo.verbose (TORCHDYNAMO_VERBOSE): errors carry Ember's internal stack.
bool verbose_errors() {
  try {
    return config().dynamo.verbose;
  } catch (...) {
    return false;  // a bad environment is reported by config() itself
  }
}

/// The C++ stack at the raise, innermost first, with demangled names (executables that
/// link `ember` export their symbols, see src/CMakeLists.txt).
std::string internal_stack() {
  void* frames[64];
  const int n = backtrace(frames, 64);
  char** symbols = backtrace_symbols(frames, n);
  std::string out = "Internal stack (most recent call first):";
  for (int i = 2; i < n; ++i) {  // skip internal_stack and raise
    std::string line = symbols ? symbols[i] : "?";
    const auto open = line.find('('), plus = line.find('+', open == std::string::npos ? 0 : open);
    if (open != std::string::npos && plus != std::string::npos && plus > open + 1) {
      const std::string mangled = line.substr(open + 1, plus - open - 1);
      int status = 0;
      char* demangled = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
      if (status == 0 && demangled) line = line.substr(0, open + 1) + demangled + line.substr(plus);
      std::free(demangled);
    }
    out += "\n  #" + std::to_string(i - 2) + " " + line;
  }
  std::free(symbols);
  return out;
}

}  // namespace

void ErrorStream::raise() {
  const support::CallContext& c = support::call_context();
  std::string message;
  if (!c.op_stack.empty()) {
    message += c.op_stack.front();
    message += ": ";
  }
  message += stream_.str();
  if (c.op_stack.size() > 1 && std::strcmp(c.op_stack.front(), c.op_stack.back()) != 0) {
    message += " (in ";
    message += c.op_stack.back();
    message += ")";
  }
  std::string context;
  if (c.has_user_loc) context = "  at " + support::format_loc(c.user_loc);
  if (verbose_errors()) context += "\n" + internal_stack();
  if (internal_) {
    message = "internal error in Ember (a bug: please report it): " + message + " [check `" + condition_ +
              "` failed at " + file_ + ":" + std::to_string(line_) + "]";
    throw InternalError(std::move(message), std::move(context));
  }
  throw Error(kind_, std::move(message), std::move(context));
}

}  // namespace detail
}  // namespace ember
