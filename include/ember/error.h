// ember/error.h — the exceptions Ember raises and the checks that raise them.
//
// Two kinds of failure (see Note [errors] in docs/notes/errors.md):
//  - user errors: bad input from the caller. `EMBER_CHECK(cond) << "expected …, got …"`
//    raises an ember::Error whose message names the op being run and the user's
//    source line when one is known.
//  - internal errors: a broken invariant inside Ember. `EMBER_INTERNAL_ASSERT(cond)`
//    raises an ember::InternalError that says so.
#pragma once

#include <exception>
#include <sstream>
#include <string>

namespace ember {

/// The class of a user error, named after the Python exception PyTorch raises for it.
enum class ErrorKind {
  RuntimeError,
  ValueError,
  IndexError,
  TypeError,
  NotImplementedError,
  /// Capture cannot keep a function in one graph (torch._dynamo.exc.Unsupported): a graph
  /// break under fullgraph=true.
  Unsupported,
};

const char* error_kind_name(ErrorKind kind);

/// Every error Ember raises. `what()` is the full message; `message()` is the part
/// without context (op name, user location).
class Error : public std::exception {
 public:
  Error(ErrorKind kind, std::string message, std::string context);
  const char* what() const noexcept override { return full_.c_str(); }
  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  const std::string& context() const { return context_; }

 private:
  ErrorKind kind_;
  std::string message_;
  std::string context_;
  std::string full_;
};

/// A broken invariant inside Ember: always a bug in Ember, never the caller's fault.
class InternalError : public Error {
 public:
  InternalError(std::string message, std::string context)
      : Error(ErrorKind::RuntimeError, std::move(message), std::move(context)) {}
};

namespace detail {

/// Collects a message with `<<`; `ErrorThrower() & stream` throws it.
class ErrorStream {
 public:
  ErrorStream(ErrorKind kind, bool internal, const char* file, int line, const char* condition)
      : kind_(kind), internal_(internal), file_(file), line_(line), condition_(condition) {}
  template <typename T>
  ErrorStream& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  [[noreturn]] void raise();

 private:
  ErrorKind kind_;
  bool internal_;
  const char* file_;
  int line_;
  const char* condition_;
  std::ostringstream stream_;
};

struct ErrorThrower {
  [[noreturn]] void operator&(ErrorStream& stream) { stream.raise(); }
  [[noreturn]] void operator&(ErrorStream&& stream) { stream.raise(); }
};

}  // namespace detail
}  // namespace ember

#define EMBER_LIKELY(x) __builtin_expect(static_cast<bool>(x), 1)

/// Raise an ember::Error of the given kind unless `cond` holds; stream the message.
#define EMBER_CHECK_KIND(kind, cond)                                 \
  if (EMBER_LIKELY(cond)) {                                          \
  } else                                                             \
    ::ember::detail::ErrorThrower{} &                                \
        ::ember::detail::ErrorStream(kind, false, __FILE__, __LINE__, #cond)

#define EMBER_CHECK(cond) EMBER_CHECK_KIND(::ember::ErrorKind::RuntimeError, cond)
#define EMBER_CHECK_INDEX(cond) EMBER_CHECK_KIND(::ember::ErrorKind::IndexError, cond)
#define EMBER_CHECK_VALUE(cond) EMBER_CHECK_KIND(::ember::ErrorKind::ValueError, cond)
#define EMBER_CHECK_TYPE(cond) EMBER_CHECK_KIND(::ember::ErrorKind::TypeError, cond)

/// Raise unconditionally.
#define EMBER_FAIL() EMBER_CHECK(false)
#define EMBER_FAIL_KIND(kind) EMBER_CHECK_KIND(kind, false)

/// An invariant of Ember itself; failing it is a bug in Ember.
#define EMBER_INTERNAL_ASSERT(cond)                                  \
  if (EMBER_LIKELY(cond)) {                                          \
  } else                                                             \
    ::ember::detail::ErrorThrower{} &                                \
        ::ember::detail::ErrorStream(::ember::ErrorKind::RuntimeError, true, __FILE__, __LINE__, #cond)
