#include <gtest/gtest.h>
#include "ember/ember.h"
namespace ember { namespace {
TEST(AutogradSmoke, MulBackward) {
  Tensor x = tensor<float>({1, 2, 3});
  x.requires_grad_();
  Tensor y = (x * x).sum();
  y.backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, 4, 6}));
}
}}
