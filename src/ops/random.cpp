// ops/random.cpp — random ops (rand, randn, *_like, randperm, bernoulli, native_dropout, dropout) over
// the counter-based Philox generator of kernels/cpu/philox.h. Each kernel reserves its
// counters from the default generator and fills element ranges in parallel; the numbers
// depend only on (seed, offset, element index), never on the thread count (Note [random]).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/generator.h"
#include "core/shape.h"
#include "core/sym_geometry.h"
#include "ember/ops/random.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/philox.h"
#include "kernels/cuda/host_checks.h"
#include "kernels/cuda/loops.h"
#include "kernels/cuda/random.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

constexpr const char* kFactoryOptions =
    "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";

/// Elements drawn from one counter: 4 (one 32-bit word each), or 2 for 53-bit doubles.
int64_t per_counter(ScalarType t) { return t == kDouble ? 2 : 4; }

uint64_t counters_for(int64_t numel, int64_t per) { return static_cast<uint64_t>((numel + per - 1) / per); }

/// Calls f(words, first_element, count) for every counter an op of `numel` elements reads,
/// in parallel over counters.
template <int64_t Per, typename F>
void for_each_counter(int64_t numel, const core::PhiloxState& s, F&& f) {
  const int64_t nblocks = (numel + Per - 1) / Per;
#pragma omp parallel for schedule(static) if (numel > kernels::cpu::kGrainSize)
  for (int64_t b = 0; b < nblocks; ++b) {
    const philox::Words w = philox::block(s.seed, s.offset + static_cast<uint64_t>(b));
    f(w, b * Per, std::min<int64_t>(Per, numel - b * Per));
  }
}

template <typename scalar_t>
constexpr int uniform_digits() {
  if constexpr (std::is_same_v<scalar_t, Half>) return 11;
  else if constexpr (std::is_same_v<scalar_t, BFloat16>) return 8;
  else return 24;
}

void fill_uniform(Tensor& out) {
  const int64_t n = out.numel();
  const core::PhiloxState s = core::default_generator().reserve(counters_for(n, per_counter(out.dtype())));
  EMBER_DISPATCH_FLOATING_TYPES(out.dtype(), "uniform", [&] {
    scalar_t* p = out.data_ptr<scalar_t>();
    if constexpr (std::is_same_v<scalar_t, double>) {
      for_each_counter<2>(n, s, [&](const philox::Words& w, int64_t first, int64_t count) {
        for (int64_t j = 0; j < count; ++j) p[first + j] = philox::uniform_double(w.w[2 * j], w.w[2 * j + 1]);
      });
    } else {
      for_each_counter<4>(n, s, [&](const philox::Words& w, int64_t first, int64_t count) {
        for (int64_t j = 0; j < count; ++j)
          p[first + j] = static_cast<scalar_t>(philox::uniform_bits<uniform_digits<scalar_t>()>(w.w[j]));
      });
    }
  });
}

void fill_normal(Tensor& out) {
  const int64_t n = out.numel();
  const core::PhiloxState s = core::default_generator().reserve(counters_for(n, per_counter(out.dtype())));
  EMBER_DISPATCH_FLOATING_TYPES(out.dtype(), "normal", [&] {
    scalar_t* p = out.data_ptr<scalar_t>();
    if constexpr (std::is_same_v<scalar_t, double>) {
      for_each_counter<2>(n, s, [&](const philox::Words& w, int64_t first, int64_t count) {
        double z[2];
        philox::box_muller(philox::uniform_double(w.w[0], w.w[1]), philox::uniform_double(w.w[2], w.w[3]), z[0], z[1]);
        for (int64_t j = 0; j < count; ++j) p[first + j] = z[j];
      });
    } else {
      for_each_counter<4>(n, s, [&](const philox::Words& w, int64_t first, int64_t count) {
        double z[4];
        philox::box_muller(philox::uniform_float(w.w[0]), philox::uniform_float(w.w[1]), z[0], z[1]);
        philox::box_muller(philox::uniform_float(w.w[2]), philox::uniform_float(w.w[3]), z[2], z[3]);
        for (int64_t j = 0; j < count; ++j) p[first + j] = static_cast<scalar_t>(static_cast<float>(z[j]));
      });
    }
  });
}

/// out[i] = (u_i < p_i) with u_i a 32-bit uniform; p_at(i) gives the probability.
template <typename scalar_t, typename P>
void fill_bernoulli(scalar_t* out, int64_t n, P p_at) {
  const core::PhiloxState s = core::default_generator().reserve(counters_for(n, 4));
  for_each_counter<4>(n, s, [&](const philox::Words& w, int64_t first, int64_t count) {
    for (int64_t j = 0; j < count; ++j)
      out[first + j] = static_cast<scalar_t>(philox::uniform32(w.w[j]) < p_at(first + j) ? 1 : 0);
  });
}

/// y = input.mul(mask).mul_(scale), each product rounded to the input's dtype as ATen does.
template <typename scalar_t>
void apply_dropout(const scalar_t* x, const bool* mask, scalar_t* y, int64_t n, double scale) {
  using math_t = opmath_t<scalar_t>;
  const math_t s = static_cast<math_t>(scale);
#pragma omp parallel for schedule(static) if (n > kernels::cpu::kGrainSize)
  for (int64_t i = 0; i < n; ++i) {
    const scalar_t masked = static_cast<scalar_t>(static_cast<math_t>(x[i]) * static_cast<math_t>(mask[i]));
    y[i] = static_cast<scalar_t>(static_cast<math_t>(masked) * s);
  }
}

// --- CUDA: the same counters, reserved the same way (Note [random]) -----------------

namespace kc = kernels::cuda;

void fill_cuda(kc::RandomKind kind, Tensor& out) {
  const int64_t n = out.numel();
  const core::PhiloxState s = core::default_generator().reserve(counters_for(n, per_counter(out.dtype())));
  kc::random_fill(kind, out, s.seed, s.offset);
}

void bernoulli_cuda(Tensor& out, const Tensor& p, double p_scalar) {
  const core::PhiloxState s = core::default_generator().reserve(counters_for(out.numel(), 4));
  kc::bernoulli(out, p, p_scalar, s.seed, s.offset);
}

void check_uniform_dtype(ScalarType t) {
  EMBER_CHECK(is_floating_point(t)) << "\"check_uniform_bounds\" not implemented for '" << scalar_type_name(t) << "'";
}
void check_normal_dtype(ScalarType t) {
  EMBER_CHECK(is_floating_point(t)) << "\"normal_kernel_cpu\" not implemented for '" << scalar_type_name(t) << "'";
}

TensorMeta factory_meta(const Stack& a, bool normal) {
  const std::vector<int64_t>& size = a[0].to_int_list();
  for (int64_t d : size)
    EMBER_CHECK(d >= 0) << "Trying to create tensor with negative dimension " << d << ": " << IntArrayRef(size);
  const ScalarType dt = a[1].to_optional_scalar_type().value_or(kDefaultFloat);
  normal ? check_normal_dtype(dt) : check_uniform_dtype(dt);
  return contiguous_meta(size, dt, a[3].is_none() ? kCPU : a[3].to_device());
}

/// randperm's checks, as ATen's: n >= 0, a dtype that is not bool, and n - 1 representable
/// in it (every integer up to 2^digits + 1 for float16/32/64; ATen checks no bound for
/// bfloat16, whose values past 257 round).
TensorMeta randperm_meta(const Stack& a) {
  const int64_t n = a[0].to_int();
  const ScalarType dt = a[1].to_optional_scalar_type().value_or(kLong);
  EMBER_CHECK(n >= 0) << "Trying to create tensor with negative dimension " << n << ": [" << n << "]";
  if (dt == kBool) not_implemented("randperm", dt);
  EMBER_DISPATCH_ALL_TYPES(dt, "randperm", [&] {
    if constexpr (std::is_same_v<scalar_t, BFloat16>) {
      return;
    } else if constexpr (std::is_floating_point_v<scalar_t> || std::is_same_v<scalar_t, Half>) {
      const int digits = std::is_same_v<scalar_t, Half> ? 11 : std::numeric_limits<scalar_t>::digits;
      const int64_t most = digits >= 62 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << digits) + 1;
      EMBER_CHECK(n <= most) << "n cannot be greater than " << most << " for " << scalar_type_name(dt) << " type.";
    } else if constexpr (!std::is_same_v<scalar_t, bool>) {
      EMBER_CHECK(n - 1 <= static_cast<int64_t>(std::numeric_limits<scalar_t>::max()))
          << "value cannot be converted to type " << scalar_type_name(dt) << " without overflow";
    }
  });
  return contiguous_meta({n}, dt, a[3].is_none() ? kCPU : a[3].to_device());
}

/// A uniformly random permutation of 0 … n-1 by Fisher–Yates: swap i with j drawn from
/// [0, i] for i = n-1 … 1, j from the 64 bits of one Philox counter per step (two words), so
/// the modulo bias is below 2^-32 for any n an int64 tensor can hold.
void fill_randperm(Tensor& out) {
  const int64_t n = out.numel();
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  const core::PhiloxState s = core::default_generator().reserve(counters_for(n, 2));
  for (int64_t i = n - 1; i > 0; --i) {
    const philox::Words w = philox::block(s.seed, s.offset + static_cast<uint64_t>(i / 2));
    const uint64_t bits = (static_cast<uint64_t>(w.w[2 * (i % 2) + 1]) << 32) | w.w[2 * (i % 2)];
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(bits % static_cast<uint64_t>(i + 1))]);
  }
  EMBER_DISPATCH_ALL_TYPES(out.dtype(), "randperm", [&] {
    scalar_t* p = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<scalar_t>(perm[static_cast<size_t>(i)]);
  });
}

TensorMeta like_meta(const Stack& a, bool normal) {
  const Tensor& self = a[0].to_tensor();
  const ScalarType dt = a[1].to_optional_scalar_type().value_or(self.dtype());
  normal ? check_normal_dtype(dt) : check_uniform_dtype(dt);
  return contiguous_over(self, dt, a[3].is_none() ? self.device() : a[3].to_device());
}

void check_p(double p) { EMBER_CHECK(p >= 0 && p <= 1) << "bernoulli_ expects p to be in [0, 1], but got p=" << p; }

bool dropout_trains(const Stack& a) { return a[2].to_optional_bool().value_or(true); }

}  // namespace

void register_random_ops(Registry& r) {
  const std::string opts = kFactoryOptions;
  const std::string like_opts = opts + ", MemoryFormat? memory_format=None";

  r.def("rand(SymInt[] size, *, " + opts + ") -> Tensor")
      .set_meta([](const Stack& a) { return metas(factory_meta(a, false)); })
      .set_cpu([](const Stack&, std::vector<Tensor>& out) { fill_uniform(out[0]); })
      .set_cuda([](const Stack&, std::vector<Tensor>& out) { fill_cuda(kc::RandomKind::Uniform, out[0]); })
      .set_random();
  r.def("randn(SymInt[] size, *, " + opts + ") -> Tensor")
      .set_meta([](const Stack& a) { return metas(factory_meta(a, true)); })
      .set_cpu([](const Stack&, std::vector<Tensor>& out) { fill_normal(out[0]); })
      .set_cuda([](const Stack&, std::vector<Tensor>& out) { fill_cuda(kc::RandomKind::Normal, out[0]); })
      .set_random();
  r.def("randperm(SymInt n, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None) -> Tensor")
      .set_meta([](const Stack& a) { return metas(randperm_meta(a)); })
      .set_cpu([](const Stack&, std::vector<Tensor>& out) { fill_randperm(out[0]); })
      .set_cuda([](const Stack&, std::vector<Tensor>& out) {
        // Drawn on the host by the CPU's Fisher-Yates from the same counters, then copied:
        // manual_seed(s) gives one permutation on both devices (Note [random]).
        Tensor host = empty_from_meta(contiguous_meta(out[0].sizes(), out[0].dtype(), kCPU));
        fill_randperm(host);
        kc::copy_into(out[0], host);
      })
      .set_random();
  r.def("rand_like(Tensor self, *, " + like_opts + ") -> Tensor")
      .set_meta([](const Stack& a) { return metas(like_meta(a, false)); })
      .set_cpu([](const Stack&, std::vector<Tensor>& out) { fill_uniform(out[0]); })
      .set_cuda([](const Stack&, std::vector<Tensor>& out) { fill_cuda(kc::RandomKind::Uniform, out[0]); })
      .set_random();
  r.def("randn_like(Tensor self, *, " + like_opts + ") -> Tensor")
      .set_meta([](const Stack& a) { return metas(like_meta(a, true)); })
      .set_cpu([](const Stack&, std::vector<Tensor>& out) { fill_normal(out[0]); })
      .set_cuda([](const Stack&, std::vector<Tensor>& out) { fill_cuda(kc::RandomKind::Normal, out[0]); })
      .set_random();

  r.def("bernoulli(Tensor self, *, Generator? generator=None) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        EMBER_CHECK(is_floating_point(self.dtype()))
            << "\"bernoulli_tensor_cpu_p_\" not implemented for '" << scalar_type_name(self.dtype()) << "'";
        return metas(contiguous_over(self, self.dtype(), self.device()));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor p = a[0].to_tensor().contiguous();
        EMBER_DISPATCH_FLOATING_TYPES(p.dtype(), "bernoulli", [&] {
          const scalar_t* pp = p.data_ptr<scalar_t>();
          const int64_t n = p.numel();
          // Every probability is checked before any counter is reserved.
          for (int64_t i = 0; i < n; ++i) {
            const double v = static_cast<double>(static_cast<opmath_t<scalar_t>>(pp[i]));
            EMBER_CHECK(v >= 0 && v <= 1) << "Expected p_in >= 0 && p_in <= 1 to be true, but got false.";
          }
          fill_bernoulli(out[0].data_ptr<scalar_t>(), n,
                         [&](int64_t i) { return static_cast<double>(static_cast<opmath_t<scalar_t>>(pp[i])); });
        });
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor p = a[0].to_tensor().contiguous();
        // Every probability is checked before any counter is reserved, as on the CPU; the
        // range's NaN fails the check too.
        if (p.numel() > 0) {
          const auto [lo, hi] = kc::value_range(p);
          EMBER_CHECK(lo >= 0 && hi <= 1) << "Expected p_in >= 0 && p_in <= 1 to be true, but got false.";
        }
        bernoulli_cuda(out[0], p, 0);
      })
      .set_random();
  r.def("bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        check_p(a[1].to_double());
        return metas(contiguous_over(self, self.dtype(), self.device()));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const double p = a[1].to_double();
        EMBER_DISPATCH_ALL_TYPES(out[0].dtype(), "bernoulli",
                                 [&] { fill_bernoulli(out[0].data_ptr<scalar_t>(), out[0].numel(), [p](int64_t) { return p; }); });
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) { bernoulli_cuda(out[0], Tensor(), a[1].to_double()); })
      .set_random();

  // As ATen: an empty input gives an empty mask of the input's dtype; otherwise the mask is
  // bool. Training keeps element i when u_i < 1 - p and scales it by 1 / (1 - p) (0 when p = 1).
  r.def("native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)")
      .set_meta([](const Stack& a) {
        const Tensor& input = a[0].to_tensor();
        // Over size symbols: the emptiness test compares SymInts (the ranges decide it) and
        // the outputs are contiguous over the input's sizes, so a dynamic batch stays one.
        const bool empty = core::sym_numel(input) == core::SymInt(0);
        if (!empty && dropout_trains(a)) {
          EMBER_CHECK(is_floating_point(input.dtype()))
              << "result type Float can't be cast to the desired output type " << scalar_type_name(input.dtype());
          check_p(1 - a[1].to_double());
        }
        return core::over_geometry({&input}, [&]<typename Int>() {
          const auto s = core::Geometry<Int>::sizes(input);
          const std::vector<Int> sizes(s.begin(), s.end());
          return std::vector<TensorMeta>{
              core::contiguous_meta_over(sizes, input.dtype(), input.device()),
              core::contiguous_meta_over(sizes, empty ? input.dtype() : kBool, input.device())};
        });
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor input = a[0].to_tensor().contiguous();
        const int64_t n = input.numel();
        if (n == 0) return;
        if (!dropout_trains(a)) {
          std::memcpy(out[0].raw_data_ptr(), input.raw_data_ptr(), static_cast<size_t>(n) * input.element_size());
          std::memset(out[1].raw_data_ptr(), 1, static_cast<size_t>(n));
          return;
        }
        const double p1m = 1 - a[1].to_double();
        const double scale = p1m == 0 ? 0.0 : 1.0 / p1m;
        bool* mask = out[1].data_ptr<bool>();
        fill_bernoulli(mask, n, [p1m](int64_t) { return p1m; });
        EMBER_DISPATCH_FLOATING_TYPES(input.dtype(), "native_dropout", [&] {
          apply_dropout(input.data_ptr<scalar_t>(), mask, out[0].data_ptr<scalar_t>(), n, scale);
        });
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor input = a[0].to_tensor().contiguous();
        const int64_t n = input.numel();
        if (n == 0) return;
        if (!dropout_trains(a)) {
          kc::copy_into(out[0], input);
          kc::copy_into(out[1], scalar_tensor(true, kBool, kCPU));
          return;
        }
        const double p1m = 1 - a[1].to_double();
        const core::PhiloxState s = core::default_generator().reserve(counters_for(n, 4));
        kc::dropout(out[0], out[1], input, p1m, p1m == 0 ? 0.0 : 1.0 / p1m, s.seed, s.offset);
      })
      .set_random();

  r.def("dropout(Tensor input, float p, bool train) -> Tensor")
      .set_decomposition([](const Stack& a) -> Stack {
        const double p = a[1].to_double();
        EMBER_CHECK(p >= 0 && p <= 1) << "dropout probability has to be between 0 and 1, but got " << p;
        const Tensor& input = a[0].to_tensor();
        if (p == 0 || !a[2].to_bool() || core::sym_numel(input) == core::SymInt(0)) return {input};
        Stack out = call_op("aten::native_dropout", {input, p, true});
        return {out[0]};
      })
      .set_random();
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_tensor;
using ops::device_arg;
using ops::dtype_arg;

void manual_seed(uint64_t seed) { core::default_generator().manual_seed(seed); }
std::pair<uint64_t, uint64_t> generator_state() {
  const core::PhiloxState s = core::default_generator().state();
  return {s.seed, s.offset};
}
void set_generator_state(uint64_t seed, uint64_t offset) { core::default_generator().set_state({seed, offset}); }

Tensor rand(IntArrayRef size, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::rand"), {size, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor randn(IntArrayRef size, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::randn"), {size, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor randperm(int64_t n, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::randperm"), {n, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor rand_like(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::rand_like"), {self}, loc); }
Tensor randn_like(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::randn_like"), {self}, loc); }
Tensor bernoulli(const Tensor& self, Loc loc) { return call_tensor(EMBER_OP("aten::bernoulli"), {self}, loc); }
Tensor bernoulli(const Tensor& self, double p, Loc loc) {
  return call_tensor(EMBER_OP("aten::bernoulli.p"), {self, p}, loc);
}
std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p, std::optional<bool> train, Loc loc) {
  return ops::tuple2(ops::call_at(EMBER_OP("aten::native_dropout"), {input, p, IValue(train)}, loc));
}
Tensor dropout(const Tensor& input, double p, bool train, Loc loc) {
  return call_tensor(EMBER_OP("aten::dropout"), {input, p, train}, loc);
}

}  // namespace ember
