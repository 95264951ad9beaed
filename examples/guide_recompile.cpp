// examples/guide_recompile.cpp — a function called with a different shape each time. Kept
// static (dynamic = false), it recompiles for every shape until cache_size_limit and then
// runs eagerly; by default, automatic dynamic shapes make the changing size symbolic at the
// first recompilation and one graph serves every later shape. The CompileProfiler says so.
#include <ember/ember.h>

#include <iostream>
using namespace ember;

int main() {
  manual_seed(0);
  CompileProfiler prof;
  auto f = [](const Tensor& x) { return (x * 2).relu().sum(); };
  auto fixed = compile(f, {.custom_backend = prof.backend(), .name = "static_sum_of_relu", .arg_names = {"x"},
                           .dynamic = false});
  auto automatic = compile(f, {.custom_backend = prof.backend(), .name = "sum_of_relu", .arg_names = {"x"}});
  for (int64_t n = 1; n <= 10; ++n) {  // a new shape each call
    const Tensor x = randn({n});
    fixed(x);
    automatic(x);
  }
  std::cout << prof.report();
  std::cout << "\n" << compile_times();
}
