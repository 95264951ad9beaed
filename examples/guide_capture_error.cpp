// examples/guide_capture_error.cpp — the guide's "TorchDynamo errors": a function whose
// capture cannot proceed. It computes half of its input on a second thread; capture
// traces the calling thread only, so that thread's ops meet a tensor being traced (no
// data) and the trace fails. Eager runs it fine, so the failure is capture's: a
// WON'T CONVERT report names the function and the user's line, and the call runs eagerly.
// With TORCHDYNAMO_VERBOSE=1 the report ends with Ember's internal stack instead of a hint.
//   ./guide_capture_error
//   TORCHDYNAMO_VERBOSE=1 ./guide_capture_error
#include <ember/ember.h>

#include <future>
#include <iostream>

using namespace ember;

Tensor two_halves(const Tensor& x) {
  auto first = std::async(std::launch::async, [&] { return sin(x.narrow(0, 0, 5)); });  // another thread
  Tensor second = cos(x.narrow(0, 5, 5));
  return cat({first.get(), second});
}

int main() {
  manual_seed(0);
  auto fn = compile(two_halves, {.backend = "eager", .name = "two_halves"});
  Tensor x = randn({10});
  Tensor got = fn(x);  // logs WON'T CONVERT two_halves ..., then runs eagerly
  std::cout << "max |compiled - eager| = " << max((got - two_halves(x)).abs()).item<double>() << "\n";
}
