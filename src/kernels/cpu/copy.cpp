// kernels/cpu/copy.cpp — see copy.h.
#include "kernels/cpu/copy.h"

#include <complex>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

template <typename T> struct IsComplex : std::false_type {};
template <typename T> struct IsComplex<std::complex<T>> : std::true_type {};

template <typename dst_t, typename src_t>
inline dst_t convert(src_t v) {
  if constexpr (std::is_same_v<dst_t, src_t>) {
    return v;
  } else if constexpr (IsComplex<src_t>::value && IsComplex<dst_t>::value) {
    using part_t = typename dst_t::value_type;
    return dst_t(static_cast<part_t>(v.real()), static_cast<part_t>(v.imag()));
  } else if constexpr (IsComplex<src_t>::value) {
    // Complex into a real type keeps the real part, as PyTorch's copy_ (which warns);
    // bool is whether the value is nonzero.
    if constexpr (std::is_same_v<dst_t, bool>) return v != src_t(0);
    else return convert<dst_t, typename src_t::value_type>(v.real());
  } else if constexpr (IsComplex<dst_t>::value) {
    using part_t = typename dst_t::value_type;
    return dst_t(static_cast<part_t>(static_cast<opmath_t<src_t>>(v)), part_t(0));
  } else if constexpr (std::is_same_v<dst_t, bool>) {
    return static_cast<opmath_t<src_t>>(v) != 0;
  } else if constexpr (std::is_integral_v<dst_t> && !std::is_integral_v<opmath_t<src_t>>) {
    // Float to integer truncates, as a C cast; NaN and out-of-range values are undefined
    // behaviour in C++, so they give int64's minimum (what x86's conversion yields).
    const auto f = static_cast<opmath_t<src_t>>(v);
    if (!(f == f) || f >= 9.2233720368547758e18 || f < -9.2233720368547758e18)
      return static_cast<dst_t>(std::numeric_limits<int64_t>::min());
    return static_cast<dst_t>(static_cast<int64_t>(f));
  } else {
    return static_cast<dst_t>(static_cast<opmath_t<src_t>>(v));
  }
}

/// Same dtype: memcpy of whole rows when both are dense along the row, else per element.
template <size_t ES>
void copy_rows(const PointwiseLoop& loop) {
  loop.for_each_row([](char** p, const int64_t* s, int64_t n) {
    if (s[0] == static_cast<int64_t>(ES) && s[1] == static_cast<int64_t>(ES)) {
      std::memcpy(p[0], p[1], static_cast<size_t>(n) * ES);
      return;
    }
    for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * s[0], p[1] + i * s[1], ES);
  });
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  PointwiseLoop loop(dst, {src});
  if (dst.dtype() == src.dtype()) {
    switch (dst.element_size()) {
      case 1: return copy_rows<1>(loop);
      case 2: return copy_rows<2>(loop);
      case 4: return copy_rows<4>(loop);
      case 8: return copy_rows<8>(loop);
      case 16: return copy_rows<16>(loop);
      default: break;
    }
    EMBER_INTERNAL_ASSERT(false) << "copy_into: element size " << dst.element_size();
  }
  EMBER_DISPATCH_ALL_TYPES_AND_COMPLEX(dst.dtype(), "copy_", [&] {
    using dst_t = scalar_t;
    EMBER_DISPATCH_ALL_TYPES_AND_COMPLEX(src.dtype(), "copy_", [&] {
      using src_t = scalar_t;
      loop.for_each_row([&](char** p, const int64_t* s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          src_t v;
          std::memcpy(&v, p[1] + i * s[1], sizeof v);
          const dst_t d = convert<dst_t, src_t>(v);
          std::memcpy(p[0] + i * s[0], &d, sizeof d);
        }
      });
    });
  });
}

Tensor raw_view(const Tensor& base, std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->storage_offset = offset;
  impl->dtype = base.dtype();
  impl->device = base.device();
  impl->refresh();
  return Tensor(std::move(impl));
}

}  // namespace ember::kernels::cpu
