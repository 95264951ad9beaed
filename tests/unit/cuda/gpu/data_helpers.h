// Shared by the GPU tests of the data-movement ops (indexing, cat/stack, sort/topk):
// deterministic inputs of any dtype, and compare() that also insists the CPU call
// succeeds, so a case that raises on both devices cannot pass unnoticed.
#pragma once

#include "gpu_helpers.h"

namespace ember::gpu_test {

inline const std::vector<ScalarType> kAllDtypes = {kFloat, kDouble, kHalf,  kBFloat16, kInt64,
                                                   kInt32, kInt16,  kInt8, kUInt8,    kBool};
inline const Tolerance kExact = std::pair{0.0, 0.0};

/// `sizes` filled with varied deterministic values (a different pattern per `salt`), as
/// `dtype`.
inline Tensor varied(IntArrayRef sizes, ScalarType dtype, int64_t salt = 0) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(((i + salt) * 37) % 101) * 0.25 - 7;
  Tensor t = tensor(v, {n}, TensorOptions(kDouble)).reshape(sizes);
  if (dtype == kBool) return gt(t, 0.0);
  if (dtype == kUInt8) return abs(t).to(dtype);
  return t.to(dtype);
}

/// compare(), failing when the CPU call itself raises.
inline std::string compare_ok(const std::string& op, const Stack& cpu_args, const Stack& gpu_args,
                              Tolerance tol = kExact) {
  try {
    call_op(op, cpu_args);
  } catch (const Error& e) {
    return op + ": the CPU raised: " + e.what();
  }
  return compare(op, cpu_args, gpu_args, tol);
}

/// compare_ok() with every tensor argument (and every tensor of a list) copied to the GPU.
inline std::string compare_ok(const std::string& op, const Stack& cpu_args, Tolerance tol = kExact) {
  Stack gpu_args;
  for (const IValue& v : cpu_args) {
    if (v.is_tensor()) {
      gpu_args.push_back(v.to_tensor().cuda());
    } else if (v.is_tensor_list()) {
      std::vector<Tensor> ts;
      for (const Tensor& t : v.to_tensor_list()) ts.push_back(t.cuda());
      gpu_args.push_back(ts);
    } else if (std::holds_alternative<std::vector<std::optional<Tensor>>>(v.variant())) {
      std::vector<std::optional<Tensor>> ts;
      for (const auto& t : v.to_optional_tensor_list()) ts.push_back(t ? std::optional<Tensor>(t->cuda()) : std::nullopt);
      gpu_args.push_back(ts);
    } else {
      gpu_args.push_back(v);
    }
  }
  return compare_ok(op, cpu_args, gpu_args, tol);
}

/// Every output of `op` on the GPU against the CPU's (compare() checks the first only);
/// the CPU call must succeed.
inline std::string compare_outputs(const std::string& op, const Stack& cpu_args, const Stack& gpu_args,
                                   Tolerance tol = kExact) {
  Stack expected, actual;
  try {
    expected = call_op(op, cpu_args);
  } catch (const Error& e) {
    return op + ": the CPU raised: " + e.what();
  }
  try {
    actual = call_op(op, gpu_args);
  } catch (const Error& e) {
    return op + ": CUDA raised: " + e.what();
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const Tensor& a = actual.at(i).to_tensor();
    if (!a.is_cuda()) return op + ": output " + std::to_string(i) + " on " + a.device().str();
    const std::string m = mismatch(a, expected[i].to_tensor(), tol);
    if (!m.empty()) return op + ": output " + std::to_string(i) + ": " + m;
  }
  return "";
}

}  // namespace ember::gpu_test
