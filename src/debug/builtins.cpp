// debug/builtins.cpp — register_builtin_backends() (ember/compile.h): the backends of the
// libraries above capture and the REPRO_AFTER wrapper. It lives in the top library because
// it names both ember_inductor and ember_debug; compile() calls it from user code, which is
// what makes a static link keep them (capture may not name a later library).
#include "debug/repro.h"
#include "inductor/inductor.h"

namespace ember {

void register_builtin_backends() {
  inductor::register_inductor_backends();
  debug::install_repro_wrapper();
}

}  // namespace ember
