// kernels/cuda/random.cpp — see random.h.
#include "kernels/cuda/random.h"

#include <algorithm>
#include <sstream>

#include "kernels/cuda/kernel_source.h"
#include "kernels/cuda/loops.h"
#include "kernels/cuda/nvrtc.h"

namespace ember::kernels::cuda {
namespace {

/// The per-counter bodies, after philox.h. `w` holds the counter's four words, `first`
/// and `count` the elements it feeds; each line is the CPU kernel's (ops/random.cpp).
constexpr const char* kRandomBodies = R"CUDA(
namespace ember_dev {
namespace ph = ember::philox;
template <typename Out> struct UniformDigits { static constexpr int value = 24; };
template <> struct UniformDigits<Half> { static constexpr int value = 11; };
template <> struct UniformDigits<BFloat16> { static constexpr int value = 8; };

template <typename Out>
__device__ __forceinline__ void uniform_body(Out* out, const ph::Words& w, long long first, int count) {
  if constexpr (Same<Out, double>::value) {
    for (int j = 0; j < count; ++j) out[first + j] = ph::uniform_double(w.w[2 * j], w.w[2 * j + 1]);
  } else {
    for (int j = 0; j < count; ++j)
      out[first + j] = cvt<Out>(ph::uniform_bits<UniformDigits<Out>::value>(w.w[j]));
  }
}

template <typename Out>
__device__ __forceinline__ void normal_body(Out* out, const ph::Words& w, long long first, int count) {
  if constexpr (Same<Out, double>::value) {
    double z[2];
    ph::box_muller(ph::uniform_double(w.w[0], w.w[1]), ph::uniform_double(w.w[2], w.w[3]), z[0], z[1]);
    for (int j = 0; j < count; ++j) out[first + j] = z[j];
  } else {
    double z[4];
    ph::box_muller(ph::uniform_float(w.w[0]), ph::uniform_float(w.w[1]), z[0], z[1]);
    ph::box_muller(ph::uniform_float(w.w[2]), ph::uniform_float(w.w[3]), z[2], z[3]);
    for (int j = 0; j < count; ++j) out[first + j] = cvt<Out>(static_cast<float>(z[j]));
  }
}

// p0 is the probability when there is no tensor of them.
template <bool HasP, typename Out, typename In>
__device__ __forceinline__ void bernoulli_body(Out* out, const In* p, double p0, const ph::Words& w, long long first,
                                               int count) {
  for (int j = 0; j < count; ++j) {
    double pj = p0;
    if constexpr (HasP) pj = static_cast<double>(cvt<typename OpMath<In>::type>(p[first + j]));
    out[first + j] = cvt<Out>(ph::uniform32(w.w[j]) < pj ? 1 : 0);
  }
}

// p0 = 1 - p (the keep probability), p1 = the scale.
template <typename T>
__device__ __forceinline__ void dropout_body(T* out, bool* mask, const T* x, double p0, double p1, const ph::Words& w,
                                             long long first, int count) {
  typedef typename OpMath<T>::type M;
  const M scale = static_cast<M>(p1);
  for (int j = 0; j < count; ++j) {
    const bool keep = ph::uniform32(w.w[j]) < p0;
    mask[first + j] = keep;
    const T masked = cvt<T>(cvt<M>(x[first + j]) * (keep ? M(1) : M(0)));
    out[first + j] = cvt<T>(cvt<M>(masked) * scale);
  }
}
}  // namespace ember_dev
)CUDA";

const char* kind_name(RandomKind k) {
  switch (k) {
    case RandomKind::Uniform:
      return "rand";
    case RandomKind::Normal:
      return "randn";
    case RandomKind::Bernoulli:
      return "bernoulli";
    case RandomKind::Dropout:
      return "dropout";
  }
  EMBER_INTERNAL_ASSERT(false) << "unknown random kernel kind";
}

/// philox.h as NVRTC takes it: without `#pragma once`, which a main file may not have.
std::string philox_text() {
  std::string s = kEmbeddedPhiloxHeader;
  const std::string once = "#pragma once";
  const size_t at = s.find(once);
  if (at != std::string::npos) s.erase(at, once.size());
  return s;
}

}  // namespace

int64_t elements_per_counter(RandomKind kind, ScalarType out) {
  const bool two = (kind == RandomKind::Uniform || kind == RandomKind::Normal) && out == kDouble;
  return two ? 2 : 4;
}

std::string kernel_symbol(const RandomKernel& k) {
  std::string s = std::string("ember_") + kind_name(k.kind) + "_";
  if (k.kind == RandomKind::Bernoulli) s += std::string(k.has_in ? dtype_tag(k.in) : "scalar") + "_to_";
  return s + dtype_tag(k.out);
}

std::string render_random(const RandomKernel& k) {
  const char* out = cuda_type_name(k.out);
  const char* in = k.has_in ? cuda_type_name(k.in) : "float";
  const int64_t per = elements_per_counter(k.kind, k.out);
  std::ostringstream os;
  os << "// " << kind_name(k.kind) << " from Philox counters\n" << render_prelude() << philox_text() << kRandomBodies;
  os << "\nextern \"C\" __global__ void " << kernel_symbol(k) << "(" << out << "* out, bool* mask, const " << in
     << "* in, long long n, unsigned long long seed, unsigned long long offset, double p0, double p1) {\n";
  os << "  const long long counters = (n + " << per - 1 << ") / " << per << ";\n";
  os << "  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;\n";
  os << "  for (long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; b < counters; b += step) "
        "{\n";
  os << "    const ember::philox::Words w = ember::philox::block(seed, offset + static_cast<unsigned long long>(b));\n";
  os << "    const long long first = b * " << per << ";\n";
  os << "    const int count = n - first < " << per << " ? static_cast<int>(n - first) : " << per << ";\n";
  switch (k.kind) {
    case RandomKind::Uniform:
      os << "    ember_dev::uniform_body(out, w, first, count);\n";
      break;
    case RandomKind::Normal:
      os << "    ember_dev::normal_body(out, w, first, count);\n";
      break;
    case RandomKind::Bernoulli:
      os << "    ember_dev::bernoulli_body<" << (k.has_in ? "true" : "false") << ">(out, in, p0, w, first, count);\n";
      break;
    case RandomKind::Dropout:
      os << "    ember_dev::dropout_body(out, mask, in, p0, p1, w, first, count);\n";
      break;
  }
  os << "  }\n}\n";
  return os.str();
}

namespace {

void launch(const RandomKernel& k, const Tensor& out, void* mask, const void* in, uint64_t seed, uint64_t offset,
            double p0, double p1) {
  EMBER_INTERNAL_ASSERT(out.is_cuda() && out.is_contiguous())
      << "CUDA random kernel with an output on " << out.device();
  long long n = out.numel();
  if (n == 0) return;
  const int64_t counters = (n + elements_per_counter(k.kind, k.out) - 1) / elements_per_counter(k.kind, k.out);
  void* fn = get_kernel(kernel_symbol(k), out.device().index, [&] { return render_random(k); });
  void* out_ptr = out.raw_data_ptr();
  unsigned long long s = seed, o = offset;
  launch_threads(fn, out.device(), counters, {&out_ptr, &mask, &in, &n, &s, &o, &p0, &p1});
}

}  // namespace

void random_fill(RandomKind kind, const Tensor& out, uint64_t seed, uint64_t offset) {
  EMBER_INTERNAL_ASSERT(kind == RandomKind::Uniform || kind == RandomKind::Normal)
      << "random_fill of " << kind_name(kind);
  launch(RandomKernel{.kind = kind, .out = out.dtype()}, out, nullptr, nullptr, seed, offset, 0, 0);
}

void bernoulli(const Tensor& out, const Tensor& p, double p_scalar, uint64_t seed, uint64_t offset) {
  const bool has_p = p.defined();
  if (has_p) {
    EMBER_INTERNAL_ASSERT(p.device() == out.device() && p.is_contiguous() && p.numel() == out.numel())
        << "bernoulli's probabilities must be contiguous, on the output's device and of its size";
  }
  const RandomKernel k{
      .kind = RandomKind::Bernoulli, .out = out.dtype(), .has_in = has_p, .in = has_p ? p.dtype() : kFloat};
  launch(k, out, nullptr, has_p ? p.raw_data_ptr() : nullptr, seed, offset, p_scalar, 0);
}

void dropout(const Tensor& out, const Tensor& mask, const Tensor& x, double keep, double scale, uint64_t seed,
             uint64_t offset) {
  EMBER_INTERNAL_ASSERT(x.is_contiguous() && mask.is_contiguous() && mask.dtype() == kBool &&
                        x.dtype() == out.dtype() && x.device() == out.device() && mask.device() == out.device())
      << "dropout's input, mask and output must be contiguous on one device";
  const RandomKernel k{.kind = RandomKind::Dropout, .out = out.dtype(), .has_in = true, .in = x.dtype()};
  launch(k, out, mask.raw_data_ptr(), x.raw_data_ptr(), seed, offset, keep, scale);
}

}  // namespace ember::kernels::cuda
