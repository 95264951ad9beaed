// ops/fold.cpp — im2col and col2im (torch.nn.functional's unfold and fold) as composites.
// Block (ki, kj) at block position (bi, bj) reads input row ki·dilation + bi·stride and
// column kj·dilation + bj·stride of the zero-padded input; both ops compute these rows and
// columns with ops from aranges. im2col gathers them with one advanced index (`index`);
// col2im sums the columns back with one accumulating `index_put` into zeros and crops the
// padding. Each is the other's gradient, which the ops give. ATen's checks and messages.
// See Note [nn].
#include <optional>
#include <sstream>
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

/// kernel_size, dilation, padding and stride of im2col / col2im, each (height, width).
struct Blocks {
  std::vector<int64_t> kernel, dilation, padding, stride;
};

Blocks blocks_of(const IValue& kernel, const IValue& dilation, const IValue& padding, const IValue& stride) {
  Blocks b{kernel.to_int_list(), dilation.to_int_list(), padding.to_int_list(), stride.to_int_list()};
  auto two = [](const std::vector<int64_t>& l, const char* name) {
    EMBER_CHECK(l.size() == 2) << "It is expected " << name << " equals to 2, but got size " << l.size();
  };
  two(b.kernel, "kernel_size");
  two(b.dilation, "dilation");
  two(b.padding, "padding");
  two(b.stride, "stride");
  EMBER_CHECK(b.kernel[0] > 0 && b.kernel[1] > 0) << "kernel size should be greater than zero, but got kernel_height: "
                                                  << b.kernel[0] << " kernel_width: " << b.kernel[1];
  EMBER_CHECK(b.stride[0] > 0 && b.stride[1] > 0) << "stride should be greater than zero, but got stride_height: "
                                                  << b.stride[0] << " stride_width: " << b.stride[1];
  EMBER_CHECK(b.dilation[0] > 0 && b.dilation[1] > 0)
      << "dilation should be greater than zero, but got dilation_height: " << b.dilation[0]
      << " dilation_width: " << b.dilation[1];
  EMBER_CHECK(b.padding[0] >= 0 && b.padding[1] >= 0) << "padding should be non-negative, but got pad_height: "
                                                      << b.padding[0] << " pad_width: " << b.padding[1];
  return b;
}

/// The number of block positions along dim d of a `size`-long (unpadded) dim (over the
/// symbols when the size is one), as ATen computes it.
SymInt block_count(const Blocks& b, size_t d, const SymInt& size) {
  const SymInt num = size + 2 * b.padding[d] - (b.dilation[d] * (b.kernel[d] - 1) + 1);
  // ATen divides with C++'s truncation; SymInt's floor division agrees where the
  // numerator is not negative (over the symbols a guard, unless the ranges decide).
  if (num >= 0) return num / b.stride[d] + 1;
  return num.guard_int() / b.stride[d] + 1;
}

/// Padded-input positions along dim d, [kernel, count] flattened: k·dilation + i·stride.
Tensor block_positions(const Blocks& b, size_t d, const SymInt& count, Device device) {
  const TensorOptions o = TensorOptions(kLong).device(device);
  const Tensor k = arange(b.kernel[d], o) * Scalar(b.dilation[d]), i = arange(count, o) * Scalar(b.stride[d]);
  return (k.unsqueeze(1) + i).reshape({-1});
}

/// The (rows, columns) index pair that picks every block element: rows [kH·bH, 1],
/// columns [kW·bW], broadcasting to [kH·bH, kW·bW].
std::vector<std::optional<Tensor>> block_index(const Blocks& b, const SymInt& bh, const SymInt& bw, Device device) {
  return {std::nullopt, std::nullopt, block_positions(b, 0, bh, device).unsqueeze(1),
          block_positions(b, 1, bw, device)};
}

void check_dtype(const char* kernel, ScalarType dt) {
  if (!is_floating_point(dt)) not_implemented(kernel, dt);
}

Stack im2col(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const Blocks b = blocks_of(a[1], a[2], a[3], a[4]);
  const int64_t nd = self.dim();
  auto nonzero = [&](int64_t d) { return sym_size(self, d) != 0; };
  const bool ok =
      (nd == 3 && nonzero(0) && nonzero(1) && nonzero(2)) || (nd == 4 && nonzero(1) && nonzero(2) && nonzero(3));
  EMBER_CHECK(ok) << "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions "
                     "for input, but got: "
                  << self.sizes();
  check_dtype("im2col_out_cpu", self.dtype());
  const Tensor x = nd == 3 ? self.unsqueeze(0) : self;
  const SymInt n = sym_size(x, 0), c = sym_size(x, 1), h = sym_size(x, 2), w = sym_size(x, 3);
  const SymInt bh = block_count(b, 0, h), bw = block_count(b, 1, w);
  EMBER_CHECK(bh >= 1 && bw >= 1) << "Given input with spatial size (" << h.str() << ", " << w.str()
                                  << "), kernel_size=(" << b.kernel[0] << ", " << b.kernel[1] << "), dilation=("
                                  << b.dilation[0] << ", " << b.dilation[1] << "), padding=(" << b.padding[0] << ", "
                                  << b.padding[1] << "), calculated shape of the array of sliding blocks as ("
                                  << bh.str() << ", " << bw.str() << "), but its components must be at least one.";
  const Tensor padded = constant_pad_nd(x, {b.padding[1], b.padding[1], b.padding[0], b.padding[0]});
  const Tensor picked = index(padded, block_index(b, bh, bw, x.device()));  // [N, C, kH·bH, kW·bW]
  const Tensor cols = picked.reshape({n, c, SymInt(b.kernel[0]), bh, SymInt(b.kernel[1]), bw})
                          .permute({0, 1, 2, 4, 3, 5})
                          .reshape({n, c * (b.kernel[0] * b.kernel[1]), bh * bw});
  return {nd == 3 ? cols.squeeze(0) : cols};
}

Stack col2im(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const std::vector<SymInt> out = a[1].to_sym_int_list();
  EMBER_CHECK(out.size() == 2) << "It is expected output_size equals to 2, but got size " << out.size();
  const Blocks b = blocks_of(a[2], a[3], a[4], a[5]);
  const int64_t nd = self.dim();
  auto nonzero = [&](int64_t d) { return sym_size(self, d) != 0; };
  const bool ok = (nd == 2 && nonzero(0) && nonzero(1)) || (nd == 3 && nonzero(1) && nonzero(2));
  EMBER_CHECK(ok) << "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                     "dimensions for input, but got: "
                  << self.sizes();
  const Tensor x = nd == 2 ? self.unsqueeze(0) : self;
  const int64_t kk = b.kernel[0] * b.kernel[1];
  const SymInt cols = sym_size(x, 1), positions = sym_size(x, 2);
  EMBER_CHECK(cols % kk == 0) << "Expected size of input's dimension 1 to be divisible by the product of "
                                 "kernel_size, but got input.size(1)="
                              << cols.str() << " and kernel_size=(" << b.kernel[0] << ", " << b.kernel[1] << ").";
  const SymInt bh = block_count(b, 0, out[0]), bw = block_count(b, 1, out[1]);
  auto geometry = [&] {
    std::ostringstream os;
    os << "Given output_size=(" << out[0].str() << ", " << out[1].str() << "), kernel_size=(" << b.kernel[0] << ", "
       << b.kernel[1] << "), dilation=(" << b.dilation[0] << ", " << b.dilation[1] << "), padding=(" << b.padding[0]
       << ", " << b.padding[1] << "), stride=(" << b.stride[0] << ", " << b.stride[1] << "), ";
    return os.str();
  };
  EMBER_CHECK(bh >= 1 && bw >= 1) << geometry() << "calculated shape of the array of sliding blocks as (" << bh.str()
                                  << ", " << bw.str() << "), which is too small (non-positive)";
  EMBER_CHECK(positions == bh * bw) << geometry()
                                    << "expected size of input's dimension 2 to match the calculated number of "
                                       "sliding blocks "
                                    << bh.str() << " * " << bw.str() << " = " << (bh * bw).str()
                                    << ", but got input.size(2)=" << positions.str() << ".";
  check_dtype("col2im_out_cpu", self.dtype());
  const SymInt n = sym_size(x, 0), c = cols / kk;
  const Tensor blocks = x.reshape({n, c, SymInt(b.kernel[0]), SymInt(b.kernel[1]), bh, bw})
                            .permute({0, 1, 2, 4, 3, 5})
                            .reshape({n, c, bh * b.kernel[0], bw * b.kernel[1]});
  const SymInt ph = out[0] + 2 * b.padding[0], pw = out[1] + 2 * b.padding[1];
  // PyTorch's CUDA kernel sums a pixel's block elements in float for half and bfloat16 and
  // rounds once; its CPU kernel adds them in the tensor's own dtype.
  const ScalarType acc = x.is_cuda() && is_reduced_float(x.dtype()) ? kFloat : x.dtype();
  const Tensor sums = cast(index_put(zeros({n, c, ph, pw}, TensorOptions(acc).device(x.device())),
                                     block_index(b, bh, bw, x.device()), cast(blocks, acc), /*accumulate=*/true),
                           x.dtype());
  const Tensor img = sums.slice(2, b.padding[0], b.padding[0] + out[0]).slice(3, b.padding[1], b.padding[1] + out[1]);
  return {nd == 2 ? img.squeeze(0) : img};
}

}  // namespace

void register_fold_ops(Registry& r) {
  r.def("im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor")
      .set_decomposition(im2col);
  r.def("col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, "
        "int[2] stride) -> Tensor")
      .set_decomposition(col2im);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_tensor;

Tensor im2col(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
              IntArrayRef stride, Loc loc) {
  return call_tensor(EMBER_OP("aten::im2col"), {self, kernel_size, dilation, padding, stride}, loc);
}
Tensor col2im(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride, Loc loc) {
  return call_tensor(EMBER_OP("aten::col2im"), {self, output_size, kernel_size, dilation, padding, stride}, loc);
}

}  // namespace ember
