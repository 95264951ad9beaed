// kernels/cpu/indexing.cpp — see indexing.h. Copies move raw elements (any dtype) by
// element size; only accumulation dispatches on the dtype.
#include "kernels/cpu/indexing.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/shape.h"
#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

inline void copy_elem(char* dst, const char* src, int64_t size) {
  switch (size) {
    case 1: std::memcpy(dst, src, 1); break;
    case 2: std::memcpy(dst, src, 2); break;
    case 4: std::memcpy(dst, src, 4); break;
    default: std::memcpy(dst, src, 8); break;
  }
}

/// Calls f(pos) for every multi-index of `shape` whose pos[dim] is 0 (one call per line
/// along `dim`), in parallel when `work` elements justify it. Lines never share outputs.
template <typename F>
void for_each_line(IntArrayRef shape, int64_t dim, int64_t work, F&& f) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  int64_t lines = 1;
  for (int64_t d = 0; d < nd; ++d)
    if (d != dim) lines *= shape[d];
  if (lines == 0 || shape[dim] == 0) return;
#pragma omp parallel if (work > kGrainSize && !omp_in_parallel())
  {
    std::vector<int64_t> pos(static_cast<size_t>(nd), 0);
#pragma omp for schedule(static)
    for (int64_t l = 0; l < lines; ++l) {
      int64_t rem = l;
      for (int64_t d = nd - 1; d >= 0; --d) {
        if (d == dim) continue;
        pos[d] = rem % shape[d];
        rem /= shape[d];
      }
      f(pos.data());
    }
  }
}

inline int64_t offset_of(const int64_t* pos, IntArrayRef strides, int64_t skip) {
  int64_t off = 0;
  for (int64_t d = 0; d < static_cast<int64_t>(strides.size()); ++d)
    if (d != skip) off += pos[d] * strides[d];
  return off;
}

template <typename F>
void dispatch_add(ScalarType t, F&& f) {
  EMBER_DISPATCH_ALL_TYPES(t, "add", [&] {
    f([](char* dst, const char* src) {
      scalar_t a, b;
      std::memcpy(&a, dst, sizeof a);
      std::memcpy(&b, src, sizeof b);
      const scalar_t r = static_cast<scalar_t>(static_cast<opmath_t<scalar_t>>(a) + static_cast<opmath_t<scalar_t>>(b));
      std::memcpy(dst, &r, sizeof r);
    });
  });
}

}  // namespace

void copy_elements(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  const int64_t es = static_cast<int64_t>(dst.element_size());
  PointwiseLoop loop(dst, {src});
  loop.for_each_row([es](char** p, const int64_t* s, int64_t n) {
    if (s[0] == es && s[1] == es) {
      std::memcpy(p[0], p[1], static_cast<size_t>(n * es));
    } else {
      for (int64_t i = 0; i < n; ++i) copy_elem(p[0] + i * s[0], p[1] + i * s[1], es);
    }
  });
}

std::vector<int64_t> read_indices(const Tensor& index, IntArrayRef shape) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(core::numel_of(shape)));
  const std::vector<int64_t> strides = core::broadcast_strides(index.sizes(), index.strides(), shape);
  const char* base = static_cast<const char*>(index.raw_data_ptr());
  const bool is64 = index.dtype() == kInt64;
  core::for_each_index(shape, [&](const int64_t* pos) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off += pos[d] * strides[d];
    out.push_back(is64 ? reinterpret_cast<const int64_t*>(base)[off] : reinterpret_cast<const int32_t*>(base)[off]);
  });
  return out;
}

void gather_kernel(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t es = static_cast<int64_t>(self.element_size());
  const char* src = static_cast<const char*>(self.raw_data_ptr());
  char* dst = static_cast<char*>(out.raw_data_ptr());
  const int64_t* idx = index.data_ptr<int64_t>();
  const int64_t n = index.size(dim), ss = self.stride(dim), os = out.stride(dim), is = index.stride(dim);
  for_each_line(index.sizes(), dim, index.numel(), [&](const int64_t* pos) {
    const char* s = src + offset_of(pos, self.strides(), dim) * es;
    char* o = dst + offset_of(pos, out.strides(), dim) * es;
    const int64_t* ip = idx + offset_of(pos, index.strides(), dim);
    for (int64_t j = 0; j < n; ++j) copy_elem(o + j * os * es, s + ip[j * is] * ss * es, es);
  });
}

void scatter_kernel(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, const Tensor& value,
                    bool add) {
  const int64_t es = static_cast<int64_t>(out.element_size());
  char* dst = static_cast<char*>(out.raw_data_ptr());
  const int64_t* idx = index.data_ptr<int64_t>();
  const int64_t n = index.size(dim), os = out.stride(dim), is = index.stride(dim);
  const bool from_src = src.defined();
  const char* sp = static_cast<const char*>(from_src ? src.raw_data_ptr() : value.raw_data_ptr());
  const int64_t ss = from_src ? src.stride(dim) : 0;
  auto run = [&](auto write) {
    for_each_line(index.sizes(), dim, index.numel(), [&](const int64_t* pos) {
      char* o = dst + offset_of(pos, out.strides(), dim) * es;
      const char* s = from_src ? sp + offset_of(pos, src.strides(), dim) * es : sp;
      const int64_t* ip = idx + offset_of(pos, index.strides(), dim);
      // Along one line, later positions overwrite (or add after) earlier ones, as ATen.
      for (int64_t j = 0; j < n; ++j) write(o + ip[j * is] * os * es, s + j * ss * es);
    });
  };
  if (add) {
    dispatch_add(out.dtype(), run);
  } else {
    run([es](char* d, const char* s) { copy_elem(d, s, es); });
  }
}

void scatter_reduce_kernel(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, ScatterReduce op,
                           bool include_self) {
  const int64_t* idx = index.data_ptr<int64_t>();
  const int64_t n = index.size(dim), L = out.size(dim), os = out.stride(dim), is = index.stride(dim);
  const int64_t ss = src.stride(dim);
  EMBER_DISPATCH_ALL_TYPES(out.dtype(), "scatter_reduce", [&] {
    // bool combines as int64 (sum: or, prod: and), as ATen's casts do
    using acc_t = std::conditional_t<std::is_same_v<scalar_t, bool>, int64_t, opmath_t<scalar_t>>;
    const auto narrow = [](acc_t v) -> scalar_t {
      if constexpr (std::is_same_v<scalar_t, bool>) return v != 0;
      else return static_cast<scalar_t>(v);
    };
    const auto combine = [op, narrow](scalar_t a, scalar_t b) -> scalar_t {
      switch (op) {
        case ScatterReduce::kSum:
        case ScatterReduce::kMean: return narrow(static_cast<acc_t>(a) + static_cast<acc_t>(b));
        case ScatterReduce::kProd: return narrow(static_cast<acc_t>(a) * static_cast<acc_t>(b));
        case ScatterReduce::kAmax: return b != b ? b : (a < b ? b : a);  // NaN of src wins, as ATen
        case ScatterReduce::kAmin: return b != b ? b : (b < a ? b : a);
      }
      return a;
    };
    scalar_t* dst = out.data_ptr<scalar_t>();
    const scalar_t* sp = src.data_ptr<scalar_t>();
    for_each_line(index.sizes(), dim, index.numel(), [&](const int64_t* pos) {
      scalar_t* o = dst + offset_of(pos, out.strides(), dim);
      const scalar_t* s = sp + offset_of(pos, src.strides(), dim);
      const int64_t* ip = idx + offset_of(pos, index.strides(), dim);
      std::vector<int64_t> count(static_cast<size_t>(L), 0);
      for (int64_t j = 0; j < n; ++j) {
        const int64_t t = ip[j * is];
        scalar_t& v = o[t * os];
        v = include_self || count[t] > 0 ? combine(v, s[j * ss]) : s[j * ss];
        ++count[t];
      }
      if (op != ScatterReduce::kMean) return;
      for (int64_t t = 0; t < L; ++t) {
        if (count[t] == 0) continue;
        const acc_t c = static_cast<acc_t>(count[t] + (include_self ? 1 : 0));
        const acc_t q = static_cast<acc_t>(o[t * os]) / c;
        if constexpr (std::is_integral_v<acc_t>) {
          // floor division (the quotient truncates toward zero)
          const bool inexact = q * c != static_cast<acc_t>(o[t * os]);
          o[t * os] = static_cast<scalar_t>(q - (inexact && (static_cast<acc_t>(o[t * os]) < 0) ? 1 : 0));
        } else {
          o[t * os] = static_cast<scalar_t>(q);
        }
      }
    });
  });
}

void masked_scatter_kernel(const Tensor& out, const Tensor& mask, const Tensor& source) {
  const int64_t es = static_cast<int64_t>(out.element_size()), n = out.numel();
  const uint8_t* m = static_cast<const uint8_t*>(mask.raw_data_ptr());  // bool and uint8 are one byte
  char* o = static_cast<char*>(out.raw_data_ptr());
  const char* s = static_cast<const char*>(source.raw_data_ptr());
  for (int64_t i = 0, k = 0; i < n; ++i)
    if (m[i]) copy_elem(o + i * es, s + (k++) * es, es);
}

void index_select_kernel(const Tensor& out, const Tensor& self, int64_t dim, const std::vector<int64_t>& idx) {
  const int64_t es = static_cast<int64_t>(self.element_size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= self.size(d);
  for (int64_t d = dim + 1; d < self.dim(); ++d) inner *= self.size(d);
  const int64_t size = self.dim() == 0 ? 1 : self.size(dim);
  const int64_t n = static_cast<int64_t>(idx.size());
  const char* src = static_cast<const char*>(self.raw_data_ptr());
  char* dst = static_cast<char*>(out.raw_data_ptr());
  const int64_t rows = outer * n, row_bytes = inner * es;
#pragma omp parallel for schedule(static) if (rows * inner > kGrainSize && !omp_in_parallel())
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = r / n, j = r % n;
    std::memcpy(dst + r * row_bytes, src + (o * size + idx[j]) * row_bytes, static_cast<size_t>(row_bytes));
  }
}

void index_gather_kernel(const Tensor& out, const Tensor& self, const IndexOffsets& o) {
  const int64_t es = static_cast<int64_t>(self.element_size());
  const int64_t P = static_cast<int64_t>(o.pre.size()), B = static_cast<int64_t>(o.adv.size()),
                Q = static_cast<int64_t>(o.post.size());
  const char* src = static_cast<const char*>(self.raw_data_ptr());
  char* dst = static_cast<char*>(out.raw_data_ptr());
  // Post dims that are contiguous in self copy as one block.
  bool dense = true;
  for (int64_t q = 0; q < Q && dense; ++q) dense = o.post[q] == q;
#pragma omp parallel for schedule(static) if (P * B * Q > kGrainSize && !omp_in_parallel())
  for (int64_t pb = 0; pb < P * B; ++pb) {
    const int64_t base = o.pre[pb / B] + o.adv[pb % B];
    char* d = dst + pb * Q * es;
    if (dense) {
      std::memcpy(d, src + base * es, static_cast<size_t>(Q * es));
    } else {
      for (int64_t q = 0; q < Q; ++q) copy_elem(d + q * es, src + (base + o.post[q]) * es, es);
    }
  }
}

void index_put_kernel(const Tensor& self, const Tensor& values, const IndexOffsets& o, bool accumulate) {
  const int64_t es = static_cast<int64_t>(self.element_size());
  const int64_t P = static_cast<int64_t>(o.pre.size()), B = static_cast<int64_t>(o.adv.size()),
                Q = static_cast<int64_t>(o.post.size());
  if (P * B * Q == 0) return;
  char* dst = static_cast<char*>(self.raw_data_ptr());
  const char* src = static_cast<const char*>(values.raw_data_ptr());
  // Tasks are (p, chunk of q): distinct destinations, so they run in parallel; within a
  // task b goes in order, so repeated indices keep ATen's serial result (last write wins,
  // or additions in index order).
  constexpr int64_t kChunk = 1024;
  const int64_t chunks = (Q + kChunk - 1) / kChunk;
  auto run = [&](auto write) {
#pragma omp parallel for schedule(static) if (P * B * Q > kGrainSize && !omp_in_parallel())
    for (int64_t t = 0; t < P * chunks; ++t) {
      const int64_t p = t / chunks, q0 = (t % chunks) * kChunk, q1 = std::min(Q, q0 + kChunk);
      for (int64_t b = 0; b < B; ++b) {
        const int64_t base = o.pre[p] + o.adv[b];
        const char* s = src + ((p * B + b) * Q) * es;
        for (int64_t q = q0; q < q1; ++q) write(dst + (base + o.post[q]) * es, s + q * es);
      }
    }
  };
  if (accumulate) {
    dispatch_add(self.dtype(), run);
  } else {
    run([es](char* d, const char* s) { copy_elem(d, s, es); });
  }
}

namespace {

template <typename T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<opmath_t<T>>) {
    const auto f = static_cast<opmath_t<T>>(v);
    return f != f;
  } else {
    return false;
  }
}

/// ATen's KeyValueCompAsc / KeyValueCompDesc: NaN above everything.
template <typename K>
struct Ascending {
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    return (!is_nan(a.first) && is_nan(b.first)) || (a.first < b.first);
  }
};
template <typename K>
struct Descending {
  bool operator()(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) const {
    return (is_nan(a.first) && !is_nan(b.first)) || (a.first > b.first);
  }
};

}  // namespace

void sort_kernel(const Tensor& values, const Tensor& indices, int64_t dim, bool descending, bool stable) {
  if (values.numel() == 0) return;
  if (values.dim() == 0) {
    *indices.data_ptr<int64_t>() = 0;
    return;
  }
  EMBER_DISPATCH_ALL_TYPES(values.dtype(), "sort", [&] {
    using key_t = opmath_t<scalar_t>;
    scalar_t* v = values.data_ptr<scalar_t>();
    int64_t* ix = indices.data_ptr<int64_t>();
    const int64_t n = values.size(dim), vs = values.stride(dim), is = indices.stride(dim);
    for_each_line(values.sizes(), dim, values.numel() * 8, [&](const int64_t* pos) {
      scalar_t* vl = v + offset_of(pos, values.strides(), dim);
      int64_t* il = ix + offset_of(pos, indices.strides(), dim);
      std::vector<std::pair<key_t, int64_t>> line(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) line[j] = {static_cast<key_t>(vl[j * vs]), j};
      if (descending) {
        stable ? std::stable_sort(line.begin(), line.end(), Descending<key_t>())
               : std::sort(line.begin(), line.end(), Descending<key_t>());
      } else {
        stable ? std::stable_sort(line.begin(), line.end(), Ascending<key_t>())
               : std::sort(line.begin(), line.end(), Ascending<key_t>());
      }
      for (int64_t j = 0; j < n; ++j) {
        vl[j * vs] = static_cast<scalar_t>(line[j].first);
        il[j * is] = line[j].second;
      }
    });
  });
}

void topk_kernel(const Tensor& values, const Tensor& indices, const Tensor& self, int64_t k, int64_t dim, bool largest,
                 bool sorted) {
  if (k == 0 || self.numel() == 0) return;
  if (self.dim() == 0) {
    std::memcpy(values.raw_data_ptr(), self.raw_data_ptr(), self.element_size());
    *indices.data_ptr<int64_t>() = 0;
    return;
  }
  EMBER_DISPATCH_ALL_TYPES(self.dtype(), "topk", [&] {
    using key_t = opmath_t<scalar_t>;
    using elem_t = std::pair<key_t, int64_t>;
    const scalar_t* x = self.data_ptr<scalar_t>();
    scalar_t* v = values.data_ptr<scalar_t>();
    int64_t* ix = indices.data_ptr<int64_t>();
    const int64_t n = self.size(dim), xs = self.stride(dim), vs = values.stride(dim), is = indices.stride(dim);
    // Shapes differ along `dim` only, so lines are walked over `values`' shape.
    for_each_line(values.sizes(), dim, self.numel() * 4, [&](const int64_t* pos) {
      const scalar_t* xl = x + offset_of(pos, self.strides(), dim);
      std::vector<elem_t> queue(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) queue[j] = {static_cast<key_t>(xl[j * xs]), j};
      // The same std:: algorithms and comparators as ATen, so ties resolve alike.
      auto select = [&](auto comp) {
        if (k * 64 <= n) {
          std::partial_sort(queue.begin(), queue.begin() + k, queue.end(), comp);
        } else {
          std::nth_element(queue.begin(), queue.begin() + k - 1, queue.end(), comp);
          if (sorted) std::sort(queue.begin(), queue.begin() + k - 1, comp);
        }
      };
      largest ? select(Descending<key_t>()) : select(Ascending<key_t>());
      scalar_t* vl = v + offset_of(pos, values.strides(), dim);
      int64_t* il = ix + offset_of(pos, indices.strides(), dim);
      for (int64_t j = 0; j < k; ++j) {
        vl[j * vs] = static_cast<scalar_t>(queue[j].first);
        il[j * is] = queue[j].second;
      }
    });
  });
}

std::pair<int64_t, std::vector<int64_t>> nonzero_kernel(const Tensor& self) {
  std::vector<int64_t> coords;
  int64_t count = 0;
  const int64_t nd = self.dim();
  const char* base = static_cast<const char*>(self.raw_data_ptr());
  EMBER_DISPATCH_ALL_TYPES(self.dtype(), "nonzero", [&] {
    core::for_each_index(self.sizes(), [&](const int64_t* pos) {
      int64_t off = 0;
      for (int64_t d = 0; d < nd; ++d) off += pos[d] * self.stride(d);
      scalar_t v;
      std::memcpy(&v, base + off * static_cast<int64_t>(sizeof(scalar_t)), sizeof v);
      if (static_cast<opmath_t<scalar_t>>(v) != 0) {
        coords.insert(coords.end(), pos, pos + nd);
        ++count;
      }
    });
  });
  return {count, std::move(coords)};
}

}  // namespace ember::kernels::cpu
