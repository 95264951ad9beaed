// Mixed-precision mistakes (Note [autocast]) raise an ember::Error saying what was expected,
// what came, and the user's line.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/error_of.h"

namespace ember {
namespace {

using ember::testing::error_of;

TEST(AmpErrors, PromotingTheOtherLowPrecisionDtypeNamesTheOpTheDtypesAndTheLine) {
  const Tensor a = ones({2}, kBFloat16), b = ones({2}, kHalf);
  autocast scope(kCPU, kBFloat16);
  const int line = __LINE__ + 1;
  const std::string msg = error_of([&] { (void)cat({a, b}); });
  EXPECT_NE(msg.find("aten::cat"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32 or the autocast dtype (BFloat16), and an argument is Half"), std::string::npos) << msg;
  EXPECT_NE(msg.find("amp_errors_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
}

TEST(AmpErrors, AnAutocastScopeForAnotherDtypeNamesTheDtypeAndTheLine) {
  const int line = __LINE__ + 1;
  const std::string msg = error_of([] { autocast scope(kCUDA, kDouble); });
  EXPECT_NE(msg.find("autocast(cuda) runs ops in float16 or bfloat16, got Double"), std::string::npos) << msg;
  EXPECT_NE(msg.find("amp_errors_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
}

TEST(AmpErrors, UnscalingTwiceBeforeAnUpdateNamesTheLine) {
  const Tensor p = ones({2}).requires_grad_();
  optim::SGD opt({p}, {.lr = 0.1});
  amp::GradScaler scaler(kCPU);
  scaler.scale(ones({1}));
  p.mutable_grad() = ones({2});
  scaler.unscale_(opt);
  const int line = __LINE__ + 1;
  const std::string msg = error_of([&] { scaler.unscale_(opt); });
  EXPECT_NE(msg.find("unscale_() has already been called on this optimizer since the last update()."),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("amp_errors_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
}

}  // namespace
}  // namespace ember
