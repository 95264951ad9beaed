// conv3d x[4,32,16,32,32] w[32,32,3,3,3] pad 1: forward, and backward (data + weights), float32.
#include <sys/resource.h>
#include <chrono>
#include <cstdio>
#include <functional>
#include <algorithm>
#include "ember/ember.h"
using namespace ember;
static void time_it(const char* name, const std::function<void()>& f, int n) {
  f();
  std::vector<double> w;
  for (int i = 0; i < n; ++i) { auto t0 = std::chrono::steady_clock::now(); f(); w.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()); }
  std::sort(w.begin(), w.end());
  std::printf("%-10s min %9.2f  med %9.2f ms\n", name, w[0], w[n/2]);
}
int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 5;
  NoGradGuard ng;
  Tensor x = randn({4, 32, 16, 32, 32}).permute({0,2,3,4,1}).contiguous().permute({0,4,1,2,3}), w = randn({32, 32, 3, 3, 3}), b = randn({32});
  Tensor y = convolution(x, w, b, {1,1,1}, {1,1,1}, {1,1,1}, false, {0}, 1);
  Tensor gy = randn(y.sizes().vec()).permute({0,2,3,4,1}).contiguous().permute({0,4,1,2,3});
  time_it("forward", [&]{ convolution(x, w, b, {1,1,1}, {1,1,1}, {1,1,1}, false, {0}, 1); }, n);
  time_it("backward", [&]{ convolution_backward(gy, x, w, std::vector<int64_t>{32}, {1,1,1}, {1,1,1}, {1,1,1}, false, {0}, 1, {true, true, true}); }, n);
}
