// ops/padding.cpp — padding by reflection and replication (reflection_pad1d/2d/3d,
// replication_pad2d/3d) as composites: each padded dim is an index_select of source
// positions that ops compute from an arange. The gradients come from index_select's (an
// index_add into zeros), and the inductor fuses the position arithmetic. ATen's checks and
// messages. Sizes and pads are SymInts, a symbolic size enters the position arithmetic as
// a size tensor, so a trace with dynamic shapes keeps every dim symbolic (Note [dynamic
// shapes]). See Note [nn].
#include <string>
#include <type_traits>
#include <vector>

#include "ember/ops/creation.h"
#include "ember/ops/indexing.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ops/api.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

// --- padding --------------------------------------------------------------------------------

enum class PadMode { kReflect, kReplicate };

/// Source positions of output positions `i` along a dim whose last position is `last`: a
/// number, or a 0-dim tensor for a symbolic size (size_tensor; a Scalar holds no symbol).
/// Reflection: n-1 - ||i| - (n-1)| mirrors i about 0 and n-1; replication clamps.
template <typename S>
Tensor source_positions(const Tensor& i, const S& last, PadMode mode) {
  if (mode == PadMode::kReflect) return last - abs(abs(i) - last);
  if constexpr (std::is_same_v<S, Tensor>)
    return minimum(clamp_min(i, Scalar(int64_t{0})), last);
  else
    return clamp(i, Scalar(int64_t{0}), Scalar(last));
}

/// The padded input of a pad over the last `dims` dims: ATen's rank, size and (reflection)
/// padding checks, then one index_select per padded dim. Sizes and pads are SymInts,
/// compared as such (a symbolic size is compared, a guard where its range does not decide,
/// never read as an integer), so every dim stays symbolic.
Tensor pad_decomposition(const char* name, const Tensor& self, const std::vector<SymInt>& pad, int64_t dims,
                         PadMode mode) {
  const int64_t nd = self.dim();
  bool ok = nd == dims + 1 || nd == dims + 2;
  for (int64_t d = nd == dims + 2 ? 1 : 0; ok && d < nd; ++d) ok = sym_size(self, d) != 0;
  EMBER_CHECK(ok) << "Expected " << dims + 1 << "D or " << dims + 2
                  << "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but "
                     "got: "
                  << self.sizes();
  EMBER_CHECK(static_cast<int64_t>(pad.size()) == 2 * dims)
      << "padding size is expected to be " << 2 * dims << ", but got: " << pad.size();
  if (mode == PadMode::kReflect) {
    for (int64_t k = 0; k < dims; ++k) {
      const int64_t d = nd - 1 - k;
      const SymInt n = sym_size(self, d), lo = pad[static_cast<size_t>(2 * k)],
                   hi = pad[static_cast<size_t>(2 * k + 1)];
      EMBER_CHECK(lo < n && hi < n) << "Argument #" << 4 + 2 * k
                                    << ": Padding size should be less than the corresponding input dimension, "
                                    << "but got: padding (" << lo << ", " << hi << ") at dimension " << d
                                    << " of input " << self.sizes();
    }
  }
  if (self.dtype() == kBool) not_implemented(name, self.dtype());
  Tensor out = self;
  for (int64_t k = 0; k < dims; ++k) {
    const int64_t d = nd - 1 - k;
    const SymInt n = sym_size(self, d), lo = pad[static_cast<size_t>(2 * k)], hi = pad[static_cast<size_t>(2 * k + 1)];
    EMBER_CHECK(n + lo + hi >= 1) << "input (" << self.sizes() << ") is too small for padding (" << lo << ", " << hi
                                  << ") at dimension " << d << ": the output size would be " << n + lo + hi;
    const TensorOptions o = TensorOptions(kLong).device(self.device());
    const SymInt start = SymInt(0) - lo, end = n + hi;
    const Tensor i = start.is_symbolic() || end.is_symbolic() ? arange(start, end, SymInt(1), o)
                                                              : arange(Scalar(start.hint()), Scalar(end.hint()), 1, o);
    const Tensor src = n.is_symbolic() ? source_positions(i, size_tensor(n - 1, self.device()), mode)
                                       : source_positions(i, n.hint() - 1, mode);
    out = index_select(out, d, src);
  }
  return out;
}

void def_pad(Registry& r, const char* name, int64_t dims, PadMode mode) {
  const std::string schema =
      std::string(name) + "(Tensor self, SymInt[" + std::to_string(2 * dims) + "] padding) -> Tensor";
  r.def(schema).set_decomposition([name, dims, mode](const Stack& a) -> Stack {
    return {pad_decomposition(name, a[0].to_tensor(), a[1].to_sym_int_list(), dims, mode)};
  });
}

}  // namespace

void register_padding_ops(Registry& r) {
  def_pad(r, "reflection_pad1d", 1, PadMode::kReflect);
  def_pad(r, "reflection_pad2d", 2, PadMode::kReflect);
  def_pad(r, "reflection_pad3d", 3, PadMode::kReflect);
  def_pad(r, "replication_pad2d", 2, PadMode::kReplicate);
  def_pad(r, "replication_pad3d", 3, PadMode::kReplicate);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_tensor;

Tensor reflection_pad1d(const Tensor& self, IntArrayRef padding, Loc loc) {
  return call_tensor(EMBER_OP("aten::reflection_pad1d"), {self, padding}, loc);
}
Tensor reflection_pad2d(const Tensor& self, IntArrayRef padding, Loc loc) {
  return call_tensor(EMBER_OP("aten::reflection_pad2d"), {self, padding}, loc);
}
Tensor reflection_pad3d(const Tensor& self, IntArrayRef padding, Loc loc) {
  return call_tensor(EMBER_OP("aten::reflection_pad3d"), {self, padding}, loc);
}
Tensor replication_pad2d(const Tensor& self, IntArrayRef padding, Loc loc) {
  return call_tensor(EMBER_OP("aten::replication_pad2d"), {self, padding}, loc);
}
Tensor replication_pad3d(const Tensor& self, IntArrayRef padding, Loc loc) {
  return call_tensor(EMBER_OP("aten::replication_pad3d"), {self, padding}, loc);
}

}  // namespace ember
