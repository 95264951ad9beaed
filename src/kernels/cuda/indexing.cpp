// kernels/cuda/indexing.cpp — see indexing.h.
#include "kernels/cuda/indexing.h"

#include <algorithm>
#include <sstream>

#include "core/shape.h"
#include "kernels/cpu/copy.h"
#include "kernels/cuda/loops.h"
#include "kernels/cuda/nvrtc.h"
#include "kernels/cuda/scan.h"
#include "kernels/cuda/sort.h"

namespace ember::kernels::cuda {
namespace {

/// See index_helpers_source().
constexpr const char* kIndexHelpers = R"CUDA(
namespace ember_dev {
/// The element offset of linear index i (row-major over sizes) under strides.
__device__ __forceinline__ long long dims_offset(long long i, int ndim, const long long* sizes,
                                                 const long long* strides) {
  long long off = 0;
#pragma unroll 1
  for (int d = ndim - 1; d >= 0; --d) {
    off += (i % sizes[d]) * strides[d];
    i /= sizes[d];
  }
  return off;
}

/// The offsets of the first n operands of a pointwise geometry at linear index i.
__device__ __forceinline__ void operand_offsets(long long i, const Geometry& g, int n, long long* off) {
  for (int k = 0; k < n; ++k) off[k] = 0;
#pragma unroll 1
  for (int d = g.ndim - 1; d >= 0; --d) {
    const long long idx = i % g.sizes[d];
    i /= g.sizes[d];
    for (int k = 0; k < n; ++k) off[k] += idx * g.strides[k][d];
  }
}

/// a + b rounded to T, computed in T's math type: the CPU's accumulation (dispatch_add).
template <typename T> __device__ __forceinline__ T add_(T a, T b) {
  typedef typename OpMath<T>::type M;
  return cvt<T>(cvt<M>(a) + cvt<M>(b));
}

#define EMBER_GRID_STRIDE(i, n)                                                                  \
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);    \
       i += static_cast<long long>(gridDim.x) * blockDim.x)
}  // namespace ember_dev
)CUDA";

/// The indexing kernels, after the helpers. Writes that may meet on one element are made by
/// one thread in the CPU kernel's order: index_put's thread owns a (p, q) pair and walks b,
/// scatter's thread owns a line along the dim and walks it.
constexpr const char* kIndexPrelude = R"CUDA(
namespace ember_dev {
struct IndexGeometry {
  long long P, B, Q;
  int pre_ndim, post_ndim;
  long long pre_sizes[EMBER_MAX_DIMS];
  long long pre_strides[EMBER_MAX_DIMS];
  long long post_sizes[EMBER_MAX_DIMS];
  long long post_strides[EMBER_MAX_DIMS];
};

// The first index tensor sets adv (first = 1), the others add to it.
template <typename I>
__device__ void index_offsets(long long* adv, const I* index, long long size, long long stride, int first,
                              const Geometry& g) {
  EMBER_GRID_STRIDE(i, g.numel) {
    long long off[2];
    operand_offsets(i, g, 2, off);
    long long v = static_cast<long long>(index[off[1]]);
    if (v < 0) v += size;
    adv[off[0]] = (first ? 0 : adv[off[0]]) + v * stride;
  }
}

template <typename T>
__device__ void index_gather(T* out, const T* self, const long long* adv, const IndexGeometry& g) {
  EMBER_GRID_STRIDE(i, g.P * g.B * g.Q) {
    const long long q = i % g.Q, r = i / g.Q;
    const long long b = r % g.B, p = r / g.B;
    out[i] = self[dims_offset(p, g.pre_ndim, g.pre_sizes, g.pre_strides) + adv[b] +
                  dims_offset(q, g.post_ndim, g.post_sizes, g.post_strides)];
  }
}

template <bool Accumulate, typename T>
__device__ void index_put(T* self, const T* values, const long long* adv, const IndexGeometry& g) {
  EMBER_GRID_STRIDE(t, g.P * g.Q) {
    const long long p = t / g.Q, q = t % g.Q;
    T* base = self + dims_offset(p, g.pre_ndim, g.pre_sizes, g.pre_strides) +
              dims_offset(q, g.post_ndim, g.post_sizes, g.post_strides);
    const T* v = values + p * g.B * g.Q + q;
    for (long long b = 0; b < g.B; ++b) {
      T* d = base + adv[b];
      if constexpr (Accumulate) *d = add_(*d, v[b * g.Q]);
      else *d = v[b * g.Q];
    }
  }
}

// Operands of g: 0 out, 1 index, 2 self with the dim's stride 0.
template <typename T>
__device__ void gather_dim(T* out, const long long* index, const T* self, long long self_dim_stride, const Geometry& g) {
  EMBER_GRID_STRIDE(i, g.numel) {
    long long off[3];
    operand_offsets(i, g, 3, off);
    out[off[0]] = self[off[2] + index[off[1]] * self_dim_stride];
  }
}

// One thread per line along the dim; operands of g: 0 index, 1 src, 2 out, all at the
// line's first position. n positions with strides is, ss, os along the dim.
template <bool Add, typename T>
__device__ void scatter_dim(const long long* index, const T* src, T* out, long long n, long long is, long long ss,
                            long long os, const Geometry& g) {
  EMBER_GRID_STRIDE(l, g.numel) {
    long long off[3];
    operand_offsets(l, g, 3, off);
    for (long long j = 0; j < n; ++j) {
      T* d = out + off[2] + index[off[0] + j * is] * os;
      const T s = src[off[1] + j * ss];
      if constexpr (Add) *d = add_(*d, s);
      else *d = s;
    }
  }
}

// The sorted forms: `sorted` holds the offsets (index_put) or each line's indices (scatter)
// sorted stably, `perm` where each came from. A thread takes one run of equal targets and
// writes it in index order; other threads of the run return at once.
template <bool Accumulate, typename T>
__device__ void index_put_sorted(T* self, const T* values, const long long* sorted, const long long* perm,
                                 const IndexGeometry& g) {
  EMBER_GRID_STRIDE(t, g.B * g.P * g.Q) {
    const long long q = t % g.Q, r = t / g.Q;
    const long long p = r % g.P, s = r / g.P;
    const long long key = sorted[s];
    if (s > 0 && sorted[s - 1] == key) continue;
    T* d = self + dims_offset(p, g.pre_ndim, g.pre_sizes, g.pre_strides) + key +
           dims_offset(q, g.post_ndim, g.post_sizes, g.post_strides);
    const T* v = values + p * g.B * g.Q + q;
    long long e = s;
    if constexpr (Accumulate) {
      T acc = *d;
      for (; e < g.B && sorted[e] == key; ++e) acc = add_(acc, v[perm[e] * g.Q]);
      *d = acc;
    } else {
      while (e + 1 < g.B && sorted[e + 1] == key) ++e;
      *d = v[perm[e] * g.Q];
    }
  }
}

// Operands of g: 0 the sorted indices and their permutation (one layout), 1 src, 2 out, at
// each line's first position; st, ss, os their strides along the dim.
template <bool Add, typename T>
__device__ void scatter_sorted(const long long* sorted, const long long* perm, const T* src, T* out, long long n,
                               long long st, long long ss, long long os, const Geometry& g) {
  EMBER_GRID_STRIDE(t, g.numel * n) {
    const long long l = t / n, s = t % n;
    long long off[3];
    operand_offsets(l, g, 3, off);
    const long long* line = sorted + off[0];
    const long long* from = perm + off[0];
    const long long key = line[s * st];
    if (s > 0 && line[(s - 1) * st] == key) continue;
    T* d = out + off[2] + key * os;
    long long e = s;
    if constexpr (Add) {
      T acc = *d;
      for (; e < n && line[e * st] == key; ++e) acc = add_(acc, src[off[1] + from[e * st] * ss]);
      *d = acc;
    } else {
      while (e + 1 < n && line[(e + 1) * st] == key) ++e;
      *d = src[off[1] + from[e * st] * ss];
    }
  }
}
// scatter_reduce.two: one thread per line along the dim, as scatter_dim; operands of g: 0
// index, 1 src, 2 out, 3 cnt (when counting). cnt holds each target's writes (zeroed by
// the line's thread first): without include_self a target's first write replaces it, and
// mean divides by the count. Op: 0 sum, 1 prod, 2 mean, 3 amax, 4 amin (cpu::ScatterReduce).
template <typename T> struct ScatterAcc { typedef typename OpMath<T>::type type; };
template <> struct ScatterAcc<bool> { typedef long long type; };  // sum: or, prod: and

template <int Op, typename T> __device__ __forceinline__ T scatter_combine(T a, T b) {
  typedef typename ScatterAcc<T>::type M;
  const M x = cvt<M>(a), y = cvt<M>(b);
  if constexpr (Op == 0 || Op == 2) return cvt<T>(x + y);
  else if constexpr (Op == 1) return cvt<T>(x * y);
  else if constexpr (Op == 3) return y != y ? b : (x < y ? b : a);  // a NaN of src wins
  else return y != y ? b : (y < x ? b : a);
}

template <int Op, typename T>
__device__ void scatter_reduce_dim(const long long* index, const T* src, T* out, long long* cnt, long long n,
                                   long long is, long long ss, long long os, long long cs, long long L,
                                   int include_self, const Geometry& g) {
  typedef typename ScatterAcc<T>::type M;
  EMBER_GRID_STRIDE(l, g.numel) {
    long long off[4];
    operand_offsets(l, g, cnt ? 4 : 3, off);
    long long* c = cnt ? cnt + off[3] : nullptr;
    if (c)
      for (long long t = 0; t < L; ++t) c[t * cs] = 0;
    for (long long j = 0; j < n; ++j) {
      const long long t = index[off[0] + j * is];
      T* d = out + off[2] + t * os;
      const T s = src[off[1] + j * ss];
      *d = include_self || c[t * cs] > 0 ? scatter_combine<Op>(*d, s) : s;
      if (c) ++c[t * cs];
    }
    if constexpr (Op == 2) {
      for (long long t = 0; t < L; ++t) {
        if (c[t * cs] == 0) continue;
        T* d = out + off[2] + t * os;
        const M k = static_cast<M>(c[t * cs] + (include_self ? 1 : 0));
        const M v = cvt<M>(*d);
        const M q = v / k;
        if constexpr (IsFloat<T>::value) *d = cvt<T>(q);
        else *d = cvt<T>(q - (q * k != v && v < 0 ? 1 : 0));  // floor division
      }
    }
  }
}

// masked_scatter: pos is the mask's inclusive count; element i is selected where it steps.
template <typename T> __device__ void masked_scatter(T* out, const long long* pos, const T* src, long long n) {
  EMBER_GRID_STRIDE(i, n) {
    const long long k = pos[i];
    if (k != (i > 0 ? pos[i - 1] : 0)) out[i] = src[k - 1];
  }
}
}  // namespace ember_dev
)CUDA";

const char* kind_name(IndexKernelKind k) {
  switch (k) {
    case IndexKernelKind::Offsets:
      return "index_offsets";
    case IndexKernelKind::Gather:
      return "index_gather";
    case IndexKernelKind::Put:
      return "index_put";
    case IndexKernelKind::PutAdd:
      return "index_put_add";
    case IndexKernelKind::GatherDim:
      return "gather";
    case IndexKernelKind::ScatterDim:
      return "scatter";
    case IndexKernelKind::ScatterAdd:
      return "scatter_add";
    case IndexKernelKind::ScatterReduce:
      return "scatter_reduce";
    case IndexKernelKind::MaskedScatter:
      return "masked_scatter";
  }
  EMBER_INTERNAL_ASSERT(false) << "unknown indexing kernel";
}

/// scatter_reduce's `reduce` argument as it is spelled.
const char* reduce_name(cpu::ScatterReduce r) {
  switch (r) {
    case cpu::ScatterReduce::kSum:
      return "sum";
    case cpu::ScatterReduce::kProd:
      return "prod";
    case cpu::ScatterReduce::kMean:
      return "mean";
    case cpu::ScatterReduce::kAmax:
      return "amax";
    case cpu::ScatterReduce::kAmin:
      return "amin";
  }
  EMBER_INTERNAL_ASSERT(false) << "unknown scatter reduction";
}

void launch(const IndexKernel& k, const Tensor& on, int64_t threads, std::vector<void*> args) {
  if (threads == 0) return;
  launch_threads(get_kernel(kernel_symbol(k), on.device().index, [&] { return render_index(k); }), on.device(), threads,
                 std::move(args));
}

/// `dims` of `t`, innermost first dropped of size-1 dims, into a side of the geometry.
void fill_side(const Tensor& t, const std::vector<int64_t>& dims, int& ndim, long long* sizes, long long* strides,
               long long& numel, const char* which) {
  std::vector<int64_t> kept;
  numel = 1;
  for (int64_t d : dims) {
    numel *= t.size(d);
    if (t.size(d) != 1) kept.push_back(d);
  }
  EMBER_CHECK_KIND(ErrorKind::NotImplementedError, kept.size() <= static_cast<size_t>(kMaxDims))
      << "CUDA advanced indexing handles at most " << kMaxDims << " " << which << "; this call has " << kept.size();
  ndim = static_cast<int>(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    sizes[i] = t.size(kept[i]);
    strides[i] = t.stride(kept[i]);
  }
}

}  // namespace

const char* index_helpers_source() { return kIndexHelpers; }

std::string kernel_symbol(const IndexKernel& k) {
  std::string name = std::string("ember_") + kind_name(k.kind);
  if (k.kind == IndexKernelKind::ScatterReduce) name += std::string("_") + reduce_name(k.reduce);
  return name + (k.sorted ? "_sorted_" : "_") + dtype_tag(k.dtype);
}

std::string render_index(const IndexKernel& k) {
  const std::string T = cuda_type_name(k.dtype);
  std::ostringstream os;
  os << "// " << kind_name(k.kind) << "\n"
     << render_prelude() << kIndexHelpers << kIndexPrelude << "\nextern \"C\" __global__ void " << kernel_symbol(k);
  switch (k.kind) {
    case IndexKernelKind::Offsets:
      os << "(long long* adv, const " << T
         << "* index, long long size, long long stride, int first, ember_dev::Geometry g) {\n"
         << "  ember_dev::index_offsets(adv, index, size, stride, first, g);\n";
      break;
    case IndexKernelKind::Gather:
      os << "(" << T << "* out, const " << T << "* self, const long long* adv, ember_dev::IndexGeometry g) {\n"
         << "  ember_dev::index_gather(out, self, adv, g);\n";
      break;
    case IndexKernelKind::Put:
    case IndexKernelKind::PutAdd: {
      const char* acc = k.kind == IndexKernelKind::PutAdd ? "true" : "false";
      if (k.sorted) {
        os << "(" << T << "* self, const " << T
           << "* values, const long long* sorted, const long long* perm, ember_dev::IndexGeometry g) {\n"
           << "  ember_dev::index_put_sorted<" << acc << ">(self, values, sorted, perm, g);\n";
      } else {
        os << "(" << T << "* self, const " << T << "* values, const long long* adv, ember_dev::IndexGeometry g) {\n"
           << "  ember_dev::index_put<" << acc << ">(self, values, adv, g);\n";
      }
      break;
    }
    case IndexKernelKind::GatherDim:
      os << "(" << T << "* out, const long long* index, const " << T
         << "* self, long long self_dim_stride, ember_dev::Geometry g) {\n"
         << "  ember_dev::gather_dim(out, index, self, self_dim_stride, g);\n";
      break;
    case IndexKernelKind::ScatterDim:
    case IndexKernelKind::ScatterAdd: {
      const char* add = k.kind == IndexKernelKind::ScatterAdd ? "true" : "false";
      if (k.sorted) {
        os << "(const long long* sorted, const long long* perm, const " << T << "* src, " << T
           << "* out, long long n, long long st, long long ss, long long os, ember_dev::Geometry g) {\n"
           << "  ember_dev::scatter_sorted<" << add << ">(sorted, perm, src, out, n, st, ss, os, g);\n";
      } else {
        os << "(const long long* index, const " << T << "* src, " << T
           << "* out, long long n, long long is, long long ss, long long os, ember_dev::Geometry g) {\n"
           << "  ember_dev::scatter_dim<" << add << ">(index, src, out, n, is, ss, os, g);\n";
      }
      break;
    }
    case IndexKernelKind::ScatterReduce:
      os << "(const long long* index, const " << T << "* src, " << T
         << "* out, long long* cnt, long long n, long long is, long long ss, long long os, long long cs, long long L, "
            "int include_self, ember_dev::Geometry g) {\n"
         << "  ember_dev::scatter_reduce_dim<" << static_cast<int>(k.reduce)
         << ">(index, src, out, cnt, n, is, ss, os, cs, L, include_self, g);\n";
      break;
    case IndexKernelKind::MaskedScatter:
      os << "(" << T << "* out, const long long* pos, const " << T << "* src, long long n) {\n"
         << "  ember_dev::masked_scatter(out, pos, src, n);\n";
      break;
  }
  os << "}\n";
  return os.str();
}

IndexGeometry make_index_geometry(const Tensor& t, const std::vector<int64_t>& pre_dims, int64_t B,
                                  const std::vector<int64_t>& post_dims) {
  IndexGeometry g;
  g.B = B;
  fill_side(t, pre_dims, g.pre_ndim, g.pre_sizes, g.pre_strides, g.P, "dims before the indexed ones");
  fill_side(t, post_dims, g.post_ndim, g.post_sizes, g.post_strides, g.Q, "dims after the indexed ones");
  return g;
}

bool use_sorted_writes(int64_t B, int64_t parallel) {
  // Walking B writes in one thread costs B dependent steps; sorting costs O(log^2 B)
  // launches. Past a few dozen writes per thread, with too few threads to fill a GPU, sort.
  return B > 32 && parallel < (int64_t{1} << 16);
}

Tensor on_device(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  Tensor d = empty_device(t.sizes(), t.dtype(), device);
  copy_into(d, t);
  return d;
}

Tensor index_offsets(const std::vector<Tensor>& indices, const std::vector<int64_t>& sizes,
                     const std::vector<int64_t>& strides, IntArrayRef shape, Device device) {
  Tensor adv = empty_device(shape, kInt64, device);
  if (adv.numel() == 0) return adv;
  if (indices.empty()) {  // no index tensor: one position, offset 0
    auto impl = std::make_shared<TensorImpl>();
    impl->dtype = kInt64;
    impl->device = kCPU;
    impl->refresh();
    impl->storage = std::make_shared<Storage>(sizeof(int64_t), kCPU);
    Tensor host(std::move(impl));
    *host.data_ptr<int64_t>() = 0;
    copy_into(adv, host);
    return adv;
  }
  for (size_t k = 0; k < indices.size(); ++k) {
    const Tensor& index = indices[k];
    EMBER_INTERNAL_ASSERT(index.device() == device && (index.dtype() == kInt64 || index.dtype() == kInt32))
        << "index_offsets: an index of dtype " << index.dtype() << " on " << index.device();
    Geometry g = make_geometry({adv, index});
    void* a = adv.raw_data_ptr();
    void* i = index.raw_data_ptr();
    long long size = sizes[k], stride = strides[k];
    int first = k == 0 ? 1 : 0;
    launch(IndexKernel{.kind = IndexKernelKind::Offsets, .dtype = index.dtype()}, adv, adv.numel(),
           {&a, &i, &size, &stride, &first, &g});
  }
  return adv;
}

void index_gather(const Tensor& out, const Tensor& self, const std::vector<int64_t>& pre_dims, const Tensor& adv,
                  const std::vector<int64_t>& post_dims) {
  EMBER_INTERNAL_ASSERT(out.is_contiguous() && adv.is_contiguous() && adv.dtype() == kInt64)
      << "index_gather: the output and the offsets must be contiguous";
  IndexGeometry g = make_index_geometry(self, pre_dims, adv.numel(), post_dims);
  void* o = out.raw_data_ptr();
  void* s = self.raw_data_ptr();
  void* a = adv.raw_data_ptr();
  launch(IndexKernel{.kind = IndexKernelKind::Gather, .dtype = self.dtype()}, out, g.P * g.B * g.Q, {&o, &s, &a, &g});
}

void index_put(const Tensor& self, const Tensor& values, const std::vector<int64_t>& pre_dims, const Tensor& adv,
               const std::vector<int64_t>& post_dims, bool accumulate) {
  EMBER_INTERNAL_ASSERT(values.is_contiguous() && adv.is_contiguous() && values.dtype() == self.dtype())
      << "index_put: the values and the offsets must be contiguous";
  IndexGeometry g = make_index_geometry(self, pre_dims, adv.numel(), post_dims);
  if (g.B * g.P * g.Q == 0) return;
  void* s = self.raw_data_ptr();
  void* v = values.raw_data_ptr();
  const IndexKernelKind kind = accumulate ? IndexKernelKind::PutAdd : IndexKernelKind::Put;
  if (!use_sorted_writes(g.B, g.P * g.Q)) {
    void* a = adv.raw_data_ptr();
    launch(IndexKernel{.kind = kind, .dtype = self.dtype()}, self, g.P * g.Q, {&s, &v, &a, &g});
    return;
  }
  const Tensor sorted = empty_device({g.B}, kInt64, self.device()), perm = empty_device({g.B}, kInt64, self.device());
  sort_lines(cpu::raw_view(adv, {g.B}, {1}, adv.storage_offset()), 0, false, g.B, sorted, perm);
  void* sp = sorted.raw_data_ptr();
  void* pp = perm.raw_data_ptr();
  launch(IndexKernel{.kind = kind, .dtype = self.dtype(), .sorted = true}, self, g.B * g.P * g.Q,
         {&s, &v, &sp, &pp, &g});
}

void gather(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  if (index.numel() == 0) return;
  std::vector<int64_t> strides = self.strides().vec();
  long long self_dim_stride = strides[dim];
  strides[dim] = 0;
  const Tensor self_view = cpu::raw_view(self, index.sizes().vec(), strides, self.storage_offset());
  Geometry g = make_geometry({out, index, self_view});
  void* o = out.raw_data_ptr();
  void* i = index.raw_data_ptr();
  void* s = self_view.raw_data_ptr();
  launch(IndexKernel{.kind = IndexKernelKind::GatherDim, .dtype = self.dtype()}, out, out.numel(),
         {&o, &i, &s, &self_dim_stride, &g});
}

void scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, bool add) {
  if (index.numel() == 0) return;
  std::vector<int64_t> lines = index.sizes().vec();
  lines[dim] = 1;
  const bool scalar = src.dim() == 0;
  const Tensor index_line = cpu::raw_view(index, lines, index.strides().vec(), index.storage_offset());
  const Tensor src_line = scalar
                              ? cpu::raw_view(src, lines, std::vector<int64_t>(lines.size(), 0), src.storage_offset())
                              : cpu::raw_view(src, lines, src.strides().vec(), src.storage_offset());
  const Tensor out_line = cpu::raw_view(out, lines, out.strides().vec(), out.storage_offset());
  void* s = src_line.raw_data_ptr();
  void* o = out_line.raw_data_ptr();
  long long n = index.size(dim), ss = scalar ? 0 : src.stride(dim), os = out.stride(dim);
  const IndexKernelKind kind = add ? IndexKernelKind::ScatterAdd : IndexKernelKind::ScatterDim;
  if (!use_sorted_writes(n, index_line.numel())) {
    Geometry g = make_geometry({index_line, src_line, out_line});
    void* i = index_line.raw_data_ptr();
    long long is = index.stride(dim);
    launch(IndexKernel{.kind = kind, .dtype = out.dtype()}, out, index_line.numel(),
           {&i, &s, &o, &n, &is, &ss, &os, &g});
    return;
  }
  // Each line's indices sorted stably (one layout for both results, contiguous).
  const Tensor sorted = empty_device(index.sizes(), kInt64, out.device());
  const Tensor perm = empty_device(index.sizes(), kInt64, out.device());
  sort_lines(index, dim, false, n, sorted, perm);
  const Tensor sorted_line = cpu::raw_view(sorted, lines, sorted.strides().vec(), 0);
  Geometry g = make_geometry({sorted_line, src_line, out_line});
  void* sp = sorted.raw_data_ptr();
  void* pp = perm.raw_data_ptr();
  long long st = sorted.stride(dim);
  launch(IndexKernel{.kind = kind, .dtype = out.dtype(), .sorted = true}, out, index_line.numel() * n,
         {&sp, &pp, &s, &o, &n, &st, &ss, &os, &g});
}

void scatter_reduce(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, cpu::ScatterReduce op,
                    bool include_self) {
  if (index.numel() == 0) return;
  std::vector<int64_t> lines = index.sizes().vec();
  lines[dim] = 1;
  const Tensor index_line = cpu::raw_view(index, lines, index.strides().vec(), index.storage_offset());
  const Tensor src_line = cpu::raw_view(src, lines, src.strides().vec(), src.storage_offset());
  const Tensor out_line = cpu::raw_view(out, lines, out.strides().vec(), out.storage_offset());
  std::vector<Tensor> operands = {index_line, src_line, out_line};
  // Per-target write counts, one line of out's length per index line: only where a first
  // write replaces self or mean divides by the count.
  long long L = out.size(dim), cs = 0;
  Tensor cnt;
  if (!include_self || op == cpu::ScatterReduce::kMean) {
    std::vector<int64_t> cnt_sizes = lines;
    cnt_sizes[dim] = L;
    cnt = empty_device(cnt_sizes, kInt64, out.device());
    cs = cnt.stride(dim);
    operands.push_back(cpu::raw_view(cnt, lines, cnt.strides().vec(), 0));
  }
  Geometry g = make_geometry(operands);
  void* i = index_line.raw_data_ptr();
  void* s = src_line.raw_data_ptr();
  void* o = out_line.raw_data_ptr();
  void* c = cnt.defined() ? cnt.raw_data_ptr() : nullptr;
  long long n = index.size(dim), is = index.stride(dim), ss = src.stride(dim), os = out.stride(dim);
  int self_too = include_self ? 1 : 0;
  launch(IndexKernel{.kind = IndexKernelKind::ScatterReduce, .dtype = out.dtype(), .reduce = op}, out,
         index_line.numel(), {&i, &s, &o, &c, &n, &is, &ss, &os, &cs, &L, &self_too, &g});
}

Tensor mask_positions(const Tensor& mask) {
  const int64_t n = mask.numel();
  Tensor flags = mask;  // a uint8 mask counts each nonzero once
  if (mask.dtype() != kBool) {
    flags = empty_device(mask.sizes(), kBool, mask.device());
    copy_into(flags, mask);
  }
  Tensor ones = empty_device(mask.sizes(), kInt64, mask.device());
  copy_into(ones, flags);
  Tensor pos = empty_device({n}, kInt64, mask.device());
  if (n > 0) cumsum(cpu::raw_view(ones, {n}, {1}, 0), 0, pos);
  return pos;
}

void masked_scatter(const Tensor& out, const Tensor& positions, const Tensor& source) {
  EMBER_INTERNAL_ASSERT(out.is_contiguous() && source.is_contiguous() && positions.numel() == out.numel())
      << "masked_scatter: the output, the positions and the source must be contiguous and match";
  void* o = out.raw_data_ptr();
  void* p = positions.raw_data_ptr();
  void* s = source.raw_data_ptr();
  long long n = out.numel();
  launch(IndexKernel{.kind = IndexKernelKind::MaskedScatter, .dtype = out.dtype()}, out, n, {&o, &p, &s, &n});
}

}  // namespace ember::kernels::cuda
