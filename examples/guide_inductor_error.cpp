// examples/guide_inductor_error.cpp — the guide's "TorchInductor error": the inductor is
// made to fail on relu (inject_relu_bug_TESTING_ONLY=compile_error). With
// TORCHDYNAMO_REPRO_AFTER=aot the failing post-AOT graph is saved as a minifier launcher
// (the WARNING names it); then
//   ember minify .../minifier_launcher.txt        → minified/repro.txt: the relu alone
//   ember repro  .../minified/repro.txt           → FAILS: the same compile error
//   ember bisect .../minifier_launcher.txt        → FOUND: inductor_inner lowering #3: aten::relu
#include <ember/ember.h>

#include <iostream>

using namespace ember;

Tensor test_inductor_error(const Tensor& x) {
  Tensor y = sin(x) * 2;
  Tensor z = relu(y);  // the inductor's (injected) bug is here
  return cos(z) + 1;
}

int main() {
  config().inductor.inject_relu_bug_TESTING_ONLY = "compile_error";
  auto fn = compile(test_inductor_error, {.backend = "inductor", .name = "test_inductor_error"});
  try {
    fn(randn({20}));
  } catch (const BackendCompilerFailed& e) {
    std::cout << "BackendCompilerFailed: " << e.what() << "\n";
    return 1;
  }
}
