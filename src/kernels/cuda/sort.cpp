// kernels/cuda/sort.cpp — see sort.h.
#include "kernels/cuda/sort.h"

#include <algorithm>
#include <sstream>

#include "kernels/cpu/copy.h"
#include "kernels/cuda/indexing.h"
#include "kernels/cuda/kernel_source.h"
#include "kernels/cuda/loops.h"
#include "kernels/cuda/nvrtc.h"

namespace ember::kernels::cuda {
namespace {

/// The sort kernels, after the indexing helpers (line offsets, the grid-stride loop). The
/// scratch buffer holds, per line, L = 2^m (key, index) pairs; an index >= n marks
/// padding, which sorts after every element. `before(a, b)` is ATen's KeyValueComp
/// (NaN above every number) made total by the index, so the network's result is the
/// stable sort's whatever the order of its exchanges.
constexpr const char* kSortPrelude = R"CUDA(
namespace ember_dev {
template <typename K>
__device__ __forceinline__ bool before(K a, long long ia, K b, long long ib, long long n, bool descending) {
  const bool pa = ia >= n, pb = ib >= n;
  if (pa || pb) return pa == pb ? ia < ib : pb;
  const bool na = isnan(a), nb = isnan(b);
  if (na != nb) return descending ? na : nb;
  if (!na) {
    if (descending ? a > b : a < b) return true;
    if (descending ? b > a : b < a) return false;
  }
  return ia < ib;
}

template <typename T>
__device__ void sort_load(typename OpMath<T>::type* keys, long long* idx, const T* self, long long n, long long L,
                          long long xs, long long lines, const Geometry& g) {
  typedef typename OpMath<T>::type K;
  EMBER_GRID_STRIDE(t, lines * L) {
    const long long line = t / L, j = t % L;
    idx[t] = j;
    if (j < n) {
      long long off;
      operand_offsets(line, g, 1, &off);
      keys[t] = cvt<K>(self[off + j * xs]);
    } else {
      keys[t] = K(0);
    }
  }
}

// One stage (k, j) of the bitonic network: each thread exchanges one pair (i, i + j).
template <typename T>
__device__ void sort_step(typename OpMath<T>::type* keys, long long* idx, long long n, long long L, long long k,
                          long long j, int descending, long long lines) {
  typedef typename OpMath<T>::type K;
  const long long half = L / 2;
  EMBER_GRID_STRIDE(t, lines * half) {
    const long long line = t / half, p = t % half;
    const long long i = 2 * j * (p / j) + p % j;
    const long long a = line * L + i, b = a + j;
    const bool up = (i & k) == 0;
    const K ka = keys[a], kb = keys[b];
    const long long ia = idx[a], ib = idx[b];
    const bool swap = up ? before(kb, ib, ka, ia, n, descending != 0) : before(ka, ia, kb, ib, n, descending != 0);
    if (swap) {
      keys[a] = kb;
      keys[b] = ka;
      idx[a] = ib;
      idx[b] = ia;
    }
  }
}

// Operands of g: 0 values, 1 indices, at each line's first element.
template <typename T>
__device__ void sort_store(T* values, long long* indices, const typename OpMath<T>::type* keys, const long long* idx,
                           long long L, long long count, long long vs, long long is, long long lines,
                           const Geometry& g) {
  EMBER_GRID_STRIDE(t, lines * count) {
    const long long line = t / count, c = t % count;
    long long off[2];
    operand_offsets(line, g, 2, off);
    values[off[0] + c * vs] = cvt<T>(keys[line * L + c]);
    indices[off[1] + c * is] = idx[line * L + c];
  }
}
}  // namespace ember_dev
)CUDA";

const char* stage_name(SortStage s) {
  switch (s) {
    case SortStage::Load:
      return "load";
    case SortStage::Step:
      return "step";
    case SortStage::Store:
      return "store";
  }
  EMBER_INTERNAL_ASSERT(false) << "unknown sort stage";
}

/// The dtype keys are compared in: the math type (float for half and bfloat16).
ScalarType key_dtype(ScalarType t) { return t == kHalf || t == kBFloat16 ? kFloat : t; }

int64_t padded(int64_t n) {
  int64_t L = 1;
  while (L < n) L *= 2;
  return L;
}

void* function(const SortKernel& k, const Tensor& on) {
  return get_kernel(kernel_symbol(k), on.device().index, [&] { return render_sort(k); });
}

/// `t` seen as lines along `dim`: its sizes with 1 at dim, its strides.
Tensor lines_of(const Tensor& t, int64_t dim) {
  std::vector<int64_t> sizes = t.sizes().vec();
  sizes[static_cast<size_t>(dim)] = 1;
  return cpu::raw_view(t, sizes, t.strides().vec(), t.storage_offset());
}

}  // namespace

std::string kernel_symbol(const SortKernel& k) {
  return std::string("ember_sort_") + stage_name(k.stage) + "_" + dtype_tag(k.dtype);
}

std::string render_sort(const SortKernel& k) {
  const std::string T = cuda_type_name(k.dtype);
  const std::string K = cuda_type_name(key_dtype(k.dtype));
  std::ostringstream os;
  os << "// sort: " << stage_name(k.stage) << "\n"
     << render_prelude() << index_helpers_source() << kSortPrelude << "\nextern \"C\" __global__ void "
     << kernel_symbol(k);
  switch (k.stage) {
    case SortStage::Load:
      os << "(" << K << "* keys, long long* idx, const " << T
         << "* self, long long n, long long L, long long xs, long long lines, ember_dev::Geometry g) {\n"
         << "  ember_dev::sort_load(keys, idx, self, n, L, xs, lines, g);\n";
      break;
    case SortStage::Step:
      os << "(" << K << "* keys, long long* idx, long long n, long long L, long long k, long long j, int descending, "
         << "long long lines) {\n"
         << "  ember_dev::sort_step<" << T << ">(keys, idx, n, L, k, j, descending, lines);\n";
      break;
    case SortStage::Store:
      os << "(" << T << "* values, long long* indices, const " << K
         << "* keys, const long long* idx, long long L, long long count, long long vs, long long is, long long lines, "
         << "ember_dev::Geometry g) {\n"
         << "  ember_dev::sort_store(values, indices, keys, idx, L, count, vs, is, lines, g);\n";
      break;
  }
  os << "}\n";
  return os.str();
}

int64_t bitonic_stages(int64_t n) {
  int64_t m = 0;
  for (int64_t L = padded(n); L > 1; L /= 2) ++m;
  return m * (m + 1) / 2;
}

void sort_lines(const Tensor& self_in, int64_t dim_in, bool descending, int64_t count, const Tensor& values_in,
                const Tensor& indices_in) {
  if (self_in.numel() == 0 || count == 0) return;
  // A 0-dim tensor is one line of one element.
  auto one_d = [](const Tensor& t) { return t.dim() == 0 ? cpu::raw_view(t, {1}, {1}, t.storage_offset()) : t; };
  const Tensor self = one_d(self_in), values = one_d(values_in), indices = one_d(indices_in);
  const int64_t dim = self_in.dim() == 0 ? 0 : dim_in;
  long long n = self.size(dim);
  long long L = padded(n);
  long long lines = self.numel() / n;
  const Tensor keys = empty_device({lines * L}, key_dtype(self.dtype()), self.device());
  const Tensor idx = empty_device({lines * L}, kInt64, self.device());
  void* kp = keys.raw_data_ptr();
  void* ip = idx.raw_data_ptr();

  const Tensor self_lines = lines_of(self, dim);
  Geometry load_g = make_geometry({self_lines});
  void* sp = self_lines.raw_data_ptr();
  long long xs = self.stride(dim);
  launch_threads(function(SortKernel{.stage = SortStage::Load, .dtype = self.dtype()}, self), self.device(), lines * L,
                 {&kp, &ip, &sp, &n, &L, &xs, &lines, &load_g});

  int desc = descending ? 1 : 0;
  void* step = function(SortKernel{.stage = SortStage::Step, .dtype = self.dtype()}, self);
  for (long long k = 2; k <= L; k *= 2)
    for (long long j = k / 2; j > 0; j /= 2)
      launch_threads(step, self.device(), lines * (L / 2), {&kp, &ip, &n, &L, &k, &j, &desc, &lines});

  const Tensor values_lines = lines_of(values, dim), indices_lines = lines_of(indices, dim);
  Geometry store_g = make_geometry({values_lines, indices_lines});
  void* vp = values_lines.raw_data_ptr();
  void* op = indices_lines.raw_data_ptr();
  long long c = count, vs = values.stride(dim), is = indices.stride(dim);
  launch_threads(function(SortKernel{.stage = SortStage::Store, .dtype = self.dtype()}, self), self.device(), lines * c,
                 {&vp, &op, &kp, &ip, &L, &c, &vs, &is, &lines, &store_g});
}

}  // namespace ember::kernels::cuda
