// core/sym_geometry.cpp — see sym_geometry.h.
#include "core/sym_geometry.h"

#include <optional>
#include <sstream>

#include "core/shape.h"

namespace ember::core {
namespace {

std::string show(const SymInts& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i].hint();
  os << "]";
  return os.str();
}

}  // namespace

SymInts to_sym(IntArrayRef v) { return SymInts(v.begin(), v.end()); }

std::vector<int64_t> hints(const SymInts& v) {
  std::vector<int64_t> out;
  out.reserve(v.size());
  for (const SymInt& s : v) out.push_back(s.hint());
  return out;
}

bool any_symbolic(const SymInts& v) {
  for (const SymInt& s : v)
    if (s.is_symbolic()) return true;
  return false;
}

// The accessors read TensorImpl's fields directly: Tensor::sizes() would specialize.
SymInts sym_sizes(const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  return impl.sym ? impl.sym->sizes : to_sym(impl.sizes);
}

SymInts sym_strides(const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  return impl.sym ? impl.sym->strides : to_sym(impl.strides);
}

SymInt sym_size(const Tensor& t, int64_t dim) {
  const TensorImpl& impl = *t.impl();
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(impl.sizes.size()));
  return impl.sym ? impl.sym->sizes[d] : SymInt(impl.sizes[d]);
}

SymInt sym_stride(const Tensor& t, int64_t dim) {
  const TensorImpl& impl = *t.impl();
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(impl.sizes.size()));
  return impl.sym ? impl.sym->strides[d] : SymInt(impl.strides[d]);
}

SymInt sym_numel(const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  return impl.sym ? sym_numel_of(impl.sym->sizes) : SymInt(impl.numel);
}

SymInt sym_storage_offset(const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  return impl.sym ? impl.sym->storage_offset : SymInt(impl.storage_offset);
}

TensorMeta make_meta(const SymInts& sizes, const SymInts& strides, const SymInt& storage_offset, ScalarType dtype,
                     Device device) {
  TensorMeta m;
  m.sizes = hints(sizes);
  m.strides = hints(strides);
  m.storage_offset = storage_offset.hint();
  m.dtype = dtype;
  m.device = device;
  if (any_symbolic(sizes) || any_symbolic(strides) || storage_offset.is_symbolic()) {
    m.sym = std::make_shared<const SymGeometry>(SymGeometry{sizes, strides, storage_offset});
  }
  return m;
}

TensorMeta contiguous_sym_meta(const SymInts& sizes, ScalarType dtype, Device device) {
  return make_meta(sizes, sym_contiguous_strides(sizes), 0, dtype, device);
}

SymInt sym_numel_of(const SymInts& sizes) {
  SymInt n = 1;
  for (const SymInt& s : sizes) n = n * s;
  return n;
}

SymInts sym_contiguous_strides(const SymInts& sizes) {
  SymInts strides(sizes.size(), 1);
  SymInt next = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = next;
    // A size-0 dim does not zero the strides before it (as contiguous_strides).
    next = next * (sizes[i].maybe_int() == 0 ? SymInt(1) : sizes[i]);
  }
  return strides;
}

SymInts sym_broadcast_shapes(const SymInts& a, const SymInts& b) {
  const size_t nd = std::max(a.size(), b.size());
  SymInts out(nd, 1);
  for (size_t i = nd; i-- > 0;) {
    const int64_t ia = static_cast<int64_t>(i) - static_cast<int64_t>(nd - a.size());
    const int64_t ib = static_cast<int64_t>(i) - static_cast<int64_t>(nd - b.size());
    const SymInt sa = ia >= 0 ? a[ia] : SymInt(1);
    const SymInt sb = ib >= 0 ? b[ib] : SymInt(1);
    // 0 and 1 are never symbolic, so `== 1` asks nothing of a symbol; a size that must
    // equal the other's guards that it does (y.size(0) == x.size(0)).
    if (sa == 1) {
      out[i] = sb;
    } else if (sb == 1) {
      out[i] = sa;
    } else {
      EMBER_CHECK(sa == sb) << "The size of tensor a (" << sa.hint() << ") must match the size of tensor b ("
                            << sb.hint() << ") at non-singleton dimension " << i;
      out[i] = sa;
    }
  }
  return out;
}

SymInts sym_broadcast_strides(const SymInts& sizes, const SymInts& strides, const SymInts& target) {
  const size_t nd = target.size();
  EMBER_INTERNAL_ASSERT(sizes.size() <= nd);
  SymInts out(nd, 0);
  const size_t off = nd - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == target[off + i]) {
      out[off + i] = sizes[i] == 1 ? SymInt(0) : strides[i];
    } else {
      EMBER_CHECK(sizes[i] == 1) << "The expanded size of the tensor (" << target[off + i].hint()
                                 << ") must match the existing size (" << sizes[i].hint()
                                 << ") at non-singleton dimension " << off + i << ".  Target sizes: " << show(target)
                                 << ".  Tensor sizes: " << show(sizes);
      out[off + i] = 0;
    }
  }
  return out;
}

SymInts sym_infer_size(IntArrayRef shape, const SymInt& numel) {
  SymInts out = to_sym(shape);
  SymInt known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < out.size(); ++i) {
    if (shape[i] == -1) {
      EMBER_CHECK(!infer) << "only one dimension can be inferred";
      infer = i;
    } else {
      EMBER_CHECK(shape[i] >= 0) << "invalid shape dimension " << shape[i];
      known = known * out[i];
    }
  }
  if (infer) {
    EMBER_CHECK(known != 0 && mod(numel, known) == 0)
        << "shape '" << shape << "' is invalid for input of size " << numel.hint();
    out[*infer] = floordiv(numel, known);
  } else {
    EMBER_CHECK(known == numel) << "shape '" << shape << "' is invalid for input of size " << numel.hint();
  }
  return out;
}

bool sym_compute_view_strides(const SymInts& oldshape, const SymInts& oldstride, const SymInts& newshape,
                              SymInts& newstride) {
  newstride.assign(newshape.size(), 0);
  if (oldshape.empty()) {
    newstride.assign(newshape.size(), 1);
    return true;
  }
  const SymInt numel = sym_numel_of(oldshape);
  if (numel == 0) {
    bool same = oldshape.size() == newshape.size();
    for (size_t i = 0; same && i < oldshape.size(); ++i) same = oldshape[i] == newshape[i];
    newstride = same ? oldstride : sym_contiguous_strides(newshape);
    return true;
  }
  int64_t view_d = static_cast<int64_t>(newshape.size()) - 1;
  SymInt chunk_base_stride = oldstride.back();
  SymInt tensor_numel = 1;
  SymInt view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(oldshape.size()) - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel = tensor_numel * oldshape[tensor_d];
    if (tensor_d == 0 ||
        (oldshape[tensor_d - 1] != 1 && oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel = view_numel * newshape[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace ember::core
