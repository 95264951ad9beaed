// A program built against the installed Ember: compiles a function with the inductor
// backend and checks it against eager. Prints "consumer: compiled equals eager" on success.
#include <ember/ember.h>

#include <cstdio>

using namespace ember;

Tensor gelu_layer(const Tensor& x, const Tensor& w) { return gelu(matmul(x, w)).sum(-1) + x.exp().mean(-1); }

int main() {
  manual_seed(0);
  Tensor x = randn({16, 32});
  Tensor w = randn({32, 8});
  auto compiled = compile(gelu_layer, {.backend = "inductor", .name = "gelu_layer"});
  Tensor got = compiled(x, w);
  Tensor want = gelu_layer(x, w);
  const double diff = amax((got - want).abs()).item<double>();
  if (!(diff < 1e-4)) {
    std::printf("consumer: compiled differs from eager by %g\n", diff);
    return 1;
  }
  std::printf("consumer: compiled equals eager (max |diff| %.2g)\n", diff);
  return 0;
}
