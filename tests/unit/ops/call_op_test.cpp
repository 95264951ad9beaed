// ember::call_op: calling any registry op by name through the public API.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "support/error_of.h"

namespace ember {
namespace {

TEST(CallOp, FillsDefaultsAndReturnsOneValuePerResult) {
  Tensor x = tensor<float>({1, 2, 3});
  Stack out = call_op("aten::add.Tensor", {x, x});  // alpha defaults to 1
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_tensor().to_vector<float>(), (std::vector<float>{2, 4, 6}));
  Stack two = call_op("aten::max.dim", {tensor<float>({1, 5, 2, 4}, {2, 2}), int64_t{1}});
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].to_tensor().to_vector<float>(), (std::vector<float>{5, 4}));
  EXPECT_EQ(two[1].to_tensor().to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
}

TEST(CallOp, ListReturningOpsGiveOneTensorList) {
  Stack out = call_op("aten::split_with_sizes", {tensor<float>({1, 2, 3}), std::vector<int64_t>{1, 2}});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].to_tensor_list().size(), 2u);
  EXPECT_EQ(out[0].to_tensor_list()[1].to_vector<float>(), (std::vector<float>{2, 3}));
}

TEST(CallOp, AcceptsNamesWithoutNamespaceOrDefaultOverload) {
  Tensor x = tensor<float>({-1, 2});
  EXPECT_EQ(call_op("neg", {x})[0].to_tensor().to_vector<float>(), (std::vector<float>{1, -2}));
  EXPECT_EQ(call_op("aten::abs", {x})[0].to_tensor().to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(CallOp, UnknownOpListsOverloadsAndNamesTheCallersLine) {
  const int line = __LINE__ + 1;
  const std::string msg = testing::error_of([] { call_op("aten::add.Tensr", {}); });
  EXPECT_NE(
      msg.find("unknown operator 'aten::add.Tensr'; overloads that exist:\n  aten::add.Scalar\n  aten::add.Tensor"),
      std::string::npos)
      << msg;
  EXPECT_NE(msg.find("call_op_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
}

TEST(CallOp, ArgumentErrorsNameTheCallersLine) {
  const int line = __LINE__ + 1;
  const std::string msg = testing::error_of([] { call_op("aten::neg", {int64_t{1}}); }, ErrorKind::TypeError);
  EXPECT_NE(msg.find("aten::neg(): argument 'self' (position 0) must be Tensor, not int"), std::string::npos) << msg;
  EXPECT_NE(msg.find("call_op_test.cpp:" + std::to_string(line)), std::string::npos) << msg;
}

}  // namespace
}  // namespace ember
