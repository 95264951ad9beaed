// ops/factory.cpp — tensor constructors: empty, empty_strided, full (the primitive that
// zeros/ones decompose into), arange, linspace, eye, scalar_tensor and the *_like forms.
#include <algorithm>
#include <cmath>

#include "core/shape.h"
#include "kernels/cuda/loops.h"
#include "core/sym_geometry.h"
#include "ember/ops/creation.h"
#include "ember/ops/view.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

constexpr const char* kFactoryOptions =
    "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";

/// Index of the `dtype` argument; device follows two places later (layout between).
Device device_arg(const Stack& a, int dtype_index) {
  const IValue& d = a[static_cast<size_t>(dtype_index) + 2];
  return d.is_none() ? kCPU : d.to_device();
}

void check_sizes(IntArrayRef sizes) {
  for (int64_t s : sizes) EMBER_CHECK(s >= 0) << "Trying to create tensor with negative dimension " << s << ": " << sizes;
}

/// Writes the values value_at(i) into a contiguous 1-D or n-D tensor.
template <typename F>
void fill_linear(Tensor& out, F value_at) {
  EMBER_DISPATCH_ALL_TYPES(out.dtype(), "factory", [&] {
    scalar_t* p = out.data_ptr<scalar_t>();
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<scalar_t>(static_cast<opmath_t<scalar_t>>(value_at(i, scalar_t{})));
  });
}

/// Writes the real Scalar `v` into every element of a contiguous `out`; a complex tensor
/// gets `v` as its real parts and zero imaginary parts (Note [complex dtypes]).
void fill_value(Tensor& out, const Scalar& v) {
  if (is_complex(out.dtype())) {
    EMBER_DISPATCH_COMPLEX_TYPES(out.dtype(), "full", [&] {
      scalar_t* p = out.data_ptr<scalar_t>();
      const scalar_t c(static_cast<typename scalar_t::value_type>(v.to_double()));
      std::fill(p, p + out.numel(), c);
    });
    return;
  }
  fill_linear(out, [&](int64_t, auto t) { return v.to<decltype(t)>(); });
}

/// A contiguous factory output of `size`, a SymInt[] argument: over the symbols when the
/// list holds them (Note [dynamic shapes]).
std::vector<TensorMeta> factory_meta(const IValue& size, ScalarType dtype, Device device) {
  if (!size.is_sym_int_list()) {
    check_sizes(size.to_int_list());
    return metas(contiguous_meta(size.to_int_list(), dtype, device));
  }
  const core::SymInts sizes = core::sym_int_list(size);
  for (const core::SymInt& s : sizes)
    EMBER_CHECK(s.is_symbolic() || s.hint() >= 0) << "Trying to create tensor with negative dimension " << s.hint()
                                                  << ": " << size;
  return metas(core::contiguous_sym_meta(sizes, dtype, device));
}

ScalarType dtype_of_fill(const Scalar& v) { return v.is_floating_point() ? kDefaultFloat : v.type(); }

/// arange.start_step with a symbolic start, end or step (`arange(sym_size(x, 1))`,
/// `arange(s0, 2*s0)`, `arange(0, s0, 2)`) and no floating one: its length over the
/// symbols. (A floating start, end or step reads the others as numbers, which specializes
/// them.)
bool arange_has_sym_length(const Stack& a) {
  bool symbolic = false;
  for (size_t i = 0; i < 3; ++i) {
    if (a[i].is_sym_int()) symbolic = true;
    else if (a[i].to_scalar().is_floating_point()) return false;
  }
  return symbolic;
}
/// An integral start, end or step of arange as a core SymInt (symbolic or plain).
core::SymInt arange_bound(const IValue& v) {
  return v.is_sym_int() ? core::sym_int_arg(v) : core::SymInt(v.to_scalar().to_long());
}
/// The length PyTorch's arange reference computes for integer arguments (torch._refs.arange):
/// after `step != 0` and the step's sign agreeing with `end - start` (each a guard when the
/// ranges do not decide it), `(end - start + step - sgn(step)) // step`.
std::vector<TensorMeta> arange_sym_meta(const Stack& a) {
  const ScalarType dt = a[3].to_optional_scalar_type().value_or(kInt64);
  const core::SymInt start = arange_bound(a[0]), end = arange_bound(a[1]), step = arange_bound(a[2]);
  EMBER_CHECK(step != 0) << "step must be nonzero";
  const bool positive = step > 0;
  EMBER_CHECK(positive ? end >= start : end <= start)
      << "upper bound and larger bound inconsistent with step sign (start " << core::rules::size_text(start)
      << ", end " << core::rules::size_text(end) << ", step " << core::rules::size_text(step) << ")";
  const core::SymInt length = core::floordiv(end - start + step - (positive ? 1 : -1), step);
  return metas(core::contiguous_sym_meta({length}, dt, device_arg(a, 3)));
}

}  // namespace

void register_factory_ops(Registry& r) {
  const std::string opts = kFactoryOptions;

  r.def("empty.memory_format(SymInt[] size, *, " + opts + ", MemoryFormat? memory_format=None) -> Tensor")
      .set_meta([](const Stack& a) {
        return factory_meta(a[0], a[1].to_optional_scalar_type().value_or(kDefaultFloat), device_arg(a, 1));
      })
      .set_cpu([](const Stack&, std::vector<Tensor>&) {})
      .set_complex();

  r.def("empty_strided(SymInt[] size, SymInt[] stride, *, " + opts + ") -> Tensor")
      .set_meta([](const Stack& a) {
        check_sizes(a[0].to_int_list());
        EMBER_CHECK(a[0].to_int_list().size() == a[1].to_int_list().size())
            << "mismatch in length of strides and shape: " << IntArrayRef(a[0].to_int_list()) << " and "
            << IntArrayRef(a[1].to_int_list());
        TensorMeta m = contiguous_meta(a[0].to_int_list(), a[2].to_optional_scalar_type().value_or(kDefaultFloat),
                                       device_arg(a, 2));
        m.strides = a[1].to_int_list();
        return metas(m);
      })
      .set_cpu([](const Stack&, std::vector<Tensor>&) {})
      .set_complex();

  r.def("full(SymInt[] size, Scalar fill_value, *, " + opts + ") -> Tensor")
      .set_meta([](const Stack& a) {
        const ScalarType dt = a[2].to_optional_scalar_type().value_or(dtype_of_fill(a[1].to_scalar()));
        return factory_meta(a[0], dt, device_arg(a, 2));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) { fill_value(out[0], a[1].to_scalar()); })
      .set_complex();
  for (const char* name : {"zeros", "ones"}) {
    const bool one = std::string_view(name) == "ones";
    r.def(std::string(name) + "(SymInt[] size, *, " + opts + ") -> Tensor").set_decomposition([one](const Stack& a) {
      return call_op("aten::full", {a[0], Scalar(one ? 1 : 0), a[1].is_none() ? IValue(kDefaultFloat) : a[1], a[2], a[3], a[4]});
    });
  }

  const std::string like_opts = opts + ", MemoryFormat? memory_format=None";
  r.def("full_like(Tensor self, Scalar fill_value, *, " + like_opts + ") -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        return metas(memory_format_like(self, a[6], a[2].to_optional_scalar_type(),
                                        a[4].is_none() ? std::nullopt : std::optional<Device>(a[4].to_device())));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) { fill_value(out[0], a[1].to_scalar()); })
      .set_complex();
  r.def("empty_like(Tensor self, *, " + like_opts + ") -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        return metas(memory_format_like(self, a[5], a[1].to_optional_scalar_type(),
                                        a[3].is_none() ? std::nullopt : std::optional<Device>(a[3].to_device())));
      })
      .set_cpu([](const Stack&, std::vector<Tensor>&) {})
      .set_complex();
  for (const char* name : {"zeros_like", "ones_like"}) {
    const bool one = std::string_view(name) == "ones_like";
    r.def(std::string(name) + "(Tensor self, *, " + like_opts + ") -> Tensor").set_decomposition([one](const Stack& a) {
      return call_op("aten::full_like", {a[0], Scalar(one ? 1 : 0), a[1], a[2], a[3], a[4], a[5]});
    });
  }

  r.def("scalar_tensor(Scalar s, *, " + opts + ") -> Tensor")
      .set_meta([](const Stack& a) {
        return metas(contiguous_meta({}, a[1].to_optional_scalar_type().value_or(kDefaultFloat), device_arg(a, 1)));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Scalar v = a[0].to_scalar();
        fill_linear(out[0], [&](int64_t, auto t) { return v.to<decltype(t)>(); });
      });

  // arange: start + i * step for i in [0, ceil((end - start) / step)).
  auto arange_length = [](const Scalar& start, const Scalar& end, const Scalar& step) {
    const double s = start.to_double(), e = end.to_double(), st = step.to_double();
    EMBER_CHECK(st != 0) << "step must be nonzero";
    EMBER_CHECK(std::isfinite(s) && std::isfinite(e)) << "unsupported range: " << s << " -> " << e;
    EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s)) << "upper bound and larger bound inconsistent with step sign";
    if (start.is_integral() && end.is_integral() && step.is_integral()) {
      const int64_t si = start.to_long(), ei = end.to_long(), sti = step.to_long();
      return (ei - si + sti - (sti > 0 ? 1 : -1)) / sti;
    }
    return static_cast<int64_t>(std::ceil((e - s) / st));
  };
  r.def("arange.start_step(Scalar start, Scalar end, Scalar step=1, *, " + opts + ") -> Tensor")
      .set_meta([arange_length](const Stack& a) {
        if (arange_has_sym_length(a)) return arange_sym_meta(a);
        const Scalar start = a[0].to_scalar(), end = a[1].to_scalar(), step = a[2].to_scalar();
        const bool floating = start.is_floating_point() || end.is_floating_point() || step.is_floating_point();
        const ScalarType dt = a[3].to_optional_scalar_type().value_or(floating ? kDefaultFloat : kInt64);
        return metas(contiguous_meta({arange_length(start, end, step)}, dt, device_arg(a, 3)));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Scalar start = a[0].to_scalar(), step = a[2].to_scalar();
        if (start.is_integral() && step.is_integral() && !is_floating_point(out[0].dtype())) {
          fill_linear(out[0], [&](int64_t i, auto) { return start.to_long() + static_cast<int64_t>(i) * step.to_long(); });
        } else {
          fill_linear(out[0], [&](int64_t i, auto) { return start.to_double() + static_cast<double>(i) * step.to_double(); });
        }
      });
  r.def("arange(Scalar end, *, " + opts + ") -> Tensor").set_decomposition([](const Stack& a) {
    return call_op("aten::arange.start_step", {Scalar(0), a[0], Scalar(1), a[1], a[2], a[3], a[4]});
  });
  r.def("arange.start(Scalar start, Scalar end, *, " + opts + ") -> Tensor").set_decomposition([](const Stack& a) {
    return call_op("aten::arange.start_step", {a[0], a[1], Scalar(1), a[2], a[3], a[4], a[5]});
  });

  r.def("linspace(Scalar start, Scalar end, int steps, *, " + opts + ") -> Tensor")
      .set_meta([](const Stack& a) {
        const int64_t steps = a[2].to_int();
        EMBER_CHECK(steps >= 0) << "number of steps must be non-negative";
        return metas(contiguous_meta({steps}, a[3].to_optional_scalar_type().value_or(kDefaultFloat), device_arg(a, 3)));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const int64_t steps = a[2].to_int();
        EMBER_DISPATCH_ALL_TYPES(out[0].dtype(), "linspace", [&] {
          using acc_t = std::conditional_t<std::is_integral_v<opmath_t<scalar_t>>, double, opmath_t<scalar_t>>;
          const acc_t start = static_cast<acc_t>(a[0].to_scalar().to_double());
          const acc_t end = static_cast<acc_t>(a[1].to_scalar().to_double());
          const acc_t step = steps > 1 ? (end - start) / static_cast<acc_t>(steps - 1) : acc_t(0);
          const int64_t half = steps / 2;
          scalar_t* p = out[0].data_ptr<scalar_t>();
          // From both ends towards the middle, as ATen does, so the last value is exact.
          for (int64_t i = 0; i < steps; ++i) {
            const acc_t v = i < half ? start + step * static_cast<acc_t>(i)
                                     : end - step * static_cast<acc_t>(steps - i - 1);
            p[i] = static_cast<scalar_t>(v);
          }
        });
      });

  r.def("eye.m(SymInt n, SymInt m, *, " + opts + ") -> Tensor")
      .set_meta([](const Stack& a) {
        const int64_t n = a[0].to_int(), m = a[1].to_int();
        EMBER_CHECK(n >= 0) << "n must be greater or equal to 0, got " << n;
        EMBER_CHECK(m >= 0) << "m must be greater or equal to 0, got " << m;
        return metas(contiguous_meta({n, m}, a[2].to_optional_scalar_type().value_or(kDefaultFloat), device_arg(a, 2)));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const int64_t m = a[1].to_int();
        fill_linear(out[0], [&](int64_t i, auto) { return (i / m) == (i % m) ? 1 : 0; });
      });
  r.def("eye(SymInt n, *, " + opts + ") -> Tensor").set_decomposition([](const Stack& a) {
    return call_op("aten::eye.m", {a[0], a[0], a[1], a[2], a[3], a[4]});
  });

  // On CUDA devices (Note [cuda]): empty allocates only, full fills by broadcasting its
  // value on the device, and sequences are made on the host and copied over.
  for (const char* name : {"aten::empty.memory_format", "aten::empty_strided", "aten::empty_like"})
    r.edit(name).set_cuda([](const Stack&, std::vector<Tensor>&) {});
  auto fill_with = [](size_t value_index) {
    return [value_index](const Stack& a, std::vector<Tensor>& out) {
      kernels::cuda::copy_into(out[0], scalar_tensor(a[value_index].to_scalar(), out[0].dtype(), kCPU));
    };
  };
  r.edit("aten::full").set_cuda(fill_with(1));
  r.edit("aten::full_like").set_cuda(fill_with(1));
  r.edit("aten::scalar_tensor").set_cuda(fill_with(0));
  for (const char* name : {"aten::arange.start_step", "aten::linspace", "aten::eye.m"}) {
    OpDef& op = r.edit(name);
    op.set_cuda(via_host(op.cpu));
  }
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_tensor;
using ops::device_arg;
using ops::dtype_arg;

Tensor empty(IntArrayRef size, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::empty.memory_format"), {size, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::empty_strided"), {size, stride, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor zeros(IntArrayRef size, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::zeros"), {size, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor ones(IntArrayRef size, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::ones"), {size, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor full(IntArrayRef size, const Scalar& fill_value, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::full"), {size, fill_value, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor empty(SymIntArrayRef size, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::empty.memory_format"), {IValue(size), dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor zeros(SymIntArrayRef size, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::zeros"), {IValue(size), dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor ones(SymIntArrayRef size, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::ones"), {IValue(size), dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor full(SymIntArrayRef size, const Scalar& fill_value, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::full"), {IValue(size), fill_value, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor arange_of_size(const SymInt& end, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::arange"), {IValue(end), dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor arange(const Scalar& end, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::arange"), {end, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor arange_of_sizes(const SymInt& start, const SymInt& end, const SymInt& step, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::arange.start_step"),
                     {IValue(start), IValue(end), IValue(step), dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::arange.start_step"), {start, end, step, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::linspace"), {start, end, steps, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor eye(int64_t n, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::eye"), {n, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor eye(int64_t n, int64_t m, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::eye.m"), {n, m, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor scalar_tensor(const Scalar& value, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::scalar_tensor"), {value, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor empty_like(const Tensor& self, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::empty_like"), {self, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor zeros_like(const Tensor& self, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::zeros_like"), {self, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor ones_like(const Tensor& self, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::ones_like"), {self, dtype_arg(o), None{}, device_arg(o)}, loc);
}
Tensor full_like(const Tensor& self, const Scalar& fill_value, TensorOptions o, Loc loc) {
  return call_tensor(EMBER_OP("aten::full_like"), {self, fill_value, dtype_arg(o), None{}, device_arg(o)}, loc);
}

template <typename T>
Tensor tensor(const std::vector<T>& values, IntArrayRef sizes, TensorOptions options) {
  std::vector<int64_t> shape = sizes.empty() ? std::vector<int64_t>{static_cast<int64_t>(values.size())} : sizes.vec();
  EMBER_CHECK(core::numel_of(shape) == static_cast<int64_t>(values.size()))
      << "tensor(): " << values.size() << " values do not fill a tensor of shape " << IntArrayRef(shape);
  constexpr ScalarType natural = scalar_type_of<T>();
  Tensor host = ops::empty_from_meta(ops::contiguous_meta(shape, natural, kCPU));
  T* p = host.data_ptr<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  const ScalarType want = options.dtype_or(natural);
  Tensor typed = want == natural ? host : ember::to(host, want);
  return options.device_ ? typed.to(*options.device_) : typed;
}
template Tensor tensor<float>(const std::vector<float>&, IntArrayRef, TensorOptions);
template Tensor tensor<double>(const std::vector<double>&, IntArrayRef, TensorOptions);
template Tensor tensor<int64_t>(const std::vector<int64_t>&, IntArrayRef, TensorOptions);
template Tensor tensor<int32_t>(const std::vector<int32_t>&, IntArrayRef, TensorOptions);
template Tensor tensor<uint8_t>(const std::vector<uint8_t>&, IntArrayRef, TensorOptions);
template Tensor tensor<int8_t>(const std::vector<int8_t>&, IntArrayRef, TensorOptions);
template Tensor tensor<int16_t>(const std::vector<int16_t>&, IntArrayRef, TensorOptions);

template <>
Tensor tensor<bool>(const std::vector<bool>& values, IntArrayRef sizes, TensorOptions options) {
  std::vector<uint8_t> bytes(values.begin(), values.end());
  Tensor t = tensor<uint8_t>(bytes, sizes, {});
  Tensor out = ember::to(t, kBool);
  if (options.dtype_) out = ember::to(out, *options.dtype_);
  return options.device_ ? out.to(*options.device_) : out;
}

Tensor from_blob(void* data, IntArrayRef sizes, ScalarType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = sizes.vec();
  impl->strides = core::contiguous_strides(sizes);
  impl->dtype = dtype;
  impl->device = kCPU;
  impl->refresh();
  impl->storage = std::make_shared<Storage>(data, static_cast<size_t>(impl->numel) * element_size(dtype), kCPU, nullptr);
  return Tensor(std::move(impl));
}

}  // namespace ember
