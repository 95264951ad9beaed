// examples/readme_usage.cpp — the usage snippet of README.md, kept compiling and running.
#include <ember/ember.h>

#include <iostream>

using namespace ember;

int main() {
  manual_seed(0);
  Tensor x = randn({4, 8});
  Tensor w = randn({16, 8}), b = zeros({16});
  Tensor y = gelu(linear(x, w, b));             // torch.nn.functional names and semantics
  std::cout << softmax(y, -1).sum(1) << "\n";  // printed exactly as PyTorch prints it
  Tensor m = empty({4, 8}, kMeta);              // shapes without data
  std::cout << linear(m, w.to(kMeta), b.to(kMeta)).sizes() << "\n";
}
