// examples/guide_compile.cpp — the troubleshooting guide's first steps in C++: compile a
// function, see its graph with a custom backend, and explain() its graph breaks.
#include <ember/ember.h>

#include <iostream>
using namespace ember;

// The guide's toy_compiler: print the graph it is given, run it eagerly.
CompiledGraph toy_compiler(Graph& graph, const std::vector<Tensor>& example_inputs) {
  std::cout << "my_compiler() called with graph of " << example_inputs.size() << " inputs:\n" << graph;
  return eager_backend(graph);
}

Tensor toy_example(const Tensor& a, Tensor b) {
  Tensor x = a / (a.abs() + 1);
  if (b.sum().item<double>() < 0) b = b * -1;  // data-dependent: a graph break
  return x * b;
}

int main() {
  manual_seed(0);
  auto fn = compile(toy_example, {.custom_backend = toy_compiler, .name = "toy_example"});
  for (int i = 0; i < 2; ++i) fn(randn({10}), randn({10}));

  ExplainOutput explanation = explain(toy_example)(randn({10}), randn({10}));
  std::cout << explanation.str();
}
