// examples/toy_backend.cpp — a backend as a shared library, for the ember tool's
// --backend-lib: loading it registers toy_compiler under the name "toy_compiler".
// Built against Ember's headers only (no Ember libraries linked): it uses the copy of
// Ember in the program that loads it.
#include "toy_compiler.h"

namespace {
const bool registered = (ember::register_backend("toy_compiler", toy_compiler), true);
}  // namespace
