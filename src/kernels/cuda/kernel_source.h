// kernels/cuda/kernel_source.h — CUDA C++ source for eager pointwise kernels, rendered at
// run time from a scalar formula (a row of ops/scalar_ops.def, or an op's own expression
// such as where's) and the dtypes of one call. The text is one translation unit that
// NVRTC compiles with no headers: a device prelude (dtype conversions as the CPU kernels
// do them, and the helper functions the rows use: where, abs_, pymod_, …) and one
// grid-stride kernel over an index space of up to kMaxDims dims, each operand with its own
// element strides. See Note [cuda] (docs/notes/cuda.md).
#pragma once

#include <string>
#include <vector>

#include "ember/dtype.h"

namespace ember::kernels::cuda {

inline constexpr int kMaxDims = 16;
/// The output and up to three inputs.
inline constexpr int kMaxOperands = 4;

/// One pointwise kernel: out = expr(inputs) elementwise. Each input is read in its own
/// dtype, converted to `compute` and then to compute's math type (float for half and
/// bfloat16), so that T in `expr` is what the CPU kernels compute in; the result is
/// converted to `out`. Inputs are named x (one input), a and b (two), a, b and c (three);
/// `p0` is the op's scalar parameter (alpha).
struct PointwiseKernel {
  /// Names the kernel's symbol ("add", "copy"), so one name is one formula (with its
  /// helpers): kernels are looked up by symbol (get_kernel), not by their text.
  std::string name;
  std::string expr;                 ///< C++ over T-typed inputs and `double p0`
  std::vector<std::string> helpers; ///< device functions `expr` calls (other rows)
  std::vector<ScalarType> inputs;   ///< storage dtypes of the inputs
  ScalarType compute = kFloat;
  ScalarType out = kFloat;
};

/// How a kernel reads one input (Note [cuda], "Pointwise kernels").
enum class Access : char {
  Strided = 's',    ///< a pointer, offsets from the Geometry's sizes and strides
  Dense = 'd',      ///< a pointer read at the linear index (contiguous kernels)
  Broadcast = 'b',  ///< a pointer to one element that every index reads (contiguous kernels)
  Value = 'v',      ///< one element passed by value as its bits (a CPU scalar beside CUDA tensors)
};

/// How a kernel indexes its operands. A *strided* kernel walks the Geometry (any strides,
/// up to kMaxDims dims); its inputs are Strided or Value. A *contiguous* kernel takes the
/// element count and a flag saying whether every Dense pointer (and the output) is aligned
/// to `vec` elements: aligned, each thread reads and writes `vec` elements per access;
/// otherwise one element at a time. Its inputs are Dense, Broadcast or Value.
struct PointwiseLayout {
  bool contiguous = false;
  int vec = 1;                  ///< elements per vector access (contiguous kernels)
  std::vector<Access> inputs;   ///< one per input
};

/// The strided layout with every input a pointer: what render_pointwise(k) renders.
PointwiseLayout strided_layout(const PointwiseKernel& k);

/// A device function `row_<name>(T a, T b, double p0)` (or `(T x, double p0)`) computing
/// a scalar_ops.def row: for kernels built from several rows (clamp from maximum and
/// minimum).
std::string render_row_function(const std::string& name, int arity, const std::string& expr);

/// The device prelude every rendered translation unit starts with (kMaxDims and
/// kMaxOperands as macros, Half/BFloat16, cvt<To>(from), the math helpers, Geometry).
std::string render_prelude();
/// The CUDA C++ type of a dtype's elements ("ember_dev::Half", "long long").
const char* cuda_type_name(ScalarType t);
/// The short tag kernel symbols use ("f16", "i64").
const char* dtype_tag(ScalarType t);

/// The kernel's extern "C" symbol: "ember_pointwise_add_f32_f32_to_f32" for the strided
/// layout with pointer inputs; other layouts append theirs ("…_to_f32_c4_dv": contiguous,
/// 4-element vectors, a dense input and a value).
std::string kernel_symbol(const PointwiseKernel& k, const PointwiseLayout& layout);
std::string kernel_symbol(const PointwiseKernel& k);
/// The whole translation unit for `k` in `layout`.
std::string render_pointwise(const PointwiseKernel& k, const PointwiseLayout& layout);
std::string render_pointwise(const PointwiseKernel& k);
/// The input names of an arity: {"x"}, {"a", "b"}, {"a", "b", "c"}.
std::vector<std::string> input_names(size_t arity);

/// The kernel's geometry argument, laid out as the rendered `Geometry` struct.
struct Geometry {
  long long numel = 0;
  int ndim = 0;
  long long sizes[kMaxDims] = {};
  long long strides[kMaxOperands][kMaxDims] = {};  ///< in elements; [0] is the output
};

}  // namespace ember::kernels::cuda
