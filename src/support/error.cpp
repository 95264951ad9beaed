// support/error.cpp — building error messages with their context (op, user line).
#include "ember/error.h"

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
  if (internal_) {
    message = "internal error in Ember (a bug: please report it): " + message + " [check `" + condition_ +
              "` failed at " + file_ + ":" + std::to_string(line_) + "]";
    throw InternalError(std::move(message), std::move(context));
  }
  throw Error(kind_, std::move(message), std::move(context));
}

}  // namespace detail
}  // namespace ember
