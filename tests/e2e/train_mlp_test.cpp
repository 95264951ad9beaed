// The demo's training run: the loss falls, and a fixed seed reproduces it exactly.
#include <gtest/gtest.h>

#include "../../examples/train_mlp.h"

namespace ember {
namespace {

TEST(TrainMlp, LossFalls) {
  const std::vector<double> losses = examples::train_mlp(0, 150);
  EXPECT_LT(losses.back(), 0.25 * losses.front()) << "first " << losses.front() << ", last " << losses.back();
}

TEST(TrainMlp, FixedSeedGivesTheSameLossesTwice) {
  EXPECT_EQ(examples::train_mlp(3, 20), examples::train_mlp(3, 20));
  EXPECT_NE(examples::train_mlp(3, 20), examples::train_mlp(4, 20));
}

}  // namespace
}  // namespace ember
