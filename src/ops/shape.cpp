// ops/shape.cpp — ops that join, repeat and reorder whole tensors: cat (with ATen's
// type promotion and legacy skipping of 1-D empty inputs), stack, repeat, flip, tril,
// triu; and slice_scatter/select_scatter, composites writing a slice through pads and
// where. Their kernels are strided copies: each op describes its output and input as
// views over the same index space and one byte-copy loop moves the data.
#include <algorithm>
#include <cstring>

#include "core/shape.h"
#include "core/sym_geometry.h"
#include "ember/ops/shape.h"
#include "ember/ops/view.h"
#include "ember/ops/creation.h"
#include "kernels/cpu/copy.h"
#include "kernels/cpu/loops.h"
#include "kernels/cuda/loops.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {


using kernels::cpu::copy_into;
using kernels::cpu::raw_view;

// --- cat -----------------------------------------------------------------------------

/// ATen keeps skipping 1-D empty tensors in cat from the days when they were the only
/// empty tensors.
bool cat_skips(const Tensor& t) { return t.dim() == 1 && core::sym_numel(t) == 0; }

struct CatPlan {
  int64_t dim = 0;
  TensorMeta out;
};

CatPlan cat_plan(const std::vector<Tensor>& ts, int64_t dim) {
  for (size_t i = 0; i < ts.size(); ++i) {
    check_defined(ts[i], "cat input");
    EMBER_CHECK(ts[i].dim() > 0) << "zero-dimensional tensor (at position " << i << ") cannot be concatenated";
  }
  for (const Tensor& t : ts) {
    if (cat_skips(t)) continue;
    dim = core::wrap_dim(dim, t.dim());
    break;
  }
  EMBER_CHECK(!ts.empty()) << "torch.cat(): expected a non-empty list of Tensors";
  size_t valid = ts.size();
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!cat_skips(ts[i])) {
      valid = i;
      break;
    }
  }
  ScalarType dtype = ts[0].dtype();
  for (const Tensor& t : ts) dtype = promote_types(dtype, t.dtype());
  CatPlan plan;
  plan.dim = dim;
  if (valid == ts.size()) {
    plan.out = contiguous_meta({0}, dtype, ts[0].device());
    return plan;
  }
  const Tensor& first = ts[valid];
  EMBER_CHECK(dim <= first.dim()) << "torch.cat(): dimension " << dim << "out of range";
  bool channels_last = true;
  for (const Tensor& t : ts) channels_last = channels_last && suggests_channels_last(t);
  // Over core::Geometry's integer type (SymInt for symbolic sizes, Note [dynamic shapes]):
  // the other dims must match (a guard where symbolic), the cat dim is their sum.
  const auto concatenated = [&]<typename Int>() {
    using G = core::Geometry<Int>;
    Int size_at_dim = 0;
    for (size_t i = 0; i < ts.size(); ++i) {
      const Tensor& t = ts[i];
      if (cat_skips(t)) continue;
      EMBER_CHECK(first.dim() == t.dim()) << "Tensors must have same number of dimensions: got " << first.dim()
                                          << " and " << t.dim();
      for (int64_t d = 0; d < first.dim(); ++d) {
        if (d == dim) continue;
        EMBER_CHECK(G::size(first, d) == G::size(t, d))
            << "Sizes of tensors must match except in dimension " << dim << ". Expected size " << first.size(d)
            << " but got size " << t.size(d) << " for tensor number " << i << " in the list.";
      }
      size_at_dim = size_at_dim + G::size(t, dim);
    }
    const auto first_sizes = G::sizes(first);
    std::vector<Int> sizes(first_sizes.begin(), first_sizes.end());
    sizes[dim] = size_at_dim;
    return core::contiguous_meta_over(std::move(sizes), dtype, first.device());
  };
  const bool symbolic = std::any_of(ts.begin(), ts.end(), [](const Tensor& t) { return core::is_symbolic(t); });
  plan.out = symbolic ? concatenated.template operator()<core::SymInt>() : concatenated.template operator()<int64_t>();
  if (channels_last) {
    // NHWC: C fastest, then W, H, N (ATen keeps the inputs' common memory format), over the
    // symbols when the sizes are symbolic (suggests_channels_last decided it without
    // reading them as integers).
    if (plan.out.sym) {
      const core::SymInts sizes = plan.out.sym->sizes;
      plan.out = core::make_meta(sizes, core::sym_channels_last_strides(sizes), core::SymInt(0), dtype,
                                 first.device());
    } else {
      plan.out.strides = core::channels_last_strides(plan.out.sizes);
    }
  }
  return plan;
}

/// Each input copied into its slice of `out` along `dim`, converted to out's dtype. On
/// CUDA the device copy converts (the CPU's conversion rules) and takes any strides.
void cat_kernel(const std::vector<Tensor>& ts, int64_t dim, const Tensor& out) {
  int64_t offset = 0;
  for (const Tensor& t : ts) {
    if (cat_skips(t)) continue;
    const Tensor dst = raw_view(out, t.sizes().vec(), out.strides().vec(),
                                out.storage_offset() + offset * out.stride(dim));
    if (out.is_cuda()) kernels::cuda::copy_into(dst, t);
    else copy_into(dst, cast(t, out.dtype()));
    offset += t.size(dim);
  }
}

// --- repeat, flip, tril/triu -----------------------------------------------------------

std::vector<int64_t> repeat_sizes(const Tensor& self, const std::vector<int64_t>& repeats) {
  EMBER_CHECK(static_cast<int64_t>(repeats.size()) >= self.dim())
      << "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor";
  const size_t lead = repeats.size() - static_cast<size_t>(self.dim());
  std::vector<int64_t> sizes(repeats.size());
  for (size_t i = 0; i < repeats.size(); ++i) sizes[i] = (i < lead ? 1 : self.size(static_cast<int64_t>(i - lead))) * repeats[i];
  for (int64_t s : sizes)
    EMBER_CHECK(s >= 0) << "Trying to create tensor with negative dimension " << s << ": " << IntArrayRef(sizes);
  return sizes;
}

/// repeat_sizes over SymInt: the sizes times the counts, the leading counts alone.
core::SymInts repeat_sym_sizes(const Tensor& self, const core::SymInts& repeats) {
  EMBER_CHECK(static_cast<int64_t>(repeats.size()) >= self.dim())
      << "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor";
  const core::SymInts in = core::sym_sizes(self);
  const size_t lead = repeats.size() - in.size();
  core::SymInts sizes;
  for (size_t i = 0; i < repeats.size(); ++i) sizes.push_back((i < lead ? core::SymInt(1) : in[i - lead]) * repeats[i]);
  for (const core::SymInt& s : sizes)
    EMBER_CHECK(s.is_symbolic() || s.hint() >= 0)
        << "Trying to create tensor with negative dimension " << s.hint() << ": " << IntArrayRef(core::hints(sizes));
  return sizes;
}

/// The output viewed as [r0, p0, r1, p1, …] reads the input viewed as [r0 (stride 0), p0, …]:
/// `copy(out_view, in_view)` with the CPU's or a CUDA device's copy.
template <typename Copy>
void repeat_kernel(const Tensor& self, const std::vector<int64_t>& repeats, const Tensor& out, Copy copy) {
  if (out.numel() == 0) return;
  const size_t lead = repeats.size() - static_cast<size_t>(self.dim());
  std::vector<int64_t> sizes, out_strides, in_strides;
  for (size_t i = 0; i < repeats.size(); ++i) {
    const bool padded = i < lead;
    const int64_t p = padded ? 1 : self.size(static_cast<int64_t>(i - lead));
    const int64_t os = out.stride(static_cast<int64_t>(i));
    sizes.insert(sizes.end(), {repeats[i], p});
    out_strides.insert(out_strides.end(), {p * os, os});
    in_strides.insert(in_strides.end(), {0, padded ? 0 : self.stride(static_cast<int64_t>(i - lead))});
  }
  copy(raw_view(out, sizes, out_strides, out.storage_offset()), raw_view(self, sizes, in_strides, self.storage_offset()));
}

TensorMeta like_meta(const Tensor& self) { return memory_format_like(self, IValue(), std::nullopt, std::nullopt); }

void check_tri(const Tensor& self) {
  EMBER_CHECK_INDEX(self.dim() > 0) << "Dimension specified as -2 but tensor has no dimensions";
  core::wrap_dim(-2, self.dim());
}

/// Copies self into out, then zeroes what lies outside the kept triangle (all-zero bits are
/// zero in every dtype).
void tri_kernel(const Tensor& self, const Tensor& out, int64_t diagonal, bool lower) {
  if (out.numel() == 0) return;
  copy_into(out, self);
  const int64_t rows = out.size(-2), cols = out.size(-1);
  const int64_t total_rows = out.numel() / cols;
  const size_t es = out.element_size();
  char* base = static_cast<char*>(out.raw_data_ptr());
  const bool parallel = out.numel() > kernels::cpu::kGrainSize && !omp_in_parallel();
#pragma omp parallel for if (parallel)
  for (int64_t r = 0; r < total_rows; ++r) {
    const int64_t i = r % rows;
    int64_t begin, end;
    if (lower) {  // keep j <= i + diagonal
      begin = std::clamp<int64_t>(i + diagonal + 1, 0, cols);
      end = cols;
    } else {  // keep j >= i + diagonal
      begin = 0;
      end = std::clamp<int64_t>(i + diagonal, 0, cols);
    }
    if (begin < end)
      std::memset(base + (r * cols + begin) * static_cast<int64_t>(es), 0, static_cast<size_t>(end - begin) * es);
  }
}

/// tril/triu on a CUDA device: the kept triangle as a bool mask written on the host
/// (rows × cols, made without dispatch), copied to the device and broadcast over the batch
/// dims; out = mask ? self : 0, so NaN and -0.0 in the triangle stay as they are.
void tri_kernel_cuda(const Tensor& self, const Tensor& out, int64_t diagonal, bool lower) {
  if (out.numel() == 0) return;
  const int64_t rows = out.size(-2), cols = out.size(-1);
  const Tensor keep = empty_from_meta(contiguous_meta({rows, cols}, kBool, kCPU));
  bool* k = keep.data_ptr<bool>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) k[i * cols + j] = lower ? j - i <= diagonal : j - i >= diagonal;
  const Tensor mask = kernels::cuda::empty_device({rows, cols}, kBool, out.device());
  kernels::cuda::copy_into(mask, keep);
  std::vector<int64_t> strides(static_cast<size_t>(out.dim()), 0);
  strides[strides.size() - 2] = cols;
  strides.back() = 1;
  const kernels::cuda::PointwiseKernel k_tri{
      .name = "tri", .expr = "a ? b : T(0)", .helpers = {}, .inputs = {kBool, self.dtype()},
      .compute = out.dtype(), .out = out.dtype()};
  kernels::cuda::pointwise(k_tri, out, {raw_view(mask, out.sizes().vec(), strides, 0), self});
}

/// `self` read backwards along `dims`: negative strides from the last element of each
/// flipped dim. Both devices' copies read it into flip's output.
Tensor flipped_view(const Tensor& self, IntArrayRef dims) {
  std::vector<int64_t> strides = self.strides().vec();
  int64_t offset = self.storage_offset();
  for (int64_t d : core::wrap_dims(dims, self.dim())) {
    if (d >= self.dim()) continue;  // dim 0 of a 0-dim tensor
    offset += (self.size(d) - 1) * strides[d];
    strides[d] = -strides[d];
  }
  return raw_view(self, self.sizes().vec(), strides, offset);
}

// --- slice_scatter, select_scatter -------------------------------------------------------

// Note [scatter into a slice over SymInt]: slice_scatter is `where(outside, self, placed)`,
// where `placed` is src spread along dim to self's length (element i at start + i*step,
// by a pad of step - 1 after each element, a view merging the two dims, then a pad of
// `start` before and of what is left after) and `outside` is the same spreading of a
// false mask of src's length with true as its fill. Pads and views compute their sizes
// over SymInt, so a symbolic start, end, index or size of self or src along dim stays
// symbolic: no step reads a size as an integer (Note [dynamic shapes]), and a graph
// compiles once for every size (`x[:, 1:] = y` over [B, T, C], `index = T - 1`). self is
// where's first tensor operand after the mask, so the result takes self's layout as
// clone(self) does (ATen's slice_scatter clones self and copies src into the slice).

/// src must have the sizes of the slice it replaces (each size compared over SymInt: a
/// guard where symbolic).
void check_scatter_slice(const Tensor& src, const Tensor& slice_view) {
  const core::SymInts want = core::sym_sizes(slice_view), got = core::sym_sizes(src);
  bool same = want.size() == got.size();
  for (size_t d = 0; same && d < want.size(); ++d) same = got[d] == want[d];
  EMBER_CHECK(same) << "expected src to have a size equal to the slice of self. src size = " << src.sizes()
                    << ", slice size = " << slice_view.sizes();
}

/// `t` (n long along `dim`) spread along `dim` to `length`: element i at start + i*step,
/// `fill` everywhere else (constant pads and a view, Note [scatter into a slice over SymInt]).
/// start + (n - 1)*step < length.
Tensor spread_along(const Tensor& t, int64_t dim, const core::SymInt& start, int64_t step,
                    const core::SymInt& length, const Scalar& fill) {
  // constant_pad_nd's list names the last dim first: dim's pair is number t.dim() - 1 - dim.
  const size_t pair = static_cast<size_t>(t.dim() - 1 - dim);
  Tensor spaced = t;
  core::SymInt spaced_length = core::sym_size(t, dim);
  if (step > 1) {
    // Each element followed by step - 1 fills: a new dim after dim padded to step
    // ([…, n, step, …], contiguous), then the two merged by a view.
    const Tensor column = call_op_tensor("aten::unsqueeze", {t, dim + 1});
    core::SymInts widen(2 * pair + 2, core::SymInt(0));  // column's dim + 1 is pair number `pair` too
    widen[2 * pair + 1] = core::SymInt(step - 1);
    const Tensor widened = call_op_tensor("aten::constant_pad_nd", {column, core::size_list_value(widen), fill});
    core::SymInts sizes = core::sym_sizes(t);
    spaced_length = spaced_length * step;
    sizes[static_cast<size_t>(dim)] = spaced_length;
    spaced = call_op_tensor("aten::view", {widened, core::size_list_value(sizes)});
  }
  core::SymInts pad(2 * pair + 2, core::SymInt(0));
  pad[2 * pair] = start;
  pad[2 * pair + 1] = length - start - spaced_length;  // negative crops the last element's trailing fill
  return call_op_tensor("aten::constant_pad_nd", {spaced, core::size_list_value(pad), fill});
}

/// self with src written over self[start:end:step] along dim (src converted to self's
/// dtype, as copy_ would). Note [scatter into a slice over SymInt].
Stack slice_scatter_decomposition(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const Tensor& src = a[1].to_tensor();
  const Tensor view = call_op_tensor("aten::slice.Tensor", {self, a[2], a[3], a[4], a[5]});  // checks the arguments
  check_scatter_slice(src, view);
  const int64_t dim = core::wrap_dim(a[2].to_int(), self.dim()), step = a[5].to_int();
  const core::SymInt size = core::sym_size(self, dim);
  // start as slice normalizes it (negative counts from the end, then clamped into [0, size]).
  core::SymInt start = a[3].is_none() ? core::SymInt(0) : core::sym_int_arg(a[3]);
  if (start < 0) start = start + size;
  if (start < 0) start = 0;
  if (start > size) start = size;
  const Tensor placed = spread_along(cast(src, self.dtype()), dim, start, step, size, Scalar(0));
  core::SymInts mask_sizes(static_cast<size_t>(self.dim()), core::SymInt(1));
  mask_sizes[static_cast<size_t>(dim)] = core::sym_size(view, dim);
  const Tensor inside = call_op_tensor("aten::full", {core::size_list_value(mask_sizes), Scalar(false), IValue(kBool),
                                                      None{}, IValue(self.device()), None{}});
  const Tensor outside = spread_along(inside, dim, start, step, size, Scalar(true));
  return call_op("aten::where.self", {outside, self, placed});
}

/// self with src written over self.select(dim, index): slice_scatter of [index, index + 1).
Stack select_scatter_decomposition(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const Tensor& src = a[1].to_tensor();
  const Tensor view = call_op_tensor("aten::select.int", {self, a[2], a[3]});  // checks dim and index
  check_scatter_slice(src, view);
  const int64_t dim = core::wrap_dim(a[2].to_int(), self.dim());
  core::SymInt index = core::sym_int_arg(a[3]);
  if (index < 0) index = index + core::sym_size(self, dim);
  return call_op("aten::slice_scatter", {self, call_op_tensor("aten::unsqueeze", {src, dim}), dim,
                                         core::size_value(index), core::size_value(index + 1), int64_t{1}});
}

}  // namespace

void register_shape_ops(Registry& r) {
  const auto cat = [](const Stack& a, std::vector<Tensor>& out) {
    const auto& ts = a[0].to_tensor_list();
    cat_kernel(ts, cat_plan(ts, a[1].to_int()).dim, out[0]);
  };
  r.def("cat(Tensor[] tensors, int dim=0) -> Tensor")
      .set_meta([](const Stack& a) { return metas(cat_plan(a[0].to_tensor_list(), a[1].to_int()).out); })
      .set_cpu(cat)
      .set_cuda(cat);

  r.def("stack(Tensor[] tensors, int dim=0) -> Tensor").set_decomposition([](const Stack& a) {
    const auto& ts = a[0].to_tensor_list();
    EMBER_CHECK(!ts.empty()) << "stack expects a non-empty TensorList";
    check_defined(ts[0], "stack input");
    const int64_t dim = core::wrap_dim(a[1].to_int(), ts[0].dim() + 1);
    std::vector<Tensor> parts;
    for (size_t i = 0; i < ts.size(); ++i) {
      check_defined(ts[i], "stack input");
      EMBER_CHECK(same_sizes(ts[i], ts[0]))
          << "stack expects each tensor to be equal size, but got " << ts[0].sizes() << " at entry 0 and "
          << ts[i].sizes() << " at entry " << i;
      parts.push_back(call_op_tensor("aten::unsqueeze", {ts[i], dim}));
    }
    return call_op("aten::cat", {parts, dim});
  });

  r.def("repeat(Tensor self, SymInt[] repeats) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        // Over the symbols when self's sizes or the counts are symbolic (Note [dynamic shapes]).
        if (core::is_symbolic(self) || a[1].is_sym_int_list())
          return metas(core::contiguous_sym_meta(repeat_sym_sizes(self, core::sym_int_list(a[1])), self.dtype(),
                                                 self.device()));
        return metas(contiguous_meta(repeat_sizes(self, a[1].to_int_list()), self.dtype(), self.device()));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        repeat_kernel(a[0].to_tensor(), a[1].to_int_list(), out[0],
                      [](const Tensor& dst, const Tensor& src) { copy_into(dst, src); });
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        repeat_kernel(a[0].to_tensor(), a[1].to_int_list(), out[0],
                      [](const Tensor& dst, const Tensor& src) { kernels::cuda::copy_into(dst, src); });
      });

  r.def("flip(Tensor self, int[] dims) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        core::wrap_dims(a[1].to_int_list(), self.dim());
        return metas(like_meta(self));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        if (a[0].to_tensor().numel() > 0) copy_into(out[0], flipped_view(a[0].to_tensor(), a[1].to_int_list()));
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        if (a[0].to_tensor().numel() > 0) {
          kernels::cuda::copy_into(out[0], flipped_view(a[0].to_tensor(), a[1].to_int_list()));
        }
      });

  r.def("slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) "
        "-> Tensor")
      .set_decomposition(slice_scatter_decomposition);
  r.def("select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor")
      .set_decomposition(select_scatter_decomposition);

  for (const bool lower : {true, false}) {
    r.def(lower ? "tril(Tensor self, int diagonal=0) -> Tensor" : "triu(Tensor self, int diagonal=0) -> Tensor")
        .set_meta([](const Stack& a) {
          const Tensor& self = a[0].to_tensor();
          check_tri(self);
          return metas(core::over_geometry({&self}, [&]<typename Int>() {
            const auto sizes = core::Geometry<Int>::sizes(self);
            return core::contiguous_meta_over(std::vector<Int>(sizes.begin(), sizes.end()), self.dtype(), self.device());
          }));
        })
        .set_cpu([lower](const Stack& a, std::vector<Tensor>& out) {
          tri_kernel(a[0].to_tensor(), out[0], a[1].to_int(), lower);
        })
        .set_cuda([lower](const Stack& a, std::vector<Tensor>& out) {
          tri_kernel_cuda(a[0].to_tensor(), out[0], a[1].to_int(), lower);
        });
  }
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_tensor;

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim, Loc loc) {
  return call_tensor(EMBER_OP("aten::cat"), {tensors, dim}, loc);
}
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim, Loc loc) {
  return call_tensor(EMBER_OP("aten::stack"), {tensors, dim}, loc);
}
Tensor repeat(const Tensor& self, IntArrayRef repeats, Loc loc) {
  return call_tensor(EMBER_OP("aten::repeat"), {self, repeats}, loc);
}
Tensor flip(const Tensor& self, IntArrayRef dims, Loc loc) {
  return call_tensor(EMBER_OP("aten::flip"), {self, dims}, loc);
}
Tensor slice_scatter(const Tensor& self, const Tensor& src, int64_t dim, std::optional<SymInt> start,
                     std::optional<SymInt> end, int64_t step, Loc loc) {
  return call_tensor(EMBER_OP("aten::slice_scatter"), {self, src, dim, start, end, step}, loc);
}
Tensor select_scatter(const Tensor& self, const Tensor& src, int64_t dim, SymInt index, Loc loc) {
  return call_tensor(EMBER_OP("aten::select_scatter"), {self, src, dim, index}, loc);
}
Tensor tril(const Tensor& self, int64_t diagonal, Loc loc) {
  return call_tensor(EMBER_OP("aten::tril"), {self, diagonal}, loc);
}
Tensor triu(const Tensor& self, int64_t diagonal, Loc loc) {
  return call_tensor(EMBER_OP("aten::triu"), {self, diagonal}, loc);
}

}  // namespace ember
