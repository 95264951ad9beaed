// CUDA kernel source rendered from scalar_ops.def rows, and NVRTC compiling it for sm_90
// (NVRTC needs no GPU, so this runs on any machine of a CUDA build).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "ember/config.h"
#include "ember/error.h"
#include "kernels/cuda/kernel_source.h"
#include "kernels/cuda/nvrtc.h"
#include "nvrtc_fixture.h"

namespace ember::kernels::cuda {
namespace {

struct Row {
  const char* name;
  int arity;
  const char* expr;
};
const std::vector<Row>& rows() {
  static const std::vector<Row> r = {
#define EMBER_UNARY(name, kind, expr) {#name, 1, #expr},
#define EMBER_BINARY(name, kind, expr) {#name, 2, #expr},
#include "ops/scalar_ops.def"
#undef EMBER_UNARY
#undef EMBER_BINARY
  };
  return r;
}

PointwiseKernel kernel_for(const Row& row, ScalarType in, ScalarType compute, ScalarType out) {
  return PointwiseKernel{.name = row.name, .expr = row.expr, .helpers = {},
                         .inputs = std::vector<ScalarType>(static_cast<size_t>(row.arity), in), .compute = compute,
                         .out = out};
}

const Row& row(std::string_view name) {
  for (const Row& r : rows())
    if (name == r.name) return r;
  throw std::runtime_error("no row " + std::string(name));
}

int count(const std::string& s, char c) { return static_cast<int>(std::count(s.begin(), s.end(), c)); }

TEST(CudaKernelSource, UnaryRowRendersItsExpressionAndAnExternCKernel) {
  const PointwiseKernel k = kernel_for(row("sigmoid"), kHalf, kHalf, kHalf);
  const std::string src = render_pointwise(k);
  EXPECT_EQ(kernel_symbol(k), "ember_pointwise_sigmoid_f16_f16_to_f16");
  EXPECT_NE(src.find("extern \"C\" __global__ void ember_pointwise_sigmoid_f16_f16_to_f16(ember_dev::Half* out, "
                     "const ember_dev::Half* in0, double p0, ember_dev::Geometry g)"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("return quick_div_(T(1), T(1) + exp(-x));"), std::string::npos) << src;
  // Half computes in float, as the CPU kernels do.
  EXPECT_NE(src.find("typedef ember_dev::OpMath<C>::type T;"), std::string::npos);
  EXPECT_EQ(count(src, '{'), count(src, '}'));
  EXPECT_EQ(count(src, '('), count(src, ')'));
}

// Note [quick division]: sigmoid and silu divide through quick_div_, which takes the MUFU
// reciprocal for float (the type Half and BFloat16 compute in) and divides otherwise.
TEST(CudaKernelSource, SigmoidAndSiluDivideByTheFloatReciprocalApproximation) {
  for (const char* name : {"sigmoid", "silu"}) {
    const std::string src = render_pointwise(kernel_for(row(name), kFloat, kFloat, kFloat));
    EXPECT_NE(src.find("quick_div_("), std::string::npos) << name;
    const size_t def = src.find("__device__ __forceinline__ T quick_div_(T a, T b)");
    ASSERT_NE(def, std::string::npos) << src;
    const std::string body = src.substr(def, src.find("\n}\n", def) - def);
    EXPECT_NE(body.find("if constexpr (Same<T, float>::value)"), std::string::npos) << body;
    EXPECT_NE(body.find("rcp.approx.ftz.f32"), std::string::npos) << body;
    EXPECT_NE(body.find("return a / b;"), std::string::npos) << body;
  }
}

TEST(CudaKernelSource, BinaryRowReadsEachInputInItsOwnDtype) {
  PointwiseKernel k = kernel_for(row("add"), kInt32, kFloat, kFloat);
  k.inputs = {kInt32, kFloat};
  const std::string src = render_pointwise(k);
  EXPECT_NE(src.find("const int* in0, const float* in1, double p0"), std::string::npos) << src;
  EXPECT_NE(src.find("const T a = ember_dev::cvt<T>(ember_dev::cvt<C>(in0[off[1]]));"), std::string::npos) << src;
  EXPECT_NE(src.find("const T b = ember_dev::cvt<T>(ember_dev::cvt<C>(in1[off[2]]));"), std::string::npos) << src;
  EXPECT_NE(src.find("return a + T(p0) * b;"), std::string::npos) << src;
}

TEST(CudaKernelSource, CompareRowWritesBool) {
  const PointwiseKernel k = kernel_for(row("lt"), kBFloat16, kBFloat16, kBool);
  const std::string src = render_pointwise(k);
  EXPECT_NE(src.find("(bool* out, const ember_dev::BFloat16* in0, const ember_dev::BFloat16* in1"), std::string::npos);
  EXPECT_NE(src.find("out[off[0]] = ember_dev::cvt<bool>("), std::string::npos);
}

TEST(CudaKernelSource, LayoutsNameTheirSymbolAndSignature) {
  PointwiseKernel k = kernel_for(row("mul"), kFloat, kFloat, kFloat);
  const PointwiseLayout contiguous{.contiguous = true, .vec = 4, .inputs = {Access::Dense, Access::Value}};
  EXPECT_EQ(kernel_symbol(k, contiguous), "ember_pointwise_mul_f32_f32_f32_to_f32_c4_dv");
  const std::string src = render_pointwise(k, contiguous);
  EXPECT_NE(src.find("(float* out, const float* in0, unsigned long long in1, double p0, long long n, int aligned)"),
            std::string::npos)
      << src;
  // The value is read once, before the loops; the dense input once per vector.
  EXPECT_NE(src.find("const T b = ember_dev::cvt<T>(ember_dev::cvt<C>(ember_dev::from_bits<float>(in1)));"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("reinterpret_cast<const ember_dev::Vec<float, 4>*>(in0)[v]"), std::string::npos) << src;
  const PointwiseLayout strided{.contiguous = false, .vec = 1, .inputs = {Access::Strided, Access::Value}};
  EXPECT_EQ(kernel_symbol(k, strided), "ember_pointwise_mul_f32_f32_f32_to_f32_s_sv");
  EXPECT_NE(render_pointwise(k, strided).find("long long off[2] = {};"), std::string::npos);
  // The plain strided layout keeps the plain symbol.
  EXPECT_EQ(kernel_symbol(k, strided_layout(k)), kernel_symbol(k));
}

// Kernels are looked up by symbol, which spells the kernel's name, not its formula: each
// name must stand for one formula. The rows' names, and those the ops and libraries give
// their own formulas (loops.cpp, ops/pointwise.cpp, gemm.cpp, conv.cpp), are all distinct.
TEST(CudaKernelSource, EveryKernelNameStandsForOneFormula) {
  std::set<std::string> names = {"copy", "where", "clamp", "gelu", "gelu_tanh", "scale", "zero", "add_bias"};
  const size_t own = names.size();
  for (const Row& r : rows()) EXPECT_TRUE(names.insert(r.name).second) << r.name << " names two formulas";
  EXPECT_EQ(names.size(), own + rows().size());
}

TEST(CudaKernelSource, RowFunctionsComposeForClamp) {
  const std::string f = render_row_function("maximum", 2, row("maximum").expr);
  EXPECT_EQ(f, "template <typename T> __device__ __forceinline__ auto row_maximum(T a, T b, double p0) { return "
               "where(a != a, a, where(a > b, a, b)); }\n");
}


TEST_F(Nvrtc, EveryRowCompilesForSm90InFloat32) {
  for (const Row& r : rows()) {
    const std::string n = r.name;
    if (n.starts_with("bitwise_")) continue;  // integers only: below
    const bool bool_out = n == "logical_not" || n == "isnan" || n == "eq" || n == "ne" || n == "lt" || n == "le" ||
                          n == "gt" || n == "ge" || n.starts_with("logical_");
    const PointwiseKernel k = kernel_for(r, kFloat, kFloat, bool_out ? kBool : kFloat);
    const CubinResult c = compile_cubin(render_pointwise(k), "sm_90");
    EXPECT_GT(c.cubin.size(), 0u) << r.name;
    EXPECT_EQ(c.cubin.substr(1, 3), "ELF") << r.name;
  }
}

TEST_F(Nvrtc, ContiguousAndValueLayoutsCompileForEveryOperandKindAndDtype) {
  const std::vector<PointwiseLayout> layouts = {
      {.contiguous = true, .vec = 4, .inputs = {Access::Dense, Access::Dense}},
      {.contiguous = true, .vec = 8, .inputs = {Access::Dense, Access::Value}},
      {.contiguous = true, .vec = 2, .inputs = {Access::Broadcast, Access::Dense}},
      {.contiguous = false, .vec = 1, .inputs = {Access::Value, Access::Strided}}};
  for (ScalarType t : {kFloat, kHalf, kBFloat16, kDouble, kInt64, kBool}) {
    for (const PointwiseLayout& layout : layouts) {
      const PointwiseKernel k = kernel_for(row("add"), t, t, t);
      const CubinResult c = compile_cubin(render_pointwise(k, layout), "sm_90");
      EXPECT_EQ(c.cubin.substr(1, 3), "ELF") << kernel_symbol(k, layout);
    }
  }
}

TEST_F(Nvrtc, RowsCompileForEveryDtypeTheirKindAllows) {
  const std::vector<std::pair<const char*, std::vector<ScalarType>>> cases = {
      {"add", {kHalf, kBFloat16, kDouble, kInt64, kInt8, kUInt8, kBool}},
      {"remainder", {kHalf, kInt32, kInt64}},
      {"div_floor", {kBFloat16, kInt16}},
      {"pow", {kInt64, kDouble}},
      {"bitwise_xor", {kInt32, kBool}},
      {"bitwise_not", {kUInt8, kBool}},
      {"abs", {kInt8, kHalf}},
      {"round", {kInt64, kBFloat16}},
      {"sign", {kBool, kInt32}},
  };
  for (const auto& [name, dtypes] : cases) {
    for (ScalarType t : dtypes) {
      const CubinResult c = compile_cubin(render_pointwise(kernel_for(row(name), t, t, t)), "sm_90");
      EXPECT_GT(c.cubin.size(), 0u) << name << " " << t;
    }
  }
}

TEST_F(Nvrtc, CubinsAreCachedOnDiskByTheirKey) {
  const std::string src = render_pointwise(kernel_for(row("exp"), kFloat, kFloat, kFloat));
  const CubinResult first = compile_cubin(src, "sm_90");
  EXPECT_FALSE(first.from_cache);
  EXPECT_TRUE(std::filesystem::exists(first.path));
  EXPECT_EQ(std::filesystem::path(first.path).parent_path(), dir_ / "cuda");
  const CubinResult again = compile_cubin(src, "sm_90");
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.cubin, first.cubin);
  // Another architecture is another key.
  const CubinResult other = compile_cubin(src, "sm_80");
  EXPECT_FALSE(other.from_cache);
  EXPECT_NE(other.path, first.path);
}

TEST_F(Nvrtc, GeneratedSourceThatDoesNotCompileIsAnInternalErrorWithTheLog) {
  PointwiseKernel k = kernel_for(row("exp"), kFloat, kFloat, kFloat);
  k.expr = "no_such_function(x)";
  try {
    compile_cubin(render_pointwise(k), "sm_90");
    ADD_FAILURE() << "expected a compile error";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_function"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember::kernels::cuda
