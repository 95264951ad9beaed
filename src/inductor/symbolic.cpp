// inductor/symbolic.cpp — the inductor over size symbols: the rule that decides whether a
// graph compiles once for every size (else it is specialized while it is traced), the
// table of where each symbol is read, size expressions as C text, geometry evaluated per
// call. See Note [dynamic shapes] ("The inductor over symbolic graphs").
#include "inductor/symbolic.h"

#include <algorithm>
#include <set>

#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "graph/interpreter.h"
#include "inductor/pipeline.h"
#include "ops/registry.h"
#include "support/logging.h"

namespace ember::inductor {
namespace sym = core::sym;

namespace {

/// A size's expression over the call's value slots (unbacked symbols after the input ones).
sym::Expr expr_of(const core::SymInt& s) { return core::value_slots_expr(s); }

/// The environment `m`'s symbols belong to (null when none is left symbolic).
core::ShapeEnv* env_of(const TensorMeta& m) {
  if (!m.sym) return nullptr;
  auto env = [](const core::SymInt& s) { return core::current(s).env(); };
  for (const core::SymInt& s : m.sym->sizes)
    if (core::ShapeEnv* e = env(s)) return e;
  for (const core::SymInt& s : m.sym->strides)
    if (core::ShapeEnv* e = env(s)) return e;
  return env(m.sym->storage_offset);
}

core::ShapeEnv* env_of(const Graph& g) {
  for (const auto& n : g.nodes())
    for (const TensorMeta& m : n->meta())
      if (core::ShapeEnv* e = env_of(m)) return e;
  return nullptr;
}

}  // namespace

std::vector<sym::Expr> sym_sizes_of(const TensorMeta& m) {
  std::vector<sym::Expr> out;
  for (size_t d = 0; d < m.sizes.size(); ++d) out.push_back(m.sym ? expr_of(m.sym->sizes[d]) : sym::Expr(m.sizes[d]));
  return out;
}

std::vector<sym::Expr> sym_strides_of(const TensorMeta& m) {
  std::vector<sym::Expr> out;
  for (size_t d = 0; d < m.strides.size(); ++d)
    out.push_back(m.sym ? expr_of(m.sym->strides[d]) : sym::Expr(m.strides[d]));
  return out;
}

bool has_symbols(const TensorMeta& m) { return env_of(m) != nullptr; }
bool has_symbols(const Graph& g) { return env_of(g) != nullptr; }

/// A graph compiles over its symbols when (rule by rule, the first that fails is the why):
///
/// | rule | why |
/// | --- | --- |
/// | every symbol is a size of an input, read directly | the wrapper reads each symbol from an input |
/// | every data-dependent size (unbacked symbol) is a whole size of its op's output | the wrapper reads it after that
/// op runs |
///
/// Sizes, strides and offsets may be any expression (`s0//2`, `Mod(s0, 8)`): kernels
/// evaluate them with c_expr, the wrapper with sym::evaluate. Any call may be in the graph:
/// a call that does not lower is an extern that runs its eager kernel (graph::run_call_node,
/// the wrapper's Step::Eager), which sizes its outputs from its inputs and its arguments,
/// size lists and SymInts evaluated at each call's symbol values; a kernel that reads an
/// output whose strides differ from the recorded ones reads a copy (as_recorded).
///
/// A graph that needs gradients qualifies too: the AOT stage traces its joint graph over
/// the same symbols, and its forward and backward graphs compile over them (Note [aot]).
std::string why_not_symbolic(const Graph& g, const std::vector<Tensor>&) {
  const core::ShapeEnv* env = env_of(g);
  const auto backed = static_cast<int32_t>(env ? env->num_symbols() : 0);
  std::set<int32_t> used, bound;
  for (const auto& n : g.nodes()) {
    // Size lists and single sizes over symbols are evaluated per call by the wrapper: their
    // symbols must be read.
    for (const Arg& a : n->args()) {
      if (a.kind != Arg::Kind::Literal) continue;
      for (const SymInt& s : core::literal_sym_ints(a.literal))
        if (s.is_symbolic())
          for (int32_t id : sym::free_symbols(expr_of(*s.sym()))) used.insert(id);
    }
    for (const TensorMeta& m : n->meta()) {
      if (!m.sym) continue;
      std::vector<sym::Expr> all = sym_sizes_of(m);
      for (const sym::Expr& e : sym_strides_of(m)) all.push_back(e);
      all.push_back(expr_of(m.sym->storage_offset));
      for (const sym::Expr& e : all)
        for (int32_t id : sym::free_symbols(e)) used.insert(id);
      // An input's size is read from it; a data-dependent size (an unbacked symbol's slot)
      // from the output of the op that computes it, once that op has run.
      const bool input = n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Attribute;
      for (const sym::Expr& e : sym_sizes_of(m))
        if (e.kind() == sym::Kind::Symbol && (input || (n->kind() == NodeKind::Call && e.symbol_id() >= backed)))
          bound.insert(e.symbol_id());
    }
  }
  for (int32_t id : used) {
    if (bound.count(id)) continue;
    if (id >= backed)
      return core::sym::default_symbol_name(core::sym::kUnbackedBase + (id - backed)) +
             " is not a whole size of the output of the op that computes it";
    return "s" + std::to_string(id) + " is not the size of an input";
  }
  return "";
}

void specialize_symbols(const Graph& g, const std::string& why) {
  core::ShapeEnv* env = env_of(g);
  if (!env) return;
  std::string specialized;
  for (size_t i = 0; i < env->num_symbols(); ++i) {
    const sym::Expr symbol = sym::Expr::symbol(static_cast<int32_t>(i));
    if (env->simplify(symbol).is_const()) continue;
    const int64_t value = env->specialize(symbol);
    specialized += std::string(specialized.empty() ? "" : ", ") + "s" + std::to_string(i) + " (" +
                   env->symbol(static_cast<int32_t>(i)).source + ") = " + std::to_string(value);
  }
  if (!specialized.empty())
    EMBER_LOG(dynamic, INFO) << "specialized " << specialized << ": inductor compiles graph " << g.name()
                             << " for fixed sizes, because " << why;
}

SlotGeometry slot_geometry(const TensorMeta& m) {
  return {sym_sizes_of(m), sym_strides_of(m), m.sym ? expr_of(m.sym->storage_offset) : sym::Expr(m.storage_offset)};
}

void evaluate_meta_into(const TensorMeta& m, const SlotGeometry& g, std::span<const int64_t> values, TensorMeta& out) {
  out.dtype = m.dtype;
  out.device = m.device;
  out.undefined = m.undefined;
  out.sym = nullptr;
  out.sizes.resize(g.sizes.size());
  out.strides.resize(g.strides.size());
  for (size_t d = 0; d < g.sizes.size(); ++d) out.sizes[d] = sym::evaluate(g.sizes[d], values);
  for (size_t d = 0; d < g.strides.size(); ++d) out.strides[d] = sym::evaluate(g.strides[d], values);
  out.storage_offset = sym::evaluate(g.offset, values);
}

}  // namespace ember::inductor
