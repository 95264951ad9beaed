// Every class of user mistake raises an ember::Error that names the op, what it
// expected, what it got, and the user's line.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/error_of.h"

namespace ember {
namespace {

using ember::testing::error_of;

TEST(UserErrors, BroadcastMismatchNamesOpSizesAndLine) {
  Tensor a = ones({2, 3}), b = ones({4});
  const int line = __LINE__ + 1;
  std::string msg = error_of([&] { (void)(a + b); });
  EXPECT_NE(msg.find("aten::add.Tensor"), std::string::npos) << msg;
  EXPECT_NE(msg.find("The size of tensor a (3) must match the size of tensor b (4)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("user_errors_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
}

TEST(UserErrors, BroadcastMismatchInSeveralDimsNamesTheLastAsPyTorchDoes) {
  // PyTorch 1.13's messages for ones(2,3) + ones(3,2) and ones(2,3,4) + ones(3,3,5).
  const std::string two = error_of([] { (void)(ones({2, 3}) + ones({3, 2})); });
  EXPECT_NE(two.find("The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1"),
            std::string::npos)
      << two;
  const std::string three = error_of([] { (void)(ones({2, 3, 4}) + ones({3, 3, 5})); });
  EXPECT_NE(three.find("The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 2"),
            std::string::npos)
      << three;
}

TEST(UserErrors, DimOutOfRangeIsAnIndexError) {
  Tensor a = ones({2, 3});
  try {
    (void)a.select(2, 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::IndexError);
    EXPECT_NE(std::string(e.what()).find("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
              std::string::npos)
        << e.what();
  }
}

TEST(UserErrors, IndexOutOfRangeNamesIndexAndSize) {
  std::string msg = error_of([] { (void)ones({3}).select(0, 5); });
  EXPECT_NE(msg.find("index 5 out of range for tensor of size [3] at dimension 0"), std::string::npos) << msg;
}

TEST(UserErrors, WrongDtypeNamesTheDtype) {
  std::string msg = error_of([] { (void)silu(ones({2}, kInt64)); });
  EXPECT_NE(msg.find("\"silu\" not implemented for 'Long'"), std::string::npos) << msg;
  msg = error_of([] { (void)(-ones({2}, kBool)); });
  EXPECT_NE(msg.find("on a bool tensor is not supported"), std::string::npos) << msg;
}

TEST(UserErrors, MixedDevicesAreRejected) {
  std::string msg = error_of([] { (void)(ones({2}) + ones({2}, kMeta)); });
  EXPECT_NE(msg.find("Expected all tensors to be on the same device"), std::string::npos) << msg;
}

TEST(UserErrors, InvalidViewSuggestsReshape) {
  std::string msg = error_of([] { (void)ones({2, 3}).t().view({6}); });
  EXPECT_NE(msg.find("Use .reshape(...) instead"), std::string::npos) << msg;
}

TEST(UserErrors, InPlaceResultMustFitSelf) {
  Tensor a = ones({3}, kInt64);
  std::string msg = error_of([&] { a.add_(ones({3}, kFloat)); });
  EXPECT_NE(msg.find("result type Float can't be cast to the desired output type Long"), std::string::npos) << msg;
  Tensor b = ones({3});
  msg = error_of([&] { b.add_(ones({2, 3})); });
  EXPECT_NE(msg.find("output with shape [3] doesn't match the broadcast shape [2, 3]"), std::string::npos) << msg;
}

TEST(UserErrors, IntegerDivisionByZeroIsReportedNotACrash) {
  std::string msg = error_of([] { (void)div(ones({2}, kInt64), zeros({2}, kInt64), "floor"); });
  EXPECT_NE(msg.find("ZeroDivisionError"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ember
