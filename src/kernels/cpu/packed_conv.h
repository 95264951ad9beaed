// kernels/cpu/packed_conv.h — a float32 2-D convolution with a constant weight, on oneDNN's
// convolution primitive with the weight reordered once into the layout the primitive asks
// for, a bias, and the convolution's epilogue (a residual added, ReLU) applied inside the
// primitive as its sum and eltwise post-ops. What the inductor's freezing calls for a
// convolution whose batch norm (eval) it folded into the weight and bias (Note [freezing]
// in docs/notes/inductor.md); the unfrozen convolutions stay in conv.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/tensor.h"
#include "kernels/cpu/conv.h"

namespace ember::kernels::cpu {

/// dst = relu?(conv2d(src, weight) + bias + residual?) for float32, src and dst NCHW dense
/// (or NHWC dense when p.channels_last), the weight reordered once per OpenMP thread count
/// (the primitive and its weight layout are made for the team that runs them). Over NCHW
/// activations the primitive runs in oneDNN's blocked layout (nChw16c on AVX-512) and the
/// activations are reordered in and out per call, as conv.cpp's; the residual is reordered
/// into the primitive's output before it runs. Thread-safe.
class PackedConv {
 public:
  /// `p` an ungrouped or grouped, non-transposed convolution; `weight` [OC, C/groups, KH, KW]
  /// float32 dense (held: reordered again for another thread count); `bias` OC float32
  /// values or undefined; `sum`: a residual of dst's sizes and layout is added; `relu`
  /// last. Reorders the weight for the current thread count (counted by packs()). Raises
  /// when oneDNN has no primitive for the convolution.
  PackedConv(const Conv2dParams& p, const Tensor& weight, const Tensor& bias, bool sum, bool relu);
  ~PackedConv();
  PackedConv(const PackedConv&) = delete;
  PackedConv& operator=(const PackedConv&) = delete;

  /// Computes dst from src (and `residual`, which must be given exactly when `sum`).
  void run(const float* src, const float* residual, float* dst) const;
  /// Computes dst = next(this(src), residual) (`residual` as next's run() takes it), the
  /// intermediate kept in the primitives' layout when this one's output layout is the one
  /// `next` reads (no reorder out and back in); when the residual is `src` itself and
  /// `next` writes the layout this one read, `next` sums into src's reordered copy (no
  /// reorder of the residual). `next`'s input is this one's output.
  void run_then(const PackedConv& next, const float* src, const float* residual, float* dst) const;

  /// The packed weight's layout as oneDNN names it ("ABcd16b16a"), for the logs.
  std::string weight_format() const;
  /// Whether `next` may follow this one in run_then: its input has this one's output sizes.
  bool feeds(const PackedConv& next) const;
  /// "conv 8x64x56x56 -> 64 3x3 +bias +sum +relu": the convolution and its epilogue.
  std::string describe() const;

  /// How many weights have been reordered into a packed layout, in this process.
  static int64_t packs();

 private:
  struct Entry;
  /// The primitive and packed weight for the current thread count, made on first use.
  const Entry& entry() const;

  Conv2dParams p_;
  Tensor weight_;
  std::vector<float> bias_;
  bool has_bias_ = false, sum_ = false, relu_ = false;
  mutable std::mutex mu_;
  mutable std::map<int, std::unique_ptr<Entry>> entries_;
};

}  // namespace ember::kernels::cpu
