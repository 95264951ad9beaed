// examples/guide_backend_error.cpp — the guide's "backend compiler error": toy_compiler
// fails on relu. With TORCHDYNAMO_REPRO_AFTER=dynamo the failing graph is minified at
// once to a repro of the one op that fails; `ember minify/repro/bisect LAUNCHER
// --backend-lib libtoy_backend.so` load the same compiler into the ember tool.
//   TORCHDYNAMO_REPRO_AFTER=dynamo ./guide_backend_error
#include "toy_compiler.h"

#include <iostream>

using namespace ember;

Tensor test_backend_error(const Tensor& x) {
  Tensor y = sin(x) * 2;
  Tensor z = relu(y);  // toy_compiler rejects this op
  return cos(z) + 1;
}

int main() {
  auto fn = compile(test_backend_error, {.custom_backend = toy_compiler, .name = "test_backend_error"});
  try {
    fn(randn({20}));
  } catch (const BackendCompilerFailed& e) {
    std::cout << "BackendCompilerFailed: " << e.what() << "\n";
    return 1;
  }
}
