// ops/indexing.cpp — gathering and scattering (index_select, gather, scatter, scatter_add,
// scatter_reduce, masked_scatter),
// advanced indexing (index.Tensor, index_put), sorting (sort, topk) and nonzero. Every
// index is checked here, with ATen's messages, before a kernel of kernels/cpu/indexing.h
// or kernels/cuda/indexing.h touches memory; on CUDA a min/max reduction checks the range
// and, only when it fails, the CPU's check runs on a host copy for the same message.
#include "ember/ops/indexing.h"
#include "ember/ops/view.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <sstream>

#include "core/cuda.h"
#include "core/shape.h"
#include "core/sym_geometry.h"
#include "kernels/cpu/copy.h"
#include "kernels/cpu/indexing.h"
#include "kernels/cuda/host_checks.h"
#include "kernels/cuda/indexing.h"
#include "kernels/cuda/loops.h"
#include "kernels/cuda/sort.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"
#include "support/call_context.h"

namespace ember::ops {
namespace {

namespace k = kernels::cpu;
namespace kc = kernels::cuda;
using OptTensors = std::vector<std::optional<Tensor>>;

/// A 0-dim tensor seen as [1], as ATen's ensure_nonempty_dim; no dispatch.
Tensor as_1d(const Tensor& t) {
  if (t.dim() > 0) return t;
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->sizes = {1};
  impl->strides = {1};
  impl->refresh();
  return Tensor(std::move(impl));
}

/// A dense copy of `t` (or `t` itself when already contiguous), without dispatching, on
/// t's device.
Tensor dense(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor c = empty_from_meta(contiguous_meta(t.sizes(), t.dtype(), t.device()));
  if (t.is_cuda()) kc::copy_into(c, t);
  else k::copy_elements(c, t);
  return c;
}

int64_t nonempty_dim(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }
int64_t nonempty_size(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.size(d); }
/// nonempty_size over SymInt: a symbolic size is compared without reading it.
core::SymInt nonempty_sym_size(const Tensor& t, int64_t d) {
  return t.dim() == 0 ? core::SymInt(1) : core::sym_size(t, d);
}

// --- gather / scatter --------------------------------------------------------------
// The shape checks compare sizes as SymInts (Note [dynamic shapes]): for plain tensors
// these are integer comparisons; for a trace's symbolic ones a comparison the symbols'
// ranges do not decide becomes a guard, and no size is specialized.

void check_gather_shape(const Tensor& self, int64_t dim, const Tensor& index) {
  EMBER_CHECK(nonempty_dim(self) == nonempty_dim(index))
      << "Index tensor must have the same number of dimensions as input tensor";
  if (core::sym_numel(index) == 0) return;
  for (int64_t d = 0; d < nonempty_dim(self); ++d) {
    if (d == dim) continue;
    EMBER_CHECK(nonempty_sym_size(index, d) <= nonempty_sym_size(self, d))
        << "Size does not match at dimension " << d << " expected index " << index.sizes()
        << " to be smaller than self " << self.sizes() << " apart from dimension " << dim;
  }
}

void check_scatter_shape(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src) {
  EMBER_CHECK(nonempty_dim(self) == nonempty_dim(index))
      << "Index tensor must have the same number of dimensions as self tensor";
  if (src) {
    EMBER_CHECK(nonempty_dim(*src) == nonempty_dim(index))
        << "Index tensor must have the same number of dimensions as src tensor";
  }
  if (core::sym_numel(index) == 0) return;
  bool ok = true;
  for (int64_t d = 0; d < nonempty_dim(self); ++d) {
    const core::SymInt n = nonempty_sym_size(index, d);
    if (d != dim && n > nonempty_sym_size(self, d)) ok = false;
    if (src && n > nonempty_sym_size(*src, d)) ok = false;
  }
  if (src) {
    EMBER_CHECK(ok) << "Expected index " << index.sizes() << " to be smaller than self " << self.sizes()
                    << " apart from dimension " << dim << " and to be smaller size than src " << src->sizes();
  } else {
    EMBER_CHECK(ok) << "Expected index " << index.sizes() << " to be smaller than self " << self.sizes()
                    << " apart from dimension " << dim;
  }
}

/// Raises unless every value of the int64 `index` lies in [0, size).
void check_dim_indices(const Tensor& index, int64_t dim, int64_t size) {
  const int64_t* p = index.data_ptr<int64_t>();
  for (int64_t i = 0, n = index.numel(); i < n; ++i) {
    EMBER_CHECK(p[i] >= 0 && p[i] < size)
        << "index " << p[i] << " is out of bounds for dimension " << dim << " with size " << size;
  }
}

/// On CUDA: nothing when every value of `index` (on the device) lies in [lo_ok, hi_end),
/// which one reduction tells; otherwise `cpu_check` runs on a host copy of the index and
/// raises the CPU's error with the CPU's message.
template <typename F>
void check_range_cuda(const Tensor& index, int64_t lo_ok, int64_t hi_end, F&& cpu_check) {
  if (index.numel() == 0) return;
  const auto [lo, hi] = kc::value_range(index);
  if (lo >= static_cast<double>(lo_ok) && hi < static_cast<double>(hi_end)) return;
  cpu_check(core::cuda::host_copy(index));
  EMBER_INTERNAL_ASSERT(false) << "indices in [" << lo << ", " << hi << "] passed the CPU's check for [" << lo_ok
                               << ", " << hi_end << ")";
}

void check_dim_indices_cuda(const Tensor& index, int64_t dim, int64_t size) {
  check_range_cuda(index, 0, size, [&](const Tensor& host) { check_dim_indices(dense(host), dim, size); });
}

std::vector<TensorMeta> scatter_meta(const Stack& a, bool has_src) {
  const Tensor& self = a[0].to_tensor();
  const Tensor& index = a[2].to_tensor();
  const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
  EMBER_CHECK(index.dtype() == kInt64) << "scatter(): Expected dtype int64 for index";
  const Tensor* src = has_src ? &a[3].to_tensor() : nullptr;
  if (src) {
    EMBER_CHECK(src->dtype() == self.dtype()) << "scatter(): Expected self.dtype to be equal to src.dtype";
  }
  check_scatter_shape(self, dim, index, src);
  return metas(core::contiguous_sym_meta(core::sym_sizes(self), self.dtype(), self.device()));
}

/// The CPU scatters' common start: out = self, then the output (at least 1-D), the
/// checked index and the dim; nullopt when the index is empty (nothing to scatter).
struct ScatterTarget {
  Tensor out, index;
  int64_t dim;
};
std::optional<ScatterTarget> scatter_target(const Stack& a, const Tensor& out) {
  const Tensor& self = a[0].to_tensor();
  const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
  k::copy_elements(out, self);
  const Tensor index = dense(as_1d(a[2].to_tensor()));
  if (index.numel() == 0) return std::nullopt;
  Tensor out1 = as_1d(out);
  check_dim_indices(index, dim, out1.size(dim));
  return ScatterTarget{out1, index, dim};
}

void scatter_cpu(const Stack& a, std::vector<Tensor>& out, bool has_src, bool add) {
  const auto t = scatter_target(a, out[0]);
  if (!t) return;
  if (has_src) {
    k::scatter_kernel(t->out, t->dim, t->index, as_1d(a[3].to_tensor()), Tensor(), add);
  } else {
    k::scatter_kernel(t->out, t->dim, t->index, Tensor(),
                      scalar_tensor(a[3].to_scalar(), a[0].to_tensor().dtype(), kCPU), add);
  }
}

void scatter_cuda(const Stack& a, std::vector<Tensor>& out, bool has_src, bool add) {
  const Tensor& self = a[0].to_tensor();
  const Device device = out[0].device();
  const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
  kc::copy_into(out[0], self);
  const Tensor index = as_1d(kc::on_device(a[2].to_tensor(), device));
  if (index.numel() == 0) return;
  const Tensor out1 = as_1d(out[0]);
  check_dim_indices_cuda(index, dim, out1.size(dim));
  const Tensor src = has_src ? as_1d(kc::on_device(a[3].to_tensor(), device))
                             : kc::on_device(scalar_tensor(a[3].to_scalar(), self.dtype(), kCPU), device);
  kc::scatter(out1, dim, index, src, add);
}

/// scatter_reduce.two's `reduce` argument.
k::ScatterReduce scatter_reduction(const std::string& reduce) {
  static const std::pair<const char*, k::ScatterReduce> kNames[] = {
      {"sum", k::ScatterReduce::kSum},   {"prod", k::ScatterReduce::kProd}, {"mean", k::ScatterReduce::kMean},
      {"amax", k::ScatterReduce::kAmax}, {"amin", k::ScatterReduce::kAmin}};
  const auto* hit = std::find_if(std::begin(kNames), std::end(kNames), [&](const auto& e) { return reduce == e.first; });
  EMBER_CHECK(hit != std::end(kNames)) << "reduce argument must be either sum, prod, mean, amax or amin, got " << reduce;
  return hit->second;
}

std::vector<TensorMeta> scatter_reduce_meta(const Stack& a) {
  scatter_reduction(a[4].to_string_ref());
  const Tensor& self = a[0].to_tensor();
  if (a[4].to_string_ref() == "mean" && self.dtype() == kBool)
    not_implemented("scatter_gather_tensor_cpu_reduce_mean", self.dtype());
  return scatter_meta(a, true);
}

void scatter_reduce_cuda(const Stack& a, std::vector<Tensor>& out) {
  const Tensor& self = a[0].to_tensor();
  const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
  kc::copy_into(out[0], self);
  const Tensor index = as_1d(a[2].to_tensor());
  if (index.numel() == 0) return;
  const Tensor out1 = as_1d(out[0]);
  check_dim_indices_cuda(index, dim, out1.size(dim));
  kc::scatter_reduce(out1, dim, index, as_1d(a[3].to_tensor()), scatter_reduction(a[4].to_string_ref()),
                     a[5].to_bool());
}

void scatter_reduce_cpu(const Stack& a, std::vector<Tensor>& out) {
  const auto t = scatter_target(a, out[0]);
  if (!t) return;
  k::scatter_reduce_kernel(t->out, t->dim, t->index, as_1d(a[3].to_tensor()),
                           scatter_reduction(a[4].to_string_ref()), a[5].to_bool());
}

std::vector<TensorMeta> masked_scatter_meta(const Stack& a) {
  const Tensor &self = a[0].to_tensor(), &mask = a[1].to_tensor(), &source = a[2].to_tensor();
  EMBER_CHECK(mask.dtype() == kBool || mask.dtype() == kUInt8)
      << "masked_scatter_ only supports boolean masks, but got mask with dtype " << scalar_type_name(mask.dtype());
  EMBER_CHECK(source.dtype() == self.dtype()) << "masked_scatter: expected self and source to have same dtypes but got"
                                              << scalar_type_name(self.dtype()) << " and "
                                              << scalar_type_name(source.dtype());
  // Over SymInt sizes: the broadcast of self and mask stays symbolic (source's number of
  // elements is checked against the mask's ones by the kernel, on values).
  return metas(core::contiguous_sym_meta(core::sym_broadcast_shapes(core::sym_sizes(self), core::sym_sizes(mask)),
                                         self.dtype(), self.device()));
}

void check_masked_scatter_source(int64_t ones, const Tensor& source) {
  EMBER_CHECK(ones <= source.numel()) << "Number of elements of source < number of ones in mask (source has "
                                      << source.numel() << ", the mask " << ones << ")";
}

void masked_scatter_cpu(const Stack& a, std::vector<Tensor>& out) {
  const Tensor &self = a[0].to_tensor(), &source = a[2].to_tensor();
  k::copy_elements(out[0], self);
  const Tensor mask = dense(a[1].to_tensor().expand(out[0].sizes()));
  const uint8_t* m = static_cast<const uint8_t*>(mask.raw_data_ptr());
  check_masked_scatter_source(std::count_if(m, m + mask.numel(), [](uint8_t v) { return v != 0; }), source);
  k::masked_scatter_kernel(out[0], mask, dense(source));
}

void masked_scatter_cuda(const Stack& a, std::vector<Tensor>& out) {
  const Tensor &self = a[0].to_tensor(), &source = a[2].to_tensor();
  kc::copy_into(out[0], self);
  if (out[0].numel() == 0) return;
  const Tensor positions = kc::mask_positions(a[1].to_tensor().expand(out[0].sizes()));
  const Tensor last = core::cuda::host_copy(k::raw_view(positions, {1}, {1}, positions.numel() - 1));
  check_masked_scatter_source(*last.data_ptr<int64_t>(), source);
  kc::masked_scatter(out[0], positions, dense(source));
}

// --- advanced indexing -------------------------------------------------------------

/// The index tensors of index/index_put after bool masks became int64 coordinates:
/// tensors[k] indexes self dim dims[k].
struct Expanded {
  std::vector<int64_t> dims;
  std::vector<Tensor> tensors;
  /// A mask without values (on the meta device, or traced): its coordinates are unknown.
  bool meta_mask = false;
};

bool is_mask(const Tensor& t) { return t.dtype() == kBool || t.dtype() == kUInt8; }

/// Whether `a` and `b` have the same sizes, compared without reading them as integers (a
/// symbolic size is compared as an expression; nothing is specialized or guarded).
bool same_sizes_unread(const Tensor& a, const Tensor& b) {
  const core::SymInts sa = core::sym_sizes(a);
  const core::SymInts sb = core::sym_sizes(b);
  if (sa.size() != sb.size()) return false;
  for (size_t i = 0; i < sa.size(); ++i)
    if (sa[i].expr() != sb[i].expr()) return false;
  return true;
}

Expanded expand_indices(const Tensor& self, const OptTensors& indices) {
  int64_t consumed = 0;
  for (const auto& t : indices) {
    if (!t) {
      ++consumed;
      continue;
    }
    const ScalarType dt = t->dtype();
    EMBER_CHECK_INDEX(dt == kInt64 || dt == kInt32 || dt == kBool || dt == kUInt8)
        << "tensors used as indices must be long, byte or bool tensors";
    consumed += is_mask(*t) ? t->dim() : 1;
  }
  EMBER_CHECK_INDEX(consumed <= self.dim())
      << "too many indices for tensor of dimension " << self.dim() << " (got " << consumed << ")";

  Expanded e;
  int64_t d = 0;
  for (const auto& t : indices) {
    if (!t) {
      ++d;
      continue;
    }
    if (!is_mask(*t)) {
      e.dims.push_back(d++);
      e.tensors.push_back(*t);
      continue;
    }
    EMBER_CHECK_INDEX(t->dim() > 0) << "a 0-dim bool index is not supported by aten::index/index_put; add a dim to "
                                       "the indexed tensor (unsqueeze) instead";
    for (int64_t j = 0; j < t->dim(); ++j) {
      EMBER_CHECK_INDEX(t->size(j) == self.size(d + j))
          << "The shape of the mask " << t->sizes() << " at index " << j
          << " does not match the shape of the indexed tensor " << self.sizes() << " at index " << d + j;
    }
    if (t->is_meta() || t->is_fake()) {
      e.meta_mask = true;
    } else {
      // The mask's coordinates, one int64 column per mask dim (read on the host, as
      // PyTorch's CUDA nonzero waits for the device too).
      auto [count, coords] = k::nonzero_kernel(t->is_cuda() ? core::cuda::host_copy(*t) : *t);
      const int64_t nd = t->dim();
      for (int64_t j = 0; j < nd; ++j) {
        Tensor col = empty_from_meta(contiguous_meta({count}, kInt64, kCPU));
        int64_t* p = col.data_ptr<int64_t>();
        for (int64_t i = 0; i < count; ++i) p[i] = coords[static_cast<size_t>(i * nd + j)];
        e.dims.push_back(d + j);
        e.tensors.push_back(col);
      }
    }
    d += t->dim();
  }
  return e;
}

/// Where the indexed dims go: the broadcast index shape replaces the indexed dims when they
/// are adjacent, and comes first when slices separate them (PyTorch/NumPy's rule).
struct Plan {
  std::vector<int64_t> index_shape;
  std::vector<int64_t> pre_dims, post_dims;
  std::vector<int64_t> result_shape;
};

Plan make_plan(const Tensor& self, const Expanded& e) {
  Plan p;
  for (size_t i = 0; i < e.tensors.size(); ++i) {
    const IntArrayRef s = e.tensors[i].sizes();
    std::vector<int64_t> out(std::max(p.index_shape.size(), s.size()), 1);
    bool ok = true;
    for (size_t j = 0; j < out.size(); ++j) {
      const int64_t a = j < out.size() - p.index_shape.size() ? 1 : p.index_shape[j - (out.size() - p.index_shape.size())];
      const int64_t b = j < out.size() - s.size() ? 1 : s[j - (out.size() - s.size())];
      if (a != b && a != 1 && b != 1) ok = false;
      out[j] = a == 1 ? b : a;
    }
    if (!ok) {
      std::ostringstream shapes;
      for (size_t m = 0; m < e.tensors.size(); ++m) shapes << (m ? ", " : "") << e.tensors[m].sizes();
      EMBER_FAIL_KIND(ErrorKind::IndexError)
          << "shape mismatch: indexing tensors could not be broadcast together with shapes " << shapes.str();
    }
    p.index_shape = std::move(out);
  }
  bool adjacent = true;
  for (size_t i = 1; i < e.dims.size(); ++i) adjacent = adjacent && e.dims[i] == e.dims[i - 1] + 1;
  const int64_t first = e.dims.empty() ? 0 : e.dims.front();
  size_t next = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (next < e.dims.size() && e.dims[next] == d) {
      ++next;
      continue;
    }
    (adjacent && d < first ? p.pre_dims : p.post_dims).push_back(d);
  }
  for (int64_t d : p.pre_dims) p.result_shape.push_back(self.size(d));
  p.result_shape.insert(p.result_shape.end(), p.index_shape.begin(), p.index_shape.end());
  for (int64_t d : p.post_dims) p.result_shape.push_back(self.size(d));
  return p;
}

/// make_plan's result shape over SymInt (integer indices only): the index tensors' sizes
/// broadcast as SymInts between self's dims before and after them, so nothing is read as
/// an integer; a relation the ranges do not decide is guarded (Note [dynamic shapes]).
core::SymInts sym_index_result(const Tensor& self, const Expanded& e) {
  core::SymInts index_shape;
  for (const Tensor& t : e.tensors) index_shape = core::sym_broadcast_shapes(index_shape, core::sym_sizes(t));
  bool adjacent = true;
  for (size_t i = 1; i < e.dims.size(); ++i) adjacent = adjacent && e.dims[i] == e.dims[i - 1] + 1;
  const int64_t first = e.dims.empty() ? 0 : e.dims.front();
  const core::SymInts self_sizes = core::sym_sizes(self);
  core::SymInts pre, post;
  size_t next = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (next < e.dims.size() && e.dims[next] == d) {
      ++next;
      continue;
    }
    (adjacent && d < first ? pre : post).push_back(self_sizes[static_cast<size_t>(d)]);
  }
  core::SymInts result = pre;
  result.insert(result.end(), index_shape.begin(), index_shape.end());
  result.insert(result.end(), post.begin(), post.end());
  return result;
}

/// Whether `values` broadcasts to the indexing result of `self` indexed by `e` (integer
/// indices only), over SymInt (sym_index_result), so index_put with a symbolic self,
/// indices or values (embedding's gradient over a dynamic batch, index's gradient into
/// zeros of a symbolic input) specializes nothing.
bool sym_values_fit(const Tensor& self, const Expanded& e, const Tensor& values) {
  const core::SymInts result = sym_index_result(self, e);
  const core::SymInts from = core::sym_sizes(values);
  if (from.size() > result.size()) return false;
  const size_t off = result.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != result[off + i]) return false;
  return true;
}

/// Whether any of `self` and the defined `indices` has symbolic sizes.
bool any_symbolic(const Tensor& self, const OptTensors& indices) {
  return core::is_symbolic(self) ||
         std::any_of(indices.begin(), indices.end(), [](const auto& t) { return t && core::is_symbolic(*t); });
}

/// Offsets (in elements, by `t`'s strides) of every multi-index over `dims`, row-major.
std::vector<int64_t> dim_offsets(const Tensor& t, const std::vector<int64_t>& dims) {
  std::vector<int64_t> sizes, offs;
  for (int64_t d : dims) sizes.push_back(t.size(d));
  offs.reserve(static_cast<size_t>(core::numel_of(sizes)));
  core::for_each_index(sizes, [&](const int64_t* pos) {
    int64_t off = 0;
    for (size_t i = 0; i < dims.size(); ++i) off += pos[i] * t.stride(dims[i]);
    offs.push_back(off);
  });
  return offs;
}

/// Index v of a dim of `size` wrapped into [0, size); raises ATen's IndexError outside
/// [-size, size).
int64_t checked_index(int64_t v, int64_t d, int64_t size) {
  EMBER_CHECK_INDEX(v >= -size && v < size)
      << "index " << v << " is out of bounds for dimension " << d << " with size " << size;
  return v < 0 ? v + size : v;
}

/// The offset tables of `t[indices]`, checking and wrapping every index first.
k::IndexOffsets index_offsets(const Tensor& t, const Expanded& e, const Plan& p) {
  k::IndexOffsets o;
  o.pre = dim_offsets(t, p.pre_dims);
  o.post = dim_offsets(t, p.post_dims);
  o.adv.assign(static_cast<size_t>(core::numel_of(p.index_shape)), 0);
  for (size_t i = 0; i < e.tensors.size(); ++i) {
    const int64_t d = e.dims[i], size = t.size(d), stride = t.stride(d);
    const std::vector<int64_t> values = k::read_indices(e.tensors[i], p.index_shape);
    for (size_t b = 0; b < values.size(); ++b) o.adv[b] += checked_index(values[b], d, size) * stride;
  }
  return o;
}

/// On CUDA: the offsets of `t[indices]` (int64, on t's device, the index shape), every
/// index checked first as index_offsets checks it, tensor by tensor.
Tensor index_offsets_cuda(const Tensor& t, const Expanded& e, const Plan& p) {
  const bool any = core::numel_of(p.index_shape) > 0;
  std::vector<Tensor> indices;
  std::vector<int64_t> sizes, strides;
  for (size_t i = 0; i < e.tensors.size(); ++i) {
    const int64_t d = e.dims[i], size = t.size(d);
    Tensor index = kc::on_device(e.tensors[i], t.device());
    if (any) {
      check_range_cuda(index, -size, size, [&](const Tensor& host) {
        for (int64_t v : k::read_indices(host, p.index_shape)) checked_index(v, d, size);
      });
    }
    indices.push_back(std::move(index));
    sizes.push_back(size);
    strides.push_back(t.stride(d));
  }
  return kc::index_offsets(indices, sizes, strides, p.index_shape, t.device());
}

bool expandable_to(IntArrayRef from, IntArrayRef to) {
  if (from.size() > to.size()) return false;
  const size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[off + i]) return false;
  return true;
}

/// index_select's range errors, worded by path as ATen's CPU kernel words them.
void check_index_select(const Tensor& self, int64_t dim, const std::vector<int64_t>& idx) {
  const int64_t size = nonempty_size(self, dim);
  if (self.dim() > 1 && self.numel() == 0 && !idx.empty()) {
    EMBER_CHECK(size > 0) << "index_select(): self indexing axis dim should be positive";
  }
  for (int64_t v : idx) {
    if (v >= 0 && v < size) continue;
    if (self.dim() > 1 && (self.numel() == 0 || dim == 1)) {
      EMBER_FAIL() << "INDICES element is out of DATA bounds, id=" << v << " axis_dim=" << size;
    }
    EMBER_FAIL_KIND(ErrorKind::IndexError) << "index out of range in self";
  }
}

// --- sorting -------------------------------------------------------------------------

/// Values and indices contiguous over self's sizes (over SymInt for a symbolic self, so a
/// sorted symbolic dim stays symbolic).
std::vector<TensorMeta> sort_meta(const Tensor& self, int64_t dim) {
  core::wrap_dim(dim, self.dim());
  return core::over_geometry({&self}, [&]<typename Int>() {
    const auto s = core::Geometry<Int>::sizes(self);
    const std::vector<Int> sizes(s.begin(), s.end());
    return std::vector<TensorMeta>{core::contiguous_meta_over(sizes, self.dtype(), self.device()),
                                   core::contiguous_meta_over(sizes, kInt64, self.device())};
  });
}

void sort_cpu(const Tensor& self, int64_t dim, bool descending, bool stable, std::vector<Tensor>& out) {
  k::copy_elements(out[0], self);
  k::sort_kernel(out[0], out[1], core::wrap_dim(dim, self.dim()), descending, stable);
}

/// On CUDA every sort is stable (kernels/cuda/sort.h): ties keep their index order.
void sort_cuda(const Tensor& self, int64_t dim, bool descending, std::vector<Tensor>& out) {
  const int64_t d = core::wrap_dim(dim, self.dim());
  kc::sort_lines(self, d, descending, nonempty_size(self, d), out[0], out[1]);
}

}  // namespace

void register_indexing_ops(Registry& r) {
  r.def("index_select(Tensor self, int dim, Tensor index) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        const Tensor& index = a[2].to_tensor();
        const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
        EMBER_CHECK_INDEX(index.dim() <= 1) << "index_select(): Index is supposed to be a vector";
        EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32)
            << "index_select(): Expected dtype int32 or int64 for index";
        if (self.dim() == 0) {
          EMBER_CHECK_INDEX(index.numel() == 1) << "index_select(): Index to scalar can have only 1 value, got "
                                                << index.numel() << " value(s)";
          return metas(contiguous_meta({}, self.dtype(), self.device()));
        }
        core::SymInts sizes = core::sym_sizes(self);  // over SymInt: a symbolic self or index stays so
        sizes[static_cast<size_t>(dim)] = core::sym_numel(index);
        return metas(core::contiguous_sym_meta(sizes, self.dtype(), self.device()));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        const Tensor& index = a[2].to_tensor();
        const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
        const std::vector<int64_t> idx = k::read_indices(index, {index.numel()});
        check_index_select(self, dim, idx);
        if (out[0].numel() == 0) return;
        k::index_select_kernel(out[0], dense(self), dim, idx);
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor self = as_1d(a[0].to_tensor());
        const int64_t dim = core::wrap_dim(a[1].to_int(), a[0].to_tensor().dim());
        const Tensor index = kc::on_device(a[2].to_tensor(), self.device());
        const int64_t size = self.size(dim);
        check_range_cuda(index, 0, size, [&](const Tensor& host) {
          check_index_select(a[0].to_tensor(), dim, k::read_indices(host, {index.numel()}));
        });
        if (out[0].numel() == 0) return;
        std::vector<int64_t> pre, post;
        for (int64_t d = 0; d < self.dim(); ++d) (d < dim ? pre : post).push_back(d);
        post.erase(std::remove(post.begin(), post.end(), dim), post.end());
        const Tensor adv = kc::index_offsets({index}, {size}, {self.stride(dim)}, {index.numel()}, self.device());
        kc::index_gather(out[0], self, pre, adv, post);
      });

  r.def("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        const Tensor& index = a[2].to_tensor();
        const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
        EMBER_CHECK(index.dtype() == kInt64) << "gather(): Expected dtype int64 for index";
        check_gather_shape(self, dim, index);
        return metas(core::contiguous_sym_meta(core::sym_sizes(index), self.dtype(), self.device()));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor self = as_1d(a[0].to_tensor());
        const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
        const Tensor index = dense(as_1d(a[2].to_tensor()));
        if (index.numel() == 0) return;
        check_dim_indices(index, dim, self.size(dim));
        k::gather_kernel(as_1d(out[0]), self, dim, index);
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor self = as_1d(a[0].to_tensor());
        const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
        const Tensor index = as_1d(kc::on_device(a[2].to_tensor(), self.device()));
        if (index.numel() == 0) return;
        check_dim_indices_cuda(index, dim, self.size(dim));
        kc::gather(as_1d(out[0]), self, dim, index);
      });

  r.def("scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor")
      .set_meta([](const Stack& a) { return scatter_meta(a, true); })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) { scatter_cpu(a, out, true, false); })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) { scatter_cuda(a, out, true, false); });
  r.def("scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor")
      .set_meta([](const Stack& a) { return scatter_meta(a, false); })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) { scatter_cpu(a, out, false, false); })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) { scatter_cuda(a, out, false, false); });
  r.def("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor")
      .set_meta([](const Stack& a) { return scatter_meta(a, true); })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) { scatter_cpu(a, out, true, true); })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) { scatter_cuda(a, out, true, true); });
  r.def("scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) "
        "-> Tensor")
      .set_meta(scatter_reduce_meta)
      .set_cpu(scatter_reduce_cpu)
      .set_cuda(scatter_reduce_cuda);
  r.def("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor")
      .set_meta(masked_scatter_meta)
      .set_cpu(masked_scatter_cpu)
      .set_cuda(masked_scatter_cuda);
  r.def("scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)")
      .set_inplace_of("aten::scatter.src");
  r.def("scatter_.value(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)")
      .set_inplace_of("aten::scatter.value");
  r.def("scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)")
      .set_inplace_of("aten::scatter_add");

  // A bool/uint8 mask makes the output's shape depend on the mask's values: on CPU the
  // meta function reads them; a mask on the meta device raises (there is nothing to read).
  r.def("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor")
      .set_host_indices()
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        const OptTensors& indices = a[1].to_optional_tensor_list();
        const bool masks = std::any_of(indices.begin(), indices.end(), [](const auto& t) { return t && is_mask(*t); });
        const Expanded e = expand_indices(self, indices);
        EMBER_CHECK_KIND(ErrorKind::NotImplementedError, !e.meta_mask)
            << "indexing with a bool mask gives an output whose shape depends on the mask's values, which a meta "
               "tensor does not have";
        // Over the symbols when a size is symbolic (integer indices: a mask's count is data).
        if (!masks && any_symbolic(self, indices))
          return metas(core::contiguous_sym_meta(sym_index_result(self, e), self.dtype(), self.device()));
        return metas(contiguous_meta(make_plan(self, e).result_shape, self.dtype(), self.device()));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        const Expanded e = expand_indices(self, a[1].to_optional_tensor_list());
        const Plan p = make_plan(self, e);
        const k::IndexOffsets o = index_offsets(self, e, p);
        if (out[0].numel() == 0) return;
        k::index_gather_kernel(out[0], self, o);
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        const Expanded e = expand_indices(self, a[1].to_optional_tensor_list());
        const Plan p = make_plan(self, e);
        const Tensor adv = index_offsets_cuda(self, e, p);
        if (out[0].numel() == 0) return;
        kc::index_gather(out[0], self, p.pre_dims, adv, p.post_dims);
      });

  r.def("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor")
      .set_host_indices()
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        const Tensor& values = a[2].to_tensor();
        EMBER_CHECK(values.dtype() == self.dtype())
            << "Index put requires the source and destination dtypes match, got " << scalar_type_name(self.dtype())
            << " for the destination and " << scalar_type_name(values.dtype()) << " for the source.";
        const OptTensors& indices = a[1].to_optional_tensor_list();
        const Expanded e = expand_indices(self, indices);
        const bool symbolic = core::is_symbolic(values) || any_symbolic(self, indices);
        const bool masks = std::any_of(indices.begin(), indices.end(), [](const auto& t) { return t && is_mask(*t); });
        if (symbolic && !masks) {
          // The result is self's geometry: only the check reads the symbolic sizes.
          EMBER_CHECK(sym_values_fit(self, e, values))
              << "shape mismatch: value tensor of shape " << IntArrayRef(values.impl()->sizes)
              << " cannot be broadcast to the indexing result";
        } else if (!e.meta_mask) {
          // A traced mask's count is data: its result is self's geometry whatever the mask
          // holds, and the check is made when the op runs (eagerly, or as a compiled graph's
          // extern call), so the graph need not break (Note [dynamic shapes]).
          const Plan p = make_plan(self, e);
          EMBER_CHECK(expandable_to(values.sizes(), p.result_shape))
              << "shape mismatch: value tensor of shape " << values.sizes()
              << " cannot be broadcast to indexing result of shape " << IntArrayRef(p.result_shape);
        }
        return metas(core::contiguous_sym_meta(core::sym_sizes(self), self.dtype(), self.device()));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        const Expanded e = expand_indices(self, a[1].to_optional_tensor_list());
        const Plan p = make_plan(self, e);
        const k::IndexOffsets o = index_offsets(out[0], e, p);
        k::copy_elements(out[0], self);
        Tensor values = empty_from_meta(contiguous_meta(p.result_shape, self.dtype(), kCPU));
        k::copy_elements(values, a[2].to_tensor());
        k::index_put_kernel(out[0], values, o, a[3].to_bool());
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        // Repeated indices are written in index order, as on the CPU: deterministic, and
        // accumulation gives the CPU's sums bit for bit (Note [cuda], "Indexing").
        const Tensor& self = a[0].to_tensor();
        const Expanded e = expand_indices(self, a[1].to_optional_tensor_list());
        const Plan p = make_plan(self, e);
        const Tensor adv = index_offsets_cuda(out[0], e, p);
        kc::copy_into(out[0], self);
        const Tensor values = kc::empty_device(p.result_shape, self.dtype(), out[0].device());
        kc::copy_into(values, a[2].to_tensor());
        kc::index_put(out[0], values, p.pre_dims, adv, p.post_dims, a[3].to_bool());
      });
  r.def("index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)")
      .set_inplace_of("aten::index_put");

  r.def("sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)")
      .set_meta([](const Stack& a) { return sort_meta(a[0].to_tensor(), a[1].to_int()); })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        sort_cpu(a[0].to_tensor(), a[1].to_int(), a[2].to_bool(), false, out);
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        sort_cuda(a[0].to_tensor(), a[1].to_int(), a[2].to_bool(), out);
      });
  r.def("sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)")
      .set_meta([](const Stack& a) { return sort_meta(a[0].to_tensor(), a[2].to_int()); })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        sort_cpu(a[0].to_tensor(), a[2].to_int(), a[3].to_bool(), a[1].to_optional_bool().value_or(false), out);
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        sort_cuda(a[0].to_tensor(), a[2].to_int(), a[3].to_bool(), out);
      });

  r.def("topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        const int64_t kk = a[1].to_int();
        const int64_t dim = core::wrap_dim(a[2].to_int(), self.dim());
        // k against the line's length as SymInts: a symbolic length is compared (a guard
        // where its range does not decide), not read.
        EMBER_CHECK(kk >= 0 && core::SymInt(kk) <= nonempty_sym_size(self, dim)) << "selected index k out of range";
        EMBER_CHECK(self.dtype() != kBool) << "\"topk_cpu\" not implemented for 'Bool'";
        return core::over_geometry({&self}, [&]<typename Int>() {
          const auto s = core::Geometry<Int>::sizes(self);
          std::vector<Int> sizes(s.begin(), s.end());
          if (self.dim() > 0) sizes[static_cast<size_t>(dim)] = Int(kk);
          return std::vector<TensorMeta>{core::contiguous_meta_over(sizes, self.dtype(), self.device()),
                                         core::contiguous_meta_over(sizes, kInt64, self.device())};
        });
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& self = a[0].to_tensor();
        k::topk_kernel(out[0], out[1], self, a[1].to_int(), core::wrap_dim(a[2].to_int(), self.dim()), a[3].to_bool(),
                       a[4].to_bool());
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        // The first k of the line sorted descending (largest) or ascending: sorted whether
        // or not `sorted` asks, ties in index order.
        const Tensor& self = a[0].to_tensor();
        kc::sort_lines(self, core::wrap_dim(a[2].to_int(), self.dim()), a[3].to_bool(), a[1].to_int(), out[0], out[1]);
      });

  r.def("nonzero(Tensor self) -> Tensor").set_cpu_dynamic([](const Stack& a) -> Stack {
    const Tensor& self = a[0].to_tensor();
    auto [count, coords] = k::nonzero_kernel(self);
    Tensor out = empty_from_meta(contiguous_meta({count, self.dim()}, kInt64, kCPU));
    if (!coords.empty()) std::memcpy(out.raw_data_ptr(), coords.data(), coords.size() * sizeof(int64_t));
    return {out};
  });
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_tensor;

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index, Loc loc) {
  return call_tensor(EMBER_OP("aten::index_select"), {self, dim, index}, loc);
}
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, Loc loc) {
  return call_tensor(EMBER_OP("aten::gather"), {self, dim, index}, loc);
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Loc loc) {
  return call_tensor(EMBER_OP("aten::scatter.src"), {self, dim, index, src}, loc);
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, Loc loc) {
  return call_tensor(EMBER_OP("aten::scatter.value"), {self, dim, index, value}, loc);
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Loc loc) {
  return call_tensor(EMBER_OP("aten::scatter_add"), {self, dim, index, src}, loc);
}
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self, Loc loc) {
  return call_tensor(EMBER_OP("aten::scatter_reduce.two"), {self, dim, index, src, reduce, include_self}, loc);
}
Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source, Loc loc) {
  return call_tensor(EMBER_OP("aten::masked_scatter"), {self, mask, source}, loc);
}
Tensor index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, Loc loc) {
  return call_tensor(EMBER_OP("aten::index.Tensor"), {self, indices}, loc);
}
Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                 bool accumulate, Loc loc) {
  return call_tensor(EMBER_OP("aten::index_put"), {self, indices, values, accumulate}, loc);
}
Tensor& index_put_(Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                   bool accumulate, Loc loc) {
  return ops::call_inplace(EMBER_OP("aten::index_put_"), self, {self, indices, values, accumulate}, loc);
}
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending, Loc loc) {
  return ops::tuple2(ops::call_at(EMBER_OP("aten::sort"), {self, dim, descending}, loc));
}
std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted, Loc loc) {
  return ops::tuple2(ops::call_at(EMBER_OP("aten::topk"), {self, k, dim, largest, sorted}, loc));
}
Tensor nonzero(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::nonzero"), {self}, loc); }
Tensor masked_select(const Tensor& self, const Tensor& mask, Loc loc) {
  // PyTorch's masked_select, written over ops rather than registered as one: indexing
  // with the mask once both have the broadcast shape (a 0-dim pair as one element), so a
  // graph holds index.Tensor with a bool mask (a data-dependent size, Note [dynamic
  // shapes]) and the gradient is index's. Sizes already equal (compared as expressions,
  // so symbolic sizes stay unread) need no expand.
  support::UserLocScope at_user(loc);
  EMBER_CHECK(mask.dtype() == kBool) << "masked_select: expected BoolTensor for mask";
  Tensor s = self;
  Tensor m = mask;
  if (!ops::same_sizes_unread(s, m)) {
    const std::vector<int64_t> shape = core::broadcast_shapes(s.sizes(), m.sizes());
    s = expand(s, shape, loc);
    m = expand(m, shape, loc);
  }
  if (s.dim() == 0) {
    s = s.unsqueeze(0, loc);
    m = m.unsqueeze(0, loc);
  }
  return index(s, {m}, loc);
}

}  // namespace ember
