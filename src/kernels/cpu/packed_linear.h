// kernels/cpu/packed_linear.h — a float32 product with a constant weight, on oneDNN's
// matmul primitive with the weight reordered once into the blocked layout the primitive
// asks for (format_tag::any), and the product's epilogue (bias, ReLU, GELU, adds) applied
// inside the primitive as its bias and post-ops. What the inductor's freezing calls
// (Note [freezing] in docs/notes/inductor.md); the unpacked products stay in gemm.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::kernels::cpu {

/// One step of a packed product's epilogue, applied in order after the bias.
struct LinearPostOp {
  enum class Kind : uint8_t { Relu, GeluErf, GeluTanh, Add };
  Kind kind = Kind::Relu;
  /// Add only: the operand is one row of n values added to every row (else an m x n
  /// row-major matrix, row stride n).
  bool row = false;
};

/// "relu", "gelu_erf", "gelu_tanh", "add" or "add_row".
const char* linear_post_op_name(const LinearPostOp& op);

/// dst[m, n] = post_ops(src[m, k] @ weight[k, n] + bias[n]) for float32, the weight packed
/// once per OpenMP thread count (the primitive and its weight layout are made for the team
/// that runs them); dst row-major and dense. Thread-safe.
class PackedLinear {
 public:
  /// `weight` [k, n] float32 of any strides (held: repacked for another thread count), `bias`
  /// float32 of n values (sizes 1 but the last) or undefined; src is read
  /// with element strides (src_rs, src_cs). Packs the weight for the current thread count
  /// (counted by packs()). Raises when oneDNN has no primitive for the product.
  PackedLinear(int64_t m, int64_t k, int64_t n, int64_t src_rs, int64_t src_cs, const Tensor& weight,
               const Tensor& bias, std::vector<LinearPostOp> post_ops);
  ~PackedLinear();
  PackedLinear(const PackedLinear&) = delete;
  PackedLinear& operator=(const PackedLinear&) = delete;

  /// Computes dst from src; `add_operands` holds one pointer per Add post-op, in order.
  void run(const float* src, const std::vector<const float*>& add_operands, float* dst) const;

  /// The packed weight's layout as oneDNN names it ("BA16a64b"), for the logs.
  std::string weight_format() const;
  /// "256x1024x4096 +bias +gelu_erf": the product and its epilogue.
  std::string describe() const;

  /// How many weights have been reordered into a packed layout, in this process.
  static int64_t packs();

 private:
  struct Entry;
  /// The primitive and packed weight for the current thread count, made on first use.
  const Entry& entry() const;

  int64_t m_, k_, n_, src_rs_, src_cs_;
  Tensor weight_;
  std::vector<float> bias_;
  bool has_bias_ = false;
  std::vector<LinearPostOp> post_ops_;
  mutable std::mutex mu_;
  mutable std::map<int, std::unique_ptr<Entry>> entries_;
};

}  // namespace ember::kernels::cpu
