// examples/guide_explain.cpp — the guide's "Identifying the cause of a graph break":
// explain() on a function with a print and a data-dependent branch reports 3 graphs,
// 2 graph breaks, and for each break its reason and the line of this file.
#include <ember/ember.h>

#include <iostream>

using namespace ember;

Tensor toy_example(const Tensor& a, Tensor b) {
  Tensor x = a / (a.abs() + 1);
  std::cout << "woo " << x.sum() << "\n";  // printing a tensor needs its value: break 1
  if (b.sum().item<double>() < 0) {         // a data-dependent branch: break 2
    b = b * -1;
  }
  return x * b;
}

int main() {
  manual_seed(0);
  ExplainOutput explanation = explain(toy_example)(randn({10}), randn({10}));
  std::cout << explanation.str();
  std::cout << "graph_count=" << explanation.graph_count << " graph_break_count=" << explanation.graph_break_count
            << "\n";
}
