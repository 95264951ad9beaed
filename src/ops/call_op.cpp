// ops/call_op.cpp — ember::call_op (ember/dispatch.h): the public op-by-name entry point.
#include "ember/dispatch.h"

#include "ops/dispatch.h"
#include "support/call_context.h"

namespace ember {

Stack call_op(std::string_view qualified_name, Stack args, Loc loc) {
  // Set before the lookup, so that an unknown name is reported at the caller's line too.
  support::UserLocScope scope(loc);
  return ops::call(ops::registry().get(qualified_name), std::move(args));
}

}  // namespace ember
