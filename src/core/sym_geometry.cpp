// core/sym_geometry.cpp — see sym_geometry.h.
#include "core/sym_geometry.h"
#include <algorithm>

#include "core/shape.h"
#include "core/shape_env.h"
#include "core/shape_rules.h"

namespace ember::core {

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

SymInts sym_int_list(const IValue& v) {
  SymInts out;
  for (const ember::SymInt& s : v.to_sym_int_list()) out.push_back(s.sym() ? current(*s.sym()) : SymInt(s.hint()));
  return out;
}

std::vector<ember::SymInt> literal_sym_ints(const IValue& v) {
  if (v.is_sym_int_list()) return v.to_sym_int_list();
  if (v.is_sym_int()) return {v.to_sym_int()};
  return {};
}

void drop_geometry_if_static(const Tensor& t) {
  const std::shared_ptr<const SymGeometry> g = t.impl()->sym;
  if (!g) return;
  auto constant = [](const SymInt& s) { return !current(s).is_symbolic(); };
  if (std::all_of(g->sizes.begin(), g->sizes.end(), constant) &&
      std::all_of(g->strides.begin(), g->strides.end(), constant) && constant(g->storage_offset))
    t.impl()->sym = nullptr;
}

IValue size_list_value(const SymInts& sizes) {
  std::vector<ember::SymInt> out;
  out.reserve(sizes.size());
  for (const SymInt& s : sizes) out.emplace_back(s);
  return IValue(out);
}

SymInt sym_int_arg(const IValue& v) {
  const ember::SymInt s = v.to_sym_int();
  return s.sym() ? current(*s.sym()) : SymInt(s.hint());
}

IValue size_value(const SymInt& size) { return IValue(ember::SymInt(size)); }

SymInt current(const SymInt& s) {
  return s.is_symbolic() ? SymInt(s.env()->simplify(s.expr()), s.hint(), s.env()) : s;
}

sym::Expr value_slots_expr(const SymInt& s) {
  const SymInt now = current(s);
  if (!now.is_symbolic()) return sym::Expr(now.hint());
  if (!ShapeEnv::has_unbacked(now.expr())) return now.expr();
  const auto backed = static_cast<int32_t>(now.env()->num_symbols());
  return sym::substitute(now.expr(), [&](int32_t id) -> std::optional<sym::Expr> {
    if (!sym::is_unbacked(id)) return std::nullopt;
    return sym::Expr::symbol(backed + (id - sym::kUnbackedBase));
  });
}

size_t value_slot_count(const ShapeEnv& env) { return env.num_symbols() + env.num_unbacked(); }

namespace {
SymInts current(const SymInts& v) {
  SymInts out;
  out.reserve(v.size());
  for (const SymInt& s : v) out.push_back(current(s));
  return out;
}
}  // namespace

// The accessors read TensorImpl's fields directly: Tensor::sizes() would specialize.
SymInts sym_sizes(const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  return impl.sym ? current(impl.sym->sizes) : to_sym(impl.sizes);
}

SymInts sym_strides(const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  return impl.sym ? current(impl.sym->strides) : to_sym(impl.strides);
}

SymInt sym_size(const Tensor& t, int64_t dim) {
  const TensorImpl& impl = *t.impl();
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(impl.sizes.size()));
  return impl.sym ? current(impl.sym->sizes[d]) : SymInt(impl.sizes[d]);
}

SymInt sym_stride(const Tensor& t, int64_t dim) {
  const TensorImpl& impl = *t.impl();
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(impl.sizes.size()));
  return impl.sym ? current(impl.sym->strides[d]) : SymInt(impl.strides[d]);
}

SymInt sym_numel(const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  return impl.sym ? sym_numel_of(current(impl.sym->sizes)) : SymInt(impl.numel);
}

SymInt sym_storage_offset(const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  return impl.sym ? current(impl.sym->storage_offset) : SymInt(impl.storage_offset);
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
    m.sym = share_geometry(SymGeometry{sizes, strides, storage_offset});
  }
  return m;
}

std::shared_ptr<const SymGeometry> share_geometry(SymGeometry g) {
  const ShapeEnv* env = nullptr;
  auto find = [&](const SymInt& s) {
    if (!env && s.is_symbolic()) env = s.env();
  };
  for (const SymInt& s : g.sizes) find(s);
  for (const SymInt& s : g.strides) find(s);
  find(g.storage_offset);
  std::shared_ptr<const ShapeEnv> owner = env ? env->weak_from_this().lock() : nullptr;
  if (!owner) return std::make_shared<const SymGeometry>(std::move(g));
  return {new SymGeometry(std::move(g)), [owner = std::move(owner)](const SymGeometry* p) { delete p; }};
}

TensorMeta contiguous_sym_meta(const SymInts& sizes, ScalarType dtype, Device device) {
  return make_meta(sizes, sym_contiguous_strides(sizes), 0, dtype, device);
}

SymInt sym_numel_of(const SymInts& sizes) { return rules::numel_of(ArrayRef<SymInt>(sizes)); }

SymInts sym_contiguous_strides(const SymInts& sizes) { return rules::contiguous_strides(ArrayRef<SymInt>(sizes)); }

SymInts sym_broadcast_shapes(const SymInts& a, const SymInts& b) {
  return rules::broadcast_shapes(ArrayRef<SymInt>(a), ArrayRef<SymInt>(b));
}

SymInts sym_broadcast_strides(const SymInts& sizes, const SymInts& strides, const SymInts& target) {
  return rules::broadcast_strides(ArrayRef<SymInt>(sizes), ArrayRef<SymInt>(strides), ArrayRef<SymInt>(target));
}

SymInts sym_infer_size(IntArrayRef shape, const SymInt& numel) { return rules::infer_size(shape, numel); }

bool sym_is_channels_last_strides_2d(const SymInts& sizes, const SymInts& strides) {
  return rules::is_channels_last_strides_2d(ArrayRef<SymInt>(sizes), ArrayRef<SymInt>(strides));
}

SymInts sym_channels_last_strides(const SymInts& sizes) {
  EMBER_INTERNAL_ASSERT(sizes.size() >= 3) << "channels_last_strides: rank " << sizes.size();
  return rules::channels_last_strides(ArrayRef<SymInt>(sizes));
}

bool sym_compute_view_strides(const SymInts& sizes, const SymInts& strides, const SymInts& shape, SymInts& out) {
  return rules::compute_view_strides(ArrayRef<SymInt>(sizes), ArrayRef<SymInt>(strides), ArrayRef<SymInt>(shape), out);
}

}  // namespace ember::core
