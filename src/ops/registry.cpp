// ops/registry.cpp — the registry's storage, lookup and facet bookkeeping.
#include "ops/registry.h"

#include <algorithm>
#include <mutex>

#include "ops/families.h"

namespace ember::ops {

namespace {
FacetSite site(const std::source_location& loc) { return {loc.file_name(), loc.line()}; }
}  // namespace

OpDef& OpDef::set_meta(MetaFn f, std::source_location loc) {
  meta = std::move(f);
  meta_site = site(loc);
  return *this;
}
OpDef& OpDef::set_cpu(KernelFn f, std::source_location loc) {
  cpu = std::move(f);
  cpu_site = site(loc);
  return *this;
}
OpDef& OpDef::set_cuda(KernelFn f, std::source_location loc) {
  cuda = std::move(f);
  cuda_site = site(loc);
  return *this;
}
OpDef& OpDef::set_cpu_dynamic(DynamicKernelFn f, std::source_location loc) {
  cpu_dynamic = std::move(f);
  cpu_site = site(loc);
  kind = OpKind::Dynamic;
  return *this;
}
OpDef& OpDef::set_decomposition(DecompFn f, std::source_location loc) {
  decomposition = std::move(f);
  decomposition_site = site(loc);
  if (kind == OpKind::Functional) kind = OpKind::Composite;
  return *this;
}
OpDef& OpDef::set_view(MetaFn f, std::source_location loc) {
  meta = std::move(f);
  meta_site = site(loc);
  kind = OpKind::View;
  return *this;
}
OpDef& OpDef::set_derivative(std::string node_name, DerivativeFn f, std::source_location loc) {
  backward_name = std::move(node_name);
  derivative = std::move(f);
  derivative_site = site(loc);
  return *this;
}
OpDef& OpDef::set_not_differentiable(std::source_location loc) {
  not_differentiable = true;
  derivative_site = site(loc);
  return *this;
}
OpDef& OpDef::set_inplace_of(std::string functional_op) {
  functional_name = std::move(functional_op);
  kind = OpKind::InPlace;
  return *this;
}

OpDef& Registry::def(std::string_view schema_text, std::source_location loc) {
  auto op = std::make_unique<OpDef>();
  op->schema = parse_schema(schema_text);
  op->name = op->schema.qualified_name();
  op->schema_site = site(loc);
  EMBER_INTERNAL_ASSERT(!ops_.count(op->name)) << "op registered twice: " << op->name;
  OpDef& ref = *op;
  ops_.emplace(op->name, std::move(op));
  return ref;
}

const OpDef* Registry::find(std::string_view name) const {
  std::string key(name);
  if (key.find("::") == std::string::npos) key = "aten::" + key;
  auto it = ops_.find(key);
  if (it == ops_.end() && key.find('.') == std::string::npos) it = ops_.find(key + ".default");
  return it == ops_.end() ? nullptr : it->second.get();
}

const OpDef& Registry::get(std::string_view name) const {
  const OpDef* op = find(name);
  if (!op) {
    std::string base(name);
    if (const size_t colons = base.find("::"); colons != std::string::npos) base = base.substr(colons + 2);
    base = base.substr(0, base.find('.'));
    std::string similar;
    for (const auto& [n, o] : ops_)
      if (o->schema.name == base) similar += "\n  " + n;
    EMBER_FAIL() << "unknown operator '" << name << "'"
                 << (similar.empty() ? std::string(" (see `ember ops` for the list)") : "; overloads that exist:" + similar);
  }
  return *op;
}

OpDef& Registry::edit(std::string_view name) {
  const OpDef& op = get(name);
  return const_cast<OpDef&>(op);  // every OpDef is owned (non-const) by ops_
}

std::vector<const OpDef*> Registry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& [n, o] : ops_) out.push_back(o.get());
  return out;
}

void Registry::finalize() {
  for (auto& [n, op] : ops_) {
    if (op->kind == OpKind::InPlace) {
      op->functional = find(op->functional_name);
      EMBER_INTERNAL_ASSERT(op->functional) << n << ": in-place op of unknown functional op " << op->functional_name;
    }
    EMBER_INTERNAL_ASSERT(op->kind == OpKind::InPlace || op->decomposition || op->cpu || op->cpu_dynamic ||
                          op->kind == OpKind::View)
        << n << " has neither a kernel nor a decomposition";
    EMBER_INTERNAL_ASSERT(op->kind != OpKind::Functional || op->meta) << n << " has a kernel but no meta function";
    // Composite and in-place ops never reach the autograd layer: a formula there would be dead.
    EMBER_INTERNAL_ASSERT(!op->derivative || (op->kind != OpKind::Composite && op->kind != OpKind::InPlace))
        << n << ": a derivative on a composite or in-place op is never used";
    EMBER_INTERNAL_ASSERT(!(op->derivative && op->not_differentiable)) << n << ": both a derivative and none";
  }
}

Registry& registry() {
  static Registry* instance = [] {
    auto* r = new Registry();
    register_copy_ops(*r);
    register_resize_ops(*r);
    register_factory_ops(*r);
    register_view_ops(*r);
    register_pointwise_ops(*r);
    register_reduction_ops(*r);
    register_linalg_ops(*r);
    register_nn_ops(*r);
    register_conv_ops(*r);
    register_shape_ops(*r);
    register_indexing_ops(*r);
    register_random_ops(*r);
    register_nn_backward_ops(*r);
    register_loss_ops(*r);
    register_pointwise_composite_ops(*r);
    register_norm_ops(*r);
    register_padding_ops(*r);
    register_upsample_ops(*r);
    register_distance_ops(*r);
    register_fold_ops(*r);
    register_pool3d_ops(*r);
    register_grid_sample_ops(*r);
    register_embedding_bag_ops(*r);
    register_attention_ops(*r);
    register_fft_ops(*r);
    register_complex_arith_ops(*r);
    register_symbolic_batch(*r);
    register_symbolic_geometry(*r);
    register_derivatives(*r);
    register_nn_derivatives(*r);
    r->finalize();
    return r;
  }();
  return *instance;
}

}  // namespace ember::ops
