// amp::GradScaler on CUDA tensors: the scale and the growth tracker live on the device, the
// inf check and the scale update run there, and a run of steps gives the parameters and
// scales a CPU scaler gives for the same gradients. Values are powers of two and small
// integers, so unscaling and the SGD update are exact on both devices.
#include <cmath>
#include <vector>

#include "gpu_helpers.h"

namespace ember::gpu_test {
namespace {

using amp::GradScaler;

/// Whether two CPU tensors hold the same values (no NaN here).
bool same_values(const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes() && all(a == b).item<bool>(); }

/// One parameter on `device` whose gradient the test sets, and an SGD over it.
struct OneParam {
  explicit OneParam(Device device)
      : p(tensor<float>({1.0f, -2.0f, 0.5f, 4.0f}).to(device).detach().requires_grad_()),
        opt({p}, {.lr = 0.5}) {}
  Tensor p;
  optim::SGD opt;
  void set_grad(const std::vector<float>& g, double scale) {
    p.mutable_grad() = (tensor<float>(g) * scale).to(p.device());
  }
};

TEST_F(Gpu, GradScalerKeepsItsStateOnTheDeviceAndSkipsStepsWithInfOrNaNGradients) {
  OneParam m(Device("cuda"));
  GradScaler scaler(kCUDA, {.init_scale = 1024.0, .growth_interval = 2});
  const Tensor loss = tensor<float>({0.25f}).cuda();
  const Tensor scaled = scaler.scale(loss);
  EXPECT_TRUE(scaled.is_cuda());
  EXPECT_TRUE(scaler.scale_tensor().is_cuda());
  EXPECT_EQ(scaled.cpu().item<float>(), 256.0f);
  for (float bad : {INFINITY, -INFINITY, NAN}) {
    const Tensor before = m.p.detach().cpu();
    m.set_grad({1.0f, bad, 2.0f, 0.0f}, scaler.get_scale());
    EXPECT_FALSE(scaler.step(m.opt)) << bad;
    EXPECT_TRUE(same_values(m.p.detach().cpu(), before)) << "the parameter is untouched after " << bad;
    const double scale_before = scaler.get_scale();
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), scale_before * 0.5) << bad;
  }
}

TEST_F(Gpu, GradScalerStepsOnCudaGiveTheCpuScalersParametersAndScales) {
  OneParam gpu(Device("cuda")), cpu(kCPU);
  GradScaler gs(kCUDA, {.init_scale = 256.0, .growth_interval = 2});
  GradScaler cs(kCPU, {.init_scale = 256.0, .growth_interval = 2});
  gs.scale(tensor<float>({1.0f}).cuda());
  cs.scale(tensor<float>({1.0f}));
  const bool inf_at[] = {false, false, false, true, false, false, true, false};
  for (int i = 0; i < 8; ++i) {
    const std::vector<float> g = {1.0f, inf_at[i] ? INFINITY : -2.0f, 0.5f, 4.0f};
    gpu.set_grad(g, gs.get_scale());
    cpu.set_grad(g, cs.get_scale());
    EXPECT_EQ(gs.step(gpu.opt), cs.step(cpu.opt)) << "step " << i;
    gs.update();
    cs.update();
    EXPECT_EQ(gs.get_scale(), cs.get_scale()) << "step " << i;
    EXPECT_EQ(gs.growth_tracker(), cs.growth_tracker()) << "step " << i;
    EXPECT_TRUE(same_values(gpu.p.detach().cpu(), cpu.p.detach())) << "step " << i;
  }
}

}  // namespace
}  // namespace ember::gpu_test
