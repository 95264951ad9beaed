// examples/guide_accuracy.cpp — the guide's "accuracy" debugging: the inductor is made to
// compute relu wrongly (inject_relu_bug_TESTING_ONLY=accuracy), which no error reveals.
// TORCHDYNAMO_REPRO_LEVEL=4 compares each compiled graph with eager against a float64
// run, and on a mismatch writes a minifier launcher and raises "Accuracy failed";
// `ember minify LAUNCHER` shrinks it to the relu. Works after dynamo or after aot:
//   TORCHDYNAMO_REPRO_AFTER=dynamo TORCHDYNAMO_REPRO_LEVEL=4 ./guide_accuracy
//   TORCHDYNAMO_REPRO_AFTER=aot    TORCHDYNAMO_REPRO_LEVEL=4 ./guide_accuracy
#include <ember/ember.h>

#include <iostream>

using namespace ember;

Tensor test_accuracy(const Tensor& x) {
  Tensor y = sin(x) * 2;
  Tensor z = relu(y);  // compiled wrongly: the injected accuracy bug
  return cos(z) + 1;
}

int main() {
  manual_seed(0);
  config().inductor.inject_relu_bug_TESTING_ONLY = "accuracy";
  auto fn = compile(test_accuracy, {.backend = "inductor", .name = "test_accuracy"});
  Tensor x = randn({20});
  try {
    Tensor got = fn(x);  // without REPRO_LEVEL=4 this silently differs from eager
    std::cout << "no error; max |compiled - eager| = " << amax((got - test_accuracy(x)).abs()) << "\n";
  } catch (const Error& e) {
    std::cout << error_kind_name(e.kind()) << ": " << e.what() << "\n";
    return 1;
  }
}
