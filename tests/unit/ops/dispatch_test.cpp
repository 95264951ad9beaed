// The single dispatch path: what a layer above the backend sees.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "ops/dispatch.h"

namespace ember::ops {
namespace {

std::vector<std::string>& seen() {
  static std::vector<std::string> names;
  return names;
}

Stack recording_layer(const OpDef& op, Stack& args) {
  seen().push_back(op.name);
  return redispatch(DispatchLayer::Capture, op, args);
}

/// Installs the recording layer as the capture layer for one test, and puts back the handler
/// it replaced (capture's own, once an earlier test in the process has compiled something).
class RecordingLayer {
 public:
  RecordingLayer() : previous_(set_layer_handler(DispatchLayer::Capture, recording_layer)) { seen().clear(); }
  ~RecordingLayer() { set_layer_handler(DispatchLayer::Capture, previous_); }

 private:
  LayerHandler previous_;
};

TEST(Dispatch, ALayerInstalledForAScopeGivesBackTheHandlerItReplaced) {
  // Capture installs its layer once per process; a scope that swaps in another must not
  // leave the slot empty, or every later compile in the process traces nothing.
  const LayerHandler before = set_layer_handler(DispatchLayer::Capture, recording_layer);
  { RecordingLayer layer; }
  EXPECT_EQ(set_layer_handler(DispatchLayer::Capture, before), &recording_layer);
}

TEST(Dispatch, LayersSeeTheUsersOpsButNotKernelInternals) {
  Tensor a = ones({4}, kInt32), b = ones({4}, kFloat);
  RecordingLayer layer;
  Tensor c = a + b;  // the kernel casts `a` to float32 internally
  EXPECT_EQ(seen(), (std::vector<std::string>{"aten::add.Tensor"}));
  EXPECT_EQ(c.dtype(), kFloat);
}

TEST(Dispatch, CompositeOpsReachLayersAsTheirDecomposition) {
  Tensor a = ones({2, 3});
  RecordingLayer layer;
  (void)a.t().reshape({6});  // not viewable: clone + view
  EXPECT_EQ(seen(), (std::vector<std::string>{"aten::transpose.int", "aten::clone", "aten::view"}));
}

TEST(Dispatch, InPlaceOpsReachLayersFunctionalized) {
  Tensor a = ones({3});
  RecordingLayer layer;
  a.add_(ones({3}));
  // ones() is itself a composite over full; add_ is add followed by copy_.
  ASSERT_GE(seen().size(), 3u);
  EXPECT_EQ(seen()[seen().size() - 2], "aten::add.Tensor");
  EXPECT_EQ(seen().back(), "aten::copy_");
}

TEST(Dispatch, ExcludedLayersAreSkipped) {
  RecordingLayer layer;
  {
    ExcludeLayerGuard guard(DispatchLayer::Capture);
    (void)exp(ones({2}));
  }
  EXPECT_TRUE(seen().empty());
  (void)exp(zeros({2}));
  EXPECT_FALSE(seen().empty());
}

}  // namespace
}  // namespace ember::ops
