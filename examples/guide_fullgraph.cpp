// examples/guide_fullgraph.cpp — the guide's fullgraph=True: the first graph break is an
// error (ErrorKind::Unsupported) that names the break and the line of this file, instead
// of a silent split into several graphs.
#include <ember/ember.h>

#include <iostream>

using namespace ember;

Tensor toy_example(const Tensor& a, Tensor b) {
  Tensor x = a / (a.abs() + 1);
  std::cout << "woo " << x.sum() << "\n";  // the first break: fullgraph stops here
  if (b.sum().item<double>() < 0) b = b * -1;
  return x * b;
}

int main() {
  manual_seed(0);
  auto fn = compile(toy_example, {.backend = "eager", .fullgraph = true, .name = "toy_example"});
  try {
    fn(randn({10}), randn({10}));
  } catch (const Error& e) {
    std::cout << error_kind_name(e.kind()) << ": " << e.what() << "\n";
    return 0;
  }
  std::cout << "no error: fullgraph did not stop at the break\n";
  return 1;
}
