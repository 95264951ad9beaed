// Every pointwise op with a CUDA kernel against Ember's CPU result on the same inputs:
// each dtype its kind allows, broadcasting, non-contiguous inputs, Scalar overloads,
// mixed dtypes (promotion), in-place forms, where, clamp, masked_fill, and CPU scalars
// beside CUDA tensors. The same error where the CPU raises.
#include <cfloat>
#include <cstdio>

#include "gpu_helpers.h"

namespace ember::gpu_test {
namespace {

const std::vector<ScalarType> kDtypes = {kFloat, kDouble, kHalf, kBFloat16, kInt32, kInt64, kInt16, kInt8, kUInt8, kBool};

/// A [4, 5] tensor of `dtype` with negative, zero, fractional and larger values.
Tensor sample(ScalarType dtype, double shift = 0) {
  Tensor t = linspace(-4.5 + shift, 5.0 + shift, 20, kDouble).reshape({4, 5});
  if (dtype == kBool) return gt(t, 0.0);
  if (dtype == kUInt8) return abs(t).to(dtype);
  return t.to(dtype);
}

std::vector<std::string> unary_ops() {
  return {
#define EMBER_UNARY(name, kind, expr) "aten::" #name,
#define EMBER_BINARY(name, kind, expr)
#include "ops/scalar_ops.def"
#undef EMBER_UNARY
#undef EMBER_BINARY
  };
}

const std::vector<std::string> kBinaryTensorOps = {
    "aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor", "aten::div.Tensor", "aten::_div_trunc",
    "aten::_div_floor", "aten::remainder.Tensor", "aten::fmod.Tensor", "aten::pow.Tensor_Tensor", "aten::maximum",
    "aten::minimum", "aten::atan2", "aten::eq.Tensor", "aten::ne.Tensor", "aten::lt.Tensor", "aten::le.Tensor",
    "aten::gt.Tensor", "aten::ge.Tensor", "aten::logical_and", "aten::logical_or", "aten::logical_xor",
    "aten::bitwise_and.Tensor", "aten::bitwise_or.Tensor", "aten::bitwise_xor.Tensor"};
const std::vector<std::string> kBinaryScalarOps = {
    "aten::add.Scalar", "aten::sub.Scalar", "aten::mul.Scalar", "aten::div.Scalar", "aten::remainder.Scalar",
    "aten::fmod.Scalar", "aten::pow.Tensor_Scalar", "aten::eq.Scalar", "aten::ne.Scalar", "aten::lt.Scalar",
    "aten::le.Scalar", "aten::gt.Scalar", "aten::ge.Scalar", "aten::bitwise_and.Scalar", "aten::bitwise_or.Scalar",
    "aten::bitwise_xor.Scalar"};

class CudaPointwise : public Gpu {};

TEST_F(CudaPointwise, EveryUnaryRowMatchesTheCpuForEveryDtype) {
  for (const auto& op : unary_ops()) {
    for (ScalarType t : kDtypes) {
      const std::string m = compare(op, {sample(t)});
      EXPECT_TRUE(m.empty()) << m << " (" << t << ")";
    }
  }
}

TEST_F(CudaPointwise, UnaryOpsOnNonContiguousInputsKeepTheCpusLayout) {
  for (const auto& op : unary_ops()) {
    const std::string m = compare(op, {sample(kFloat).t()});
    EXPECT_TRUE(m.empty()) << m;
    const std::string s = compare(op, {sample(kFloat).slice(1, 0, 5, 2)});
    EXPECT_TRUE(s.empty()) << s;
  }
}

TEST_F(CudaPointwise, EveryBinaryTensorOpMatchesTheCpuForEveryDtype) {
  for (const auto& op : kBinaryTensorOps) {
    for (ScalarType t : kDtypes) {
      const std::string m = compare(op, {sample(t), sample(t, 0.75)});
      EXPECT_TRUE(m.empty()) << m << " (" << t << ")";
    }
  }
}

TEST_F(CudaPointwise, BinaryOpsBroadcastAndReadNonContiguousInputs) {
  for (const auto& op : kBinaryTensorOps) {
    const Tensor row = linspace(0.5, 3.0, 5, kFloat);  // [5] against [4, 5]
    std::string m = compare(op, {sample(kFloat), row});
    EXPECT_TRUE(m.empty()) << m;
    const Tensor col = linspace(1.0, 2.5, 4, kFloat).reshape({4, 1});
    m = compare(op, {col, row});  // [4, 1] against [5]: [4, 5]
    EXPECT_TRUE(m.empty()) << m;
    const Tensor transposed = sample(kFloat, 0.3).reshape({5, 4}).t();
    m = compare(op, {sample(kFloat), transposed});
    EXPECT_TRUE(m.empty()) << m;
  }
}

TEST_F(CudaPointwise, MixedDtypesPromoteAsOnTheCpu) {
  const std::vector<std::pair<ScalarType, ScalarType>> pairs = {
      {kInt32, kHalf}, {kFloat, kDouble}, {kBool, kInt64}, {kUInt8, kInt8}, {kBFloat16, kHalf}, {kInt64, kFloat}};
  for (const auto& op : kBinaryTensorOps) {
    for (const auto& [x, y] : pairs) {
      const std::string m = compare(op, {sample(x), sample(y, 0.75)});
      EXPECT_TRUE(m.empty()) << m << " (" << x << ", " << y << ")";
    }
  }
}

TEST_F(CudaPointwise, ScalarOverloadsMatchTheCpu) {
  for (const auto& op : kBinaryScalarOps) {
    for (ScalarType t : kDtypes) {
      for (const Scalar& s : {Scalar(int64_t{3}), Scalar(2.5), Scalar(true)}) {
        const std::string m = compare(op, {sample(t), s});
        EXPECT_TRUE(m.empty()) << m << " (" << t << ", " << s << ")";
      }
    }
  }
}

TEST_F(CudaPointwise, AlphaScalesTheSecondOperand) {
  const std::string m = compare("aten::add.Tensor", {sample(kFloat), sample(kFloat, 1), Scalar(-2.5)});
  EXPECT_TRUE(m.empty()) << m;
  const std::string s = compare("aten::sub.Scalar", {sample(kInt64), Scalar(int64_t{4}), Scalar(int64_t{3})});
  EXPECT_TRUE(s.empty()) << s;
}

TEST_F(CudaPointwise, ZeroDimCpuTensorsMayJoinCudaTensors) {
  const std::string m = compare("aten::mul.Tensor", {sample(kFloat), scalar_tensor(3.0, kDouble)});
  EXPECT_TRUE(m.empty()) << m;
  Tensor g = sample(kHalf).cuda();
  Tensor r = add(g, scalar_tensor(1.0));
  EXPECT_TRUE(r.is_cuda());
  EXPECT_EQ(r.dtype(), kHalf);
  const Tensor both_0dim = mul(scalar_tensor(2.0), scalar_tensor(3.0, TensorOptions().device("cuda")));
  EXPECT_TRUE(both_0dim.is_cuda());
  EXPECT_EQ(both_0dim.item().to_double(), 6.0);
}

// Contiguous calls run the vectorized kernel: every length around the vector width (the
// remainder loop), starts off the vector alignment (the unaligned loop), Scalars passed by
// value and 0-dim CUDA tensors read once per thread.
TEST_F(CudaPointwise, ContiguousKernelsCoverEveryLengthStartAndOperandKind) {
  for (ScalarType t : {kFloat, kHalf, kInt64, kBool}) {
    for (int64_t n : {1, 3, 7, 8, 9, 17, 1023, 1025, 4099}) {
      for (int64_t start : {0, 1, 3}) {
        const Tensor base = random_values({n + start}, t, -3, 3, static_cast<uint64_t>(n + start));
        const Tensor other = random_values({n + start}, t, -3, 3, 5);
        const Tensor gpu_base = base.cuda(), gpu_other = other.cuda();
        const Tensor x = base.slice(0, start, n + start), y = other.slice(0, start, n + start);
        const Tensor gx = gpu_base.slice(0, start, n + start), gy = gpu_other.slice(0, start, n + start);
        const std::string where = " (" + std::string(dtype_name(t)) + ", length " + std::to_string(n) + ", start " +
                                  std::to_string(start) + ")";
        for (const std::string& m :
             {compare(t == kBool ? "aten::logical_not" : "aten::neg", {x}, {gx}),
              compare("aten::mul.Tensor", {x, y}, {gx, gy}),
              compare("aten::mul.Tensor", {x, y.slice(0, 0, 1).reshape({})}, {gx, gy.slice(0, 0, 1).reshape({})}),
              compare("aten::mul.Scalar", {x, Scalar(int64_t{3})}, {gx, Scalar(int64_t{3})}),
              compare("aten::add.Tensor", {x, scalar_tensor(2.0, kDouble)}, {gx, scalar_tensor(2.0, kDouble)}),
              compare("aten::lt.Tensor", {x, y}, {gx, gy}),
              compare("aten::_to_copy", {x, kDouble}, {gx, kDouble})})
          EXPECT_TRUE(m.empty()) << m << where;
      }
    }
  }
}

TEST_F(CudaPointwise, InPlaceFormsWriteIntoTheCudaTensor) {
  Tensor cpu = sample(kFloat);
  Tensor gpu = cpu.cuda();
  const void* before = gpu.storage()->data();
  cpu.add_(sample(kFloat, 1), 2.0);
  gpu.add_(sample(kFloat, 1).cuda(), 2.0);
  cpu.mul_(1.5);
  gpu.mul_(1.5);
  cpu.sin_();
  gpu.sin_();
  EXPECT_EQ(gpu.storage()->data(), before);
  EXPECT_TRUE(mismatch(gpu, cpu).empty()) << mismatch(gpu, cpu);
  // Into a non-contiguous view: only the viewed elements change.
  Tensor base_cpu = sample(kDouble);
  Tensor base_gpu = base_cpu.cuda();
  Tensor view_cpu = base_cpu.slice(1, 1, 5, 2);
  Tensor view_gpu = base_gpu.slice(1, 1, 5, 2);
  view_cpu.neg_();
  view_gpu.neg_();
  EXPECT_TRUE(mismatch(base_gpu, base_cpu).empty()) << mismatch(base_gpu, base_cpu);
}

TEST_F(CudaPointwise, WhereClampAndMaskedFillMatchTheCpu) {
  const Tensor cond = gt(sample(kFloat), 0.3);
  for (ScalarType t : {kFloat, kHalf, kInt64, kBool}) {
    std::string m = compare("aten::where.self", {cond, sample(t), sample(t, 2)});
    EXPECT_TRUE(m.empty()) << m;
    m = compare("aten::where.ScalarOther", {cond, sample(t), Scalar(7)});
    EXPECT_TRUE(m.empty()) << m;
    m = compare("aten::masked_fill.Scalar", {sample(t), cond, Scalar(-1)});
    EXPECT_TRUE(m.empty()) << m;
  }
  Tensor nan_input = sample(kFloat);
  nan_input = where(eq(nan_input, 0.5), scalar_tensor(NAN), nan_input);
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kInt32, kUInt8}) {
    std::string m = compare("aten::clamp", {sample(t), Scalar(-1.5), Scalar(2)});
    EXPECT_TRUE(m.empty()) << m;
    m = compare("aten::clamp", {sample(t), IValue(), Scalar(1)});
    EXPECT_TRUE(m.empty()) << m;
    m = compare("aten::clamp.Tensor", {sample(t), sample(t, -1), IValue()});
    EXPECT_TRUE(m.empty()) << m;
  }
  std::string m = compare("aten::clamp", {nan_input, Scalar(-1), Scalar(1)});
  EXPECT_TRUE(m.empty()) << m;
  m = compare("aten::clamp", {sample(kFloat), Scalar(2), Scalar(1)});  // lo > hi gives hi
  EXPECT_TRUE(m.empty()) << m;
}

/// The distance of `got` from `want` in units of the last place of float at `want`.
double float_ulps(float got, double want) {
  const float w = static_cast<float>(want);
  const double ulp = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

// Note [quick division]: float sigmoid and silu multiply by the MUFU reciprocal, within a
// few ulps of the exact value where the reciprocal is a normal float, and 0 where it is
// below 2^-126 (x < -87.3); every other value as PyTorch's (inf, NaN, signed zero).
TEST_F(CudaPointwise, FloatSigmoidAndSiluStayWithinFourUlpsWhereTheReciprocalIsNormal) {
  const Tensor x = cat({linspace(-100, 100, 400001, kFloat),
                        tensor(std::vector<float>{0.f, -0.f, INFINITY, -INFINITY, NAN, 1e-38f, -1e-40f, 88.f, -87.f})},
                       0);
  const std::vector<float> in = x.to_vector<float>();
  const std::vector<float> sig = sigmoid(x.cuda()).cpu().to_vector<float>();
  const std::vector<float> sil = silu(x.cuda()).cpu().to_vector<float>();
  double worst_sigmoid = 0, worst_silu = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const double v = in[i], r = 1 / (1 + std::exp(-v));
    const std::string at = " at x = " + std::to_string(in[i]);
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(sig[i]) && std::isnan(sil[i])) << at;
    } else if (r < FLT_MIN) {
      EXPECT_EQ(sig[i], 0.f) << at;
      if (std::isinf(v)) {
        EXPECT_TRUE(std::isnan(sil[i])) << at;  // -inf / inf, as PyTorch's
      } else {
        EXPECT_EQ(sil[i], 0.f) << at;
      }
    } else {
      worst_sigmoid = std::max(worst_sigmoid, float_ulps(sig[i], r));
      if (std::isinf(v)) {
        EXPECT_EQ(sil[i], v > 0 ? INFINITY : 0.f) << at;
      } else {
        worst_silu = std::max(worst_silu, float_ulps(sil[i], v * r));
      }
    }
  }
  EXPECT_LE(worst_sigmoid, 4.0);
  EXPECT_LE(worst_silu, 4.0);
  std::printf("float sigmoid: at most %.2f ulps, silu: at most %.2f ulps\n", worst_sigmoid, worst_silu);
}

TEST_F(CudaPointwise, IntegerDivisionByZeroRaisesAsOnTheCpu) {
  const Tensor a = arange(6, kInt64).cuda();
  const Tensor zero = zeros({6}, TensorOptions(kInt64).device("cuda"));
  EXPECT_THROW(call_op("aten::_div_trunc", {a, zero}), Error);
}

}  // namespace
}  // namespace ember::gpu_test
