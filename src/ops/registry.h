// ops/registry.h — THE operator registry. Each op is one OpDef, named as the ATen op it
// mirrors, holding every facet of the op: schema, meta function, CPU kernel or
// decomposition, and (from later layers) its derivative and lowering. Registration
// records the file:line of each facet so `ember ops NAME` can say where it lives.
//
// How an op runs (see dispatch.h):
//   composite   decompose(args) — calls other ops; never reaches a kernel
//   in-place    the functional op, then copy_ into `self` (functionalized at dispatch)
//   view        meta(args) gives sizes/strides/offset; the output shares self's storage
//   functional  meta(args) gives outputs; they are allocated; cpu(args, outputs) fills them
//   dynamic     the output shape depends on data: cpu_dynamic(args) allocates itself
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "ember/ivalue.h"
#include "ops/schema.h"

namespace ember::ops {

/// What a meta function says about one output.
struct TensorMeta {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  ScalarType dtype = kFloat;
  Device device;
  int64_t storage_offset = 0;  // views only
};

using MetaFn = std::function<std::vector<TensorMeta>(const Stack& args)>;
using KernelFn = std::function<void(const Stack& args, std::vector<Tensor>& outputs)>;
using DynamicKernelFn = std::function<Stack(const Stack& args)>;
using DecompFn = std::function<Stack(const Stack& args)>;

enum class OpKind { Functional, View, InPlace, Composite, Dynamic };

/// Where a facet was registered.
struct FacetSite {
  const char* file = nullptr;
  unsigned line = 0;
  bool present() const { return file != nullptr; }
};

struct OpDef {
  Schema schema;
  std::string name;  // "aten::add.Tensor"
  OpKind kind = OpKind::Functional;

  MetaFn meta;
  KernelFn cpu;
  DynamicKernelFn cpu_dynamic;
  DecompFn decomposition;
  /// For in-place ops: the functional op computing the new value of self.
  const OpDef* functional = nullptr;
  std::string functional_name;
  /// Random ops read the generator; capture and codegen treat them specially.
  bool nondeterministic_seeded = false;

  FacetSite schema_site, meta_site, cpu_site, decomposition_site;

  // --- builder ------------------------------------------------------------------
  OpDef& set_meta(MetaFn f, std::source_location loc = std::source_location::current());
  OpDef& set_cpu(KernelFn f, std::source_location loc = std::source_location::current());
  OpDef& set_cpu_dynamic(DynamicKernelFn f, std::source_location loc = std::source_location::current());
  OpDef& set_decomposition(DecompFn f, std::source_location loc = std::source_location::current());
  /// Marks a view op: meta gives the view geometry, outputs alias argument 0.
  OpDef& set_view(MetaFn f, std::source_location loc = std::source_location::current());
  /// Marks an in-place op computed by `functional_op` then copied into argument 0.
  OpDef& set_inplace_of(std::string functional_op);
  OpDef& set_random() {
    nondeterministic_seeded = true;
    return *this;
  }
};

class Registry {
 public:
  /// Registers an op from its ATen schema text. Raises if the name is taken.
  OpDef& def(std::string_view schema, std::source_location loc = std::source_location::current());
  /// The op named "aten::add.Tensor" (or "add.Tensor"); nullptr if unknown.
  const OpDef* find(std::string_view name) const;
  /// Like find, but raises an error listing close names when unknown.
  const OpDef& get(std::string_view name) const;
  /// Every op, sorted by name.
  std::vector<const OpDef*> all() const;

 private:
  friend Registry& registry();
  void finalize();
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_;
};

/// The process-wide registry, built on first use from every op family.
Registry& registry();

}  // namespace ember::ops
