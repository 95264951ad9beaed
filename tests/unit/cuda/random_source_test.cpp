// The CUDA random kernels: their source is kernels/cpu/philox.h's own text plus the
// per-counter bodies, their symbols, and NVRTC compiling every kind for every dtype the
// ops take, for sm_90 (no GPU needed).
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/random.h"
#include "nvrtc_fixture.h"
#include "ops/registry.h"

namespace ember::kernels::cuda {
namespace {

TEST(CudaRandomSource, KernelsCompilePhiloxHeadersOwnText) {
  const std::string header = kEmbeddedPhiloxHeader;
  ASSERT_NE(header.find("EMBER_PHILOX_HD inline Words philox4x32_10(Words c, uint32_t k0, uint32_t k1)"),
            std::string::npos);
  const std::string src = render_random(RandomKernel{.kind = RandomKind::Normal, .out = kHalf});
  // Everything after `#pragma once` is the header verbatim.
  const std::string body = header.substr(header.find("#pragma once") + std::string("#pragma once").size());
  EXPECT_NE(src.find(body), std::string::npos);
  EXPECT_EQ(src.find("#pragma once"), std::string::npos) << "NVRTC compiles it as a main file";
}

TEST(CudaRandomSource, SymbolsNameKindAndDtypes) {
  EXPECT_EQ(kernel_symbol(RandomKernel{.kind = RandomKind::Uniform, .out = kFloat}), "ember_rand_f32");
  EXPECT_EQ(kernel_symbol(RandomKernel{.kind = RandomKind::Normal, .out = kBFloat16}), "ember_randn_bf16");
  EXPECT_EQ(kernel_symbol(RandomKernel{.kind = RandomKind::Bernoulli, .out = kHalf, .has_in = true, .in = kHalf}),
            "ember_bernoulli_f16_to_f16");
  EXPECT_EQ(kernel_symbol(RandomKernel{.kind = RandomKind::Bernoulli, .out = kInt64}), "ember_bernoulli_scalar_to_i64");
  EXPECT_EQ(kernel_symbol(RandomKernel{.kind = RandomKind::Dropout, .out = kDouble, .has_in = true, .in = kDouble}),
            "ember_dropout_f64");
}

TEST(CudaRandomSource, DoublesTakeTwoElementsPerCounterAsOnTheCpu) {
  EXPECT_EQ(elements_per_counter(RandomKind::Uniform, kDouble), 2);
  EXPECT_EQ(elements_per_counter(RandomKind::Normal, kDouble), 2);
  EXPECT_EQ(elements_per_counter(RandomKind::Uniform, kHalf), 4);
  EXPECT_EQ(elements_per_counter(RandomKind::Bernoulli, kDouble), 4);
  EXPECT_EQ(elements_per_counter(RandomKind::Dropout, kDouble), 4);
}

TEST(CudaFacets, TheRandomOpsHaveCudaKernels) {
  for (const char* n : {"rand", "randn", "rand_like", "randn_like", "bernoulli", "bernoulli.p", "native_dropout", "randperm"}) {
    const ops::OpDef& op = ops::registry().get(std::string("aten::") + n);
    EXPECT_TRUE(static_cast<bool>(op.cuda)) << n << " has no CUDA kernel";
    EXPECT_TRUE(op.cuda_site.present()) << n;
  }
}

TEST_F(Nvrtc, EveryRandomKernelCompilesForSm90) {
  for (ScalarType t : {kFloat, kHalf, kBFloat16, kDouble}) {
    for (RandomKind kind : {RandomKind::Uniform, RandomKind::Normal}) {
      const RandomKernel k{.kind = kind, .out = t};
      EXPECT_EQ(compile_cubin(render_random(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
    }
    const RandomKernel b{.kind = RandomKind::Bernoulli, .out = t, .has_in = true, .in = t};
    EXPECT_EQ(compile_cubin(render_random(b), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(b);
    const RandomKernel d{.kind = RandomKind::Dropout, .out = t, .has_in = true, .in = t};
    EXPECT_EQ(compile_cubin(render_random(d), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(d);
  }
  // bernoulli.p keeps any dtype, bool and integers included.
  for (ScalarType t : {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat}) {
    const RandomKernel k{.kind = RandomKind::Bernoulli, .out = t};
    EXPECT_EQ(compile_cubin(render_random(k), "sm_90").cubin.substr(1, 3), "ELF") << kernel_symbol(k);
  }
}

}  // namespace
}  // namespace ember::kernels::cuda
