// ember/dispatch.h — calling any registry op by its ATen name, for code that is generated
// from a graph (runnable programs, repros) and for ops without a C++ wrapper of their own.
#pragma once

#include <string_view>

#include "ember/ivalue.h"

namespace ember {

/// Calls the op named `qualified_name` ("aten::add.Tensor"; "add.Tensor" and a default
/// overload's bare name work too) with `args` in schema order; omitted trailing arguments
/// take their defaults. Returns the op's outputs: one IValue per returned value, or a
/// single tensor list for list-returning ops (split). Runs through the same dispatch
/// path as the typed API (autograd included); errors name `loc`. Raises listing close
/// names when the op is unknown.
Stack call_op(std::string_view qualified_name, Stack args, Loc loc = Loc::current());

}  // namespace ember
