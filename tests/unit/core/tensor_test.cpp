// Tensors, views and storage sharing.
#include <gtest/gtest.h>

#include "ember/ember.h"

namespace ember {
namespace {

TEST(Tensor, ViewsShareStorage) {
  Tensor a = arange(6, kFloat);
  Tensor v = a.view({2, 3});
  Tensor tr = v.t();
  EXPECT_EQ(v.storage(), a.storage());
  EXPECT_EQ(tr.storage(), a.storage());
  EXPECT_EQ(tr.strides(), IntArrayRef({1, 3}));
  EXPECT_FALSE(tr.is_contiguous());
  Tensor s = a.slice(0, 1, 5, 2);
  EXPECT_EQ(s.storage_offset(), 1);
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{1, 3}));
  fill_(s, 9.0);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{0, 9, 2, 9, 4, 5}));
}

TEST(Tensor, ReshapeCopiesOnlyWhenItMust) {
  Tensor a = arange(6, kFloat).view({2, 3});
  EXPECT_EQ(a.reshape({3, 2}).storage(), a.storage());
  Tensor tr = a.t();
  Tensor r = tr.reshape({6});
  EXPECT_NE(r.storage(), a.storage());
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(Tensor, ExpandHasZeroStrides) {
  Tensor a = arange(3, kFloat).view({3, 1});
  Tensor e = a.expand({3, 4});
  EXPECT_EQ(e.strides(), IntArrayRef({1, 0}));
  EXPECT_EQ(e.contiguous().to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}));
}

TEST(Tensor, MetaTensorsHaveShapesButNoData) {
  Tensor m = empty({4, 5}, kMeta);
  Tensor r = (m * 2).select(1, 0);
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(r.sizes(), IntArrayRef({4}));
  EXPECT_THROW(r.item(), Error);
}

TEST(Tensor, PointwiseOutputFollowsInputLayout) {
  Tensor a = ones({3, 4}).t();
  Tensor b = exp(a);
  EXPECT_EQ(b.strides(), a.strides());
}

TEST(Tensor, InPlaceOpsBumpTheVersion) {
  Tensor a = zeros({3});
  const uint64_t v0 = a._version();
  a.add_(ones({3}));
  EXPECT_GT(a._version(), v0);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

TEST(Tensor, ToMetaKeepsGeometryAndDropsData) {
  Tensor a = arange(6, kFloat).view({2, 3}).t();
  Tensor m = a.to(kMeta);
  EXPECT_TRUE(m.is_meta());
  EXPECT_EQ(m.sizes(), a.sizes());
  EXPECT_EQ(m.strides(), a.strides());
  EXPECT_THROW((void)m.to(kCPU), Error);
}

}  // namespace
}  // namespace ember
