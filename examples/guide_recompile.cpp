// examples/guide_recompile.cpp — a function called with a different shape each time keeps
// recompiling until it hits cache_size_limit; the CompileProfiler says why.
#include <ember/ember.h>

#include <iostream>
using namespace ember;

int main() {
  manual_seed(0);
  CompileProfiler prof;
  auto fn = compile([](const Tensor& x) { return (x * 2).relu().sum(); },
                    {.custom_backend = prof.backend(), .name = "sum_of_relu", .arg_names = {"x"}});
  for (int64_t n = 1; n <= 10; ++n) fn(randn({n}));  // a new shape each call
  std::cout << prof.report();
  std::cout << "\n" << compile_times();
}
