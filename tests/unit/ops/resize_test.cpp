// resize_ (Note [resize_]): PyTorch's semantics of growing and shrinking in place, the
// storage shared with views, the refusals, the graph break under compile, and the
// importer's functional form.
#include <gtest/gtest.h>

#include <vector>

#include "ember/ember.h"
#include "support/error_of.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::error_of;

TEST(Resize, GrowingKeepsTheValuesAndGivesContiguousStrides) {
  Tensor x = arange(6, kFloat);
  const void* before = x.raw_data_ptr();
  x.resize_({2, 5});
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(x.strides().vec(), (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(x.storage()->nbytes(), 40u);
  EXPECT_NE(x.raw_data_ptr(), before);  // new memory: six floats did not fit ten
  const std::vector<float> v = x.reshape({-1}).to_vector<float>();
  EXPECT_EQ(std::vector<float>(v.begin(), v.begin() + 6), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(Resize, ViewsShareTheGrownStorageAndKeepTheirGeometry) {
  Tensor x = arange(6, kFloat);
  Tensor v = x.slice(0, 1, 3);
  x.resize_({4, 4});
  EXPECT_EQ(v.storage(), x.storage());
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{2}));
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{1, 2}));
  // A write through the resized tensor shows in the view: one memory.
  x.select(0, 0).fill_(7);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{7, 7}));
}

TEST(Resize, ShrinkingKeepsTheStorageAndItsOffset) {
  Tensor base = arange(24, kFloat).reshape({2, 3, 4});
  Tensor x = base.select(1, 1);  // sizes [2, 4], strides [12, 1], offset 4
  x.resize_({3, 3});
  EXPECT_EQ(x.strides().vec(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(x.storage_offset(), 4);
  EXPECT_EQ(x.storage()->nbytes(), 96u);
  EXPECT_EQ(x.reshape({-1}).to_vector<float>(), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11, 12}));
  x.resize_({0});
  EXPECT_EQ(x.numel(), 0);
  EXPECT_EQ(x.storage()->nbytes(), 96u);
}

TEST(Resize, EqualSizesKeepTheStridesUnlessAMemoryFormatIsGiven) {
  Tensor x = arange(6, kFloat).reshape({2, 3}).t();  // [3, 2] strides [1, 3]
  x.resize_({3, 2});
  EXPECT_EQ(x.strides().vec(), (std::vector<int64_t>{1, 3}));
  x.resize_({3, 2}, MemoryFormat::Contiguous);
  EXPECT_EQ(x.strides().vec(), (std::vector<int64_t>{2, 1}));
  Tensor y = empty({2, 3, 4, 5});
  y.resize_({2, 3, 4, 5}, MemoryFormat::ChannelsLast);
  EXPECT_EQ(y.strides().vec(), (std::vector<int64_t>{60, 1, 15, 3}));
}

TEST(Resize, CountsAsAWriteForAutograd) {
  Tensor x = ones({3});
  const uint64_t v = x._version();
  x.resize_({5});
  EXPECT_EQ(x._version(), v + 1);
}

TEST(Resize, RefusesBadInputAndLeavesTheTensorAsItWas) {
  Tensor x = ones({2, 3});
  EXPECT_NE(error_of([&] { x.resize_({-1, 2}); }).find("negative dimension -1"), std::string::npos);
  EXPECT_NE(error_of([&] { x.resize_({6}, MemoryFormat::Preserve); }).find("Unsupported memory format Preserve"),
            std::string::npos);
  EXPECT_NE(error_of([&] { x.resize_({6}, MemoryFormat::ChannelsLast); }).find("required rank 4"), std::string::npos);
  EXPECT_NE(error_of([&] { x.resize_({int64_t{1} << 62, 8}); }).find("more elements than fit"), std::string::npos);
  Tensor w = ones({3});
  w.requires_grad_();
  EXPECT_NE(error_of([&] { w.resize_({4}); }).find("cannot resize variables that require grad"), std::string::npos);
  {
    NoGradGuard no_grad;  // refused in any grad mode, as PyTorch
    EXPECT_NE(error_of([&] { w.resize_({4}); }).find("cannot resize variables that require grad"), std::string::npos);
  }
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w.sizes().vec(), (std::vector<int64_t>{3}));
}

TEST(Resize, MemoryFromElsewhereCanShrinkButNotGrow) {
  std::vector<float> data = {1, 2, 3};
  Tensor x = from_blob(data.data(), {3}, kFloat);
  x.resize_({2});
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2}));
  const std::string msg = error_of([&] { x.resize_({10}); });
  EXPECT_NE(msg.find("Trying to resize storage that is not resizable"), std::string::npos) << msg;
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{2}));  // unchanged by the failed call
}

TEST(Resize, MetaTensorsChangeGeometryOnly) {
  Tensor m = empty({3}, kMeta);
  m.resize_({5, 5});
  EXPECT_EQ(m.sizes().vec(), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(m.strides().vec(), (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(m.storage()->nbytes(), 100u);
}

TEST(Resize, InsideACompiledFunctionBreaksTheGraphAndEqualsEager) {
  auto fn = [](const Tensor& x) {
    Tensor y = x * 2;
    y.resize_({2, 2});
    return y + 1;
  };
  const Tensor x = arange(6, kFloat);
  auto out = explain(fn)(x);
  ASSERT_EQ(out.break_reasons.size(), 1u);
  EXPECT_EQ(out.break_reasons[0].reason.rfind("GB0011:", 0), 0u) << out.break_reasons[0].reason;
  auto compiled = compile(fn, {.backend = "inductor"});
  for (int call = 0; call < 2; ++call) {
    const Tensor got = compiled(x);
    EXPECT_EQ(got.sizes().vec(), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(got.reshape({-1}).to_vector<float>(), (std::vector<float>{1, 3, 5, 7}));
  }
}

TEST(Resize, OfACompiledFunctionsArgumentRunsEagerlyOrRaisesUnderFullgraph) {
  // The function's handle on x is its own, so the caller's x would keep its size: capture
  // refuses it and runs the function eagerly, where x itself is resized, as eager would.
  auto fn = [](const Tensor& x) {
    Tensor y = x;
    y.resize_({8});
    return y.narrow(0, 0, 3) * 2;
  };
  testing::LogCapture logs;
  Tensor x = arange(3, kFloat);
  const Tensor got = compile(fn)(x);
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{8}));
  EXPECT_EQ(got.to_vector<float>(), (std::vector<float>{0, 2, 4}));
  EXPECT_NE(logs.text().find("resize_ of an argument of the compiled function"), std::string::npos) << logs.text();

  Tensor z = arange(3, kFloat);
  const std::string msg = error_of([&] { compile(fn, {.fullgraph = true})(z); }, ErrorKind::Unsupported);
  EXPECT_NE(msg.find("resize_ of an argument of the compiled function"), std::string::npos) << msg;
  EXPECT_NE(msg.find("resize_test.cpp"), std::string::npos) << msg;
  EXPECT_EQ(z.sizes().vec(), (std::vector<int64_t>{3}));
}

TEST(Resize, GrowsCudaStorageKeepingItsValues) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine";
  Tensor x = arange(6, kFloat).cuda();
  x.resize_({3, 4});
  const std::vector<float> v = x.cpu().reshape({-1}).to_vector<float>();
  EXPECT_EQ(std::vector<float>(v.begin(), v.begin() + 6), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(x.is_cuda());
}

}  // namespace
}  // namespace ember
