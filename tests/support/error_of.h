// tests/support/error_of.h — runs code that must raise an ember::Error and returns its
// message, so a test can check the wording; a missing error is a test failure.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ember/error.h"

namespace ember::testing {

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an ember::Error";
  return "(no error)";
}

/// As above, and the error must be of `kind`.
template <typename F>
std::string error_of(F&& f, ErrorKind kind) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an ember::Error";
  return "(no error)";
}

/// Runs f, expects an ember::Error of `kind` whose message contains `text`.
template <typename F>
void expect_error(F&& f, const std::string& text, ErrorKind kind = ErrorKind::RuntimeError) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    EXPECT_EQ(e.kind(), kind) << e.what();
    return;
  }
  ADD_FAILURE() << "expected an ember::Error containing: " << text;
}

}  // namespace ember::testing
