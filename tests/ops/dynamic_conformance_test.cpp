// Dynamic conformance: every case of every op that eager Ember runs, called through one
// function compiled with `.dynamic = true` and the inductor backend at the case's sizes and
// at two other sizes, against eager Ember at the same sizes (values, dtypes, sizes and
// strides). The other sizes come from the trace's shape environment: each symbol gets new
// values (hint + 1, then 2 * hint + 3, within its range), a symbol the trace replaced by an
// expression takes that expression's value, a specialized one keeps its value, and the
// symbols of a guard those values break keep theirs (so the relations the guards record
// hold). Inputs are regenerated at those sizes with the case's dtypes, layouts and values
// (each element drawn from the case's own tensor, so integer indices stay in range). Per
// op, the cases sit side by side in one compiled function, as in the compiled replay; a
// function that fails as a whole is rerun per case. With EMBER_DYNAMIC_CONFORMANCE_DEVICE=cuda
// the same replay runs on cuda:0 over tests/ops/cases_cuda against eager CUDA (the CUDA code
// generator over size symbols; summary `cuda dynamic: …`): cases without a tensor input (a
// CPU graph) and cases eager CUDA does not run are left out. See docs/testing.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <set>

#include "case_runner.h"
#include "core/shape_env.h"
#include "ember/compile.h"
#include "ember/ember.h"
#include "ember/graph.h"
#include "ember/logging.h"
#include "graph/text.h"
#include "inductor/inductor.h"
#include "inductor/symbolic.h"
#include "ops/dispatch.h"
#include "ops/registry.h"

namespace ember::conformance {
namespace {

namespace sym = core::sym;

constexpr uint64_t kSeed = 7;

/// Where the cases run: cuda:0 when EMBER_DYNAMIC_CONFORMANCE_DEVICE is "cuda", else the CPU.
Device case_device() {
  const char* env = std::getenv("EMBER_DYNAMIC_CONFORMANCE_DEVICE");
  return env && std::string(env) == "cuda" ? Device("cuda:0") : Device(kCPU);
}
/// The sizes each symbol takes after the case's own: strictly increasing functions of its
/// example value, so `<` and `==` between symbols keep holding and every index that was in
/// range stays in range.
constexpr int kOtherSizes = 2;
int64_t other_size(int64_t hint, int which) { return which == 0 ? hint + 1 : 2 * hint + 3; }

/// One case: its file entry, its stack at the case's sizes and where its tensors start in
/// the function's flat argument list.
struct DynCase {
  const ops::OpDef* op = nullptr;
  const CaseFile* file = nullptr;
  const json* c = nullptr;
  Stack stack;
  size_t first = 0, num_inputs = 0;
  /// Its inputs at the case's sizes, then at the other sizes (plan_sizes).
  std::vector<std::vector<Tensor>> at;
  /// The inputs' dims that are symbols when the case is traced alone: (input, dim).
  std::vector<std::pair<size_t, int64_t>> symbolic_dims;
  bool varied = false;        // some input size differs from the case's
  std::string kept;           // why none does
  std::string not_symbolic;   // why the inductor compiles its graph for fixed sizes ("" if not)
};

/// The function the cases are compiled as: every case's call through the dispatcher, its
/// tensors taken from `ts` in order; the outputs flattened.
struct CaseCalls {
  std::vector<DynCase> cases;
  std::vector<Tensor> inputs;  // at the case's sizes, in order
  std::vector<size_t> out_counts;

  std::vector<Tensor> operator()(const std::vector<Tensor>& ts) {
    std::vector<Tensor> outs;
    out_counts.assign(cases.size(), 0);
    for (size_t k = 0; k < cases.size(); ++k) {
      const std::optional<std::vector<Tensor>> r =
          result_tensors(ops::call(*cases[k].op, TensorSlots::with(cases[k].stack, ts, cases[k].first)));
      EMBER_CHECK(r) << "not tensors";
      out_counts[k] = r->size();
      outs.insert(outs.end(), r->begin(), r->end());
    }
    return outs;
  }
};

/// The number of elements `t`'s storage holds.
int64_t storage_elems(const Tensor& t) { return static_cast<int64_t>(t.storage()->nbytes() / t.element_size()); }

/// Copies of `ts` with their sizes, strides and offsets: each storage copied whole (an op
/// such as as_strided reads past a view's elements), and the same view of it taken.
std::vector<Tensor> clones(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) {
    const Tensor storage = as_strided(t, {storage_elems(t)}, {1}, 0).clone();
    out.push_back(as_strided(storage, t.sizes(), t.strides(), t.storage_offset()));
  }
  return out;
}

/// The dims of a tensor with these sizes and strides inside the first one (by increasing
/// stride) whose stride an element reached through them reaches again: growing them made
/// the layout overlap itself. Empty when no element is reached twice along dims that are
/// not broadcast (stride 0).
std::vector<size_t> overlapping_dims(IntArrayRef sizes, IntArrayRef strides) {
  std::vector<std::pair<int64_t, size_t>> dims;  // (stride, dim)
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return {};
    if (sizes[d] > 1 && strides[d] != 0) dims.emplace_back(std::abs(strides[d]), d);
  }
  std::sort(dims.begin(), dims.end());
  int64_t extent = 0;  // the largest offset the dims inside reach
  std::vector<size_t> inside;
  for (const auto& [stride, d] : dims) {
    if (stride <= extent) return inside;
    extent += stride * (sizes[d] - 1);
    inside.push_back(d);
  }
  return {};
}

/// The strides capture gives input `t` traced with symbolic sizes, at `sizes`: walking the
/// dims by increasing stride, a stride that is the product of the sizes inside it stays that
/// product; any other stride keeps its value (Tracer::make_symbolic).
std::vector<int64_t> strides_at(const Tensor& t, const std::vector<int64_t>& sizes) {
  const size_t rank = sizes.size();
  std::vector<size_t> order(rank);
  for (size_t i = 0; i < rank; ++i) order[i] = rank - 1 - i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t.strides()[a] < t.strides()[b]; });
  std::vector<int64_t> strides(rank, 0);
  int64_t expected = 1, expected_new = 1;
  for (size_t d : order) {
    strides[d] = t.strides()[d] == expected ? expected_new : t.strides()[d];
    expected = t.strides()[d] * t.sizes()[d];
    expected_new = strides[d] * sizes[d];
  }
  return strides;
}

/// Input `t` at `sizes` (strides_at's layout, its offset, a storage at least as large as
/// its own), each element drawn from `t`.
Tensor regenerate(const Tensor& t, const std::vector<int64_t>& sizes, std::mt19937_64& rng) {
  const std::vector<int64_t> strides = strides_at(t, sizes);
  int64_t extent = t.storage_offset() + 1;
  for (size_t d = 0; d < sizes.size(); ++d) extent += sizes[d] == 0 ? 0 : (sizes[d] - 1) * strides[d];
  extent = std::max(extent, storage_elems(t));  // as clones: what the case's storage holds past its view
  // Complex elements are drawn as (real, imaginary) rows: index_select takes no complex
  // tensor (Note [complex dtypes]).
  const bool complex = is_complex(t.dtype());
  const Tensor flat = complex ? view_as_real(t.contiguous()).reshape({-1, 2}) : t.contiguous().view({-1});
  if (flat.numel() == 0)
    return as_strided(zeros({extent}, TensorOptions(t.dtype()).device(t.device())), sizes, strides, t.storage_offset());
  std::vector<int64_t> picks(static_cast<size_t>(extent));
  std::uniform_int_distribution<int64_t> pick(0, flat.size(0) - 1);
  for (int64_t& p : picks) p = pick(rng);
  Tensor storage = index_select(flat, 0, tensor(picks, {extent}, TensorOptions(kInt64)).to(t.device()));
  if (complex) storage = view_as_complex(storage);
  return as_strided(storage, sizes, strides, t.storage_offset());
}

/// The graph texts a trace logged on `graph_code`, parsed back (each over a shape
/// environment of its own).
std::vector<std::unique_ptr<Graph>> parse_logged(const std::vector<std::string>& texts) {
  std::vector<std::unique_ptr<Graph>> graphs;
  for (const std::string& m : texts) {
    const size_t start = m.find("graph ");
    if (start == std::string::npos) continue;
    graphs.push_back(parse_graph(m.substr(start)));
  }
  return graphs;
}

/// Traces case `k` alone with `.dynamic = true` under the "eager" backend (no C++
/// compile) and fills in its inputs at the other sizes, derived from the first graph's
/// shape environment, and whether the inductor would compile its graphs over symbols.
void plan_sizes(DynCase& k) {
  CaseCalls calls{{k}, k.at.at(0), {}};
  calls.cases[0].first = 0;
  std::vector<std::string> texts;
  bool specialized = false;  // the trace specialized a symbol (an op read sizes as integers)
  {
    logging::ScopedSink sink(
        [&](const logging::Record& r) {
          if (r.channel == "graph_code") texts.emplace_back(r.message);
          if (r.channel == "dynamic" && r.message.starts_with("specialized ")) specialized = true;
        },
        "graph_code,dynamic");
    auto probe = compile([&](const std::vector<Tensor>& ts) { return calls(ts); },
                         {.backend = "eager", .name = "dynamic_probe", .arg_names = {"ts"}, .dynamic = true});
    probe(clones(calls.inputs));
  }
  const std::vector<std::unique_ptr<Graph>> graphs = parse_logged(texts);
  const core::ShapeEnv* env = nullptr;
  for (const auto& g : graphs)
    if ((env = graph_text::shape_env_of(*g))) break;
  const std::regex source_re(R"(ts\[(\d+)\]\.size\((\d+)\))");
  // (input, dim) → symbol.
  std::map<std::pair<size_t, int64_t>, int32_t> symbol_of;
  if (env)
    for (size_t i = 0; i < env->num_symbols(); ++i) {
      std::smatch m;
      const std::string& source = env->symbol(static_cast<int32_t>(i)).source;
      if (std::regex_match(source, m, source_re))
        symbol_of[{std::stoul(m[1]), std::stoll(m[2])}] = static_cast<int32_t>(i);
    }
  for (const auto& g : graphs) {
    if (!k.not_symbolic.empty()) continue;  // a graph without symbols counts too: it shares the function
    std::vector<Tensor> examples;
    for (const Node* n : g->inputs())
      examples.push_back(empty_strided(n->meta().at(0).sizes, n->meta().at(0).strides, TensorOptions(n->meta().at(0).dtype)));
    k.not_symbolic = inductor::why_not_symbolic(*g, examples);
  }
  for (const auto& [input_dim, id] : symbol_of) k.symbolic_dims.push_back(input_dim);
  if (symbol_of.empty())
    k.kept = specialized ? "the trace specialized every symbol: an op reads sizes as integers"
                         : "no input size is a symbol: sizes 0 and 1, or no tensor input";
  std::mt19937_64 rng(kSeed);
  for (int which = 0; which < kOtherSizes; ++which) {
    std::vector<int64_t> values(env ? env->num_symbols() : 0);
    std::set<int32_t> pinned;
    std::vector<std::vector<int64_t>> sizes(calls.inputs.size());
    for (;;) {
      const size_t pinned_before = pinned.size();
      // The symbols without a replacement first, then the replaced ones from theirs.
      for (size_t i = 0; i < values.size(); ++i) {
        const core::SymbolInfo& s = env->symbol(static_cast<int32_t>(i));
        const sym::Expr root = env->simplify(sym::Expr::symbol(static_cast<int32_t>(i)));
        if (root.kind() != sym::Kind::Symbol || root.symbol_id() != static_cast<int32_t>(i)) continue;
        values[i] = pinned.count(static_cast<int32_t>(i)) ? s.hint
                                                          : std::clamp(other_size(s.hint, which), s.range.lo, s.range.hi);
        // A symbol a divisibility fact names (group_norm's C, a multiple of the groups)
        // takes the next multiple; one past its range is pinned below.
        if (!pinned.count(static_cast<int32_t>(i)))
          for (const core::Divisible& f : env->divisible())
            if (f.e == sym::Expr::symbol(static_cast<int32_t>(i))) values[i] = (values[i] + f.k - 1) / f.k * f.k;
      }
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = sym::evaluate(env->simplify(sym::Expr::symbol(static_cast<int32_t>(i))), values);
      // Each symbol the expression names, through its replacement (not simplify(e): a
      // divisibility fact folds its own guard `Mod(s1, 3) == 0` to `0 == 0`).
      auto pin = [&](const sym::Expr& e) {
        for (int32_t named : sym::free_symbols(e))
          for (int32_t id : sym::free_symbols(env->simplify(sym::Expr::symbol(named)))) pinned.insert(id);
      };
      for (const core::ShapeGuard& g : env ? env->guards() : std::vector<core::ShapeGuard>{}) {
        const int64_t l = sym::evaluate(g.lhs, values), r = sym::evaluate(g.rhs, values);
        const bool holds = g.rel == core::Relation::Eq   ? l == r
                           : g.rel == core::Relation::Ne ? l != r
                           : g.rel == core::Relation::Lt ? l < r
                                                         : l <= r;
        if (!holds) {
          pin(g.lhs);
          pin(g.rhs);
        }
      }
      for (size_t i = 0; i < values.size(); ++i)
        if (!env->symbol(static_cast<int32_t>(i)).range.contains(values[i])) pin(sym::Expr::symbol(static_cast<int32_t>(i)));
      // An input laid out without overlap keeps so (a write into it must not alias itself).
      for (size_t t = 0; t < calls.inputs.size(); ++t) {
        const Tensor& x = calls.inputs[t];
        sizes[t] = x.sizes().vec();
        for (int64_t d = 0; d < x.dim(); ++d) {
          auto it = symbol_of.find({t, d});
          if (it != symbol_of.end()) sizes[t][static_cast<size_t>(d)] = values[static_cast<size_t>(it->second)];
        }
        if (sizes[t] == x.sizes().vec() || !overlapping_dims(x.sizes(), x.strides()).empty()) continue;
        for (size_t d : overlapping_dims(sizes[t], strides_at(x, sizes[t]))) {
          auto it = symbol_of.find({t, static_cast<int64_t>(d)});
          if (it != symbol_of.end()) pin(sym::Expr::symbol(it->second));
        }
      }
      if (pinned.size() == pinned_before) break;
    }
    EMBER_INTERNAL_ASSERT(!env || env->check(values)) << "the chosen sizes break a guard";
    std::vector<Tensor> inputs;
    for (size_t t = 0; t < calls.inputs.size(); ++t) {
      const Tensor& x = calls.inputs[t];
      k.varied = k.varied || sizes[t] != x.sizes().vec();
      inputs.push_back(sizes[t] == x.sizes().vec() ? clones({x}).at(0) : regenerate(x, sizes[t], rng));
    }
    k.at.push_back(std::move(inputs));
  }
  if (!k.varied && k.kept.empty()) k.kept = "every symbol is specialized, or kept by a guard or the layout";
}

/// Whether eager CUDA runs case `k` at its sizes (as test_cuda_compiled_conformance asks: a
/// case it does not run says why in test_cuda_conformance).
bool runs_eagerly_on_cuda(const DynCase& k) {
  try {
    ops::call(*k.op, TensorSlots::with(k.stack, clones(k.at.at(0))));
    cuda::synchronize();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

/// What each call of one size gave, per case: the outputs and the inputs afterwards, or the
/// error that stopped it.
struct SizeResults {
  std::vector<std::vector<Tensor>> outputs, inputs_after;
  std::vector<std::string> errors;  // per case ("" when it ran); eager only
  std::string error;                // the compiled call as a whole
  bool internal = false;            // that error was an InternalError
};

/// Eager Ember at `inputs`, each case on its own, drawing random numbers in the order the
/// compiled function does.
SizeResults run_eager(const CaseCalls& calls, const std::vector<Tensor>& inputs) {
  SizeResults r;
  const std::vector<Tensor> ts = clones(inputs);
  manual_seed(kSeed);
  for (const DynCase& k : calls.cases) {
    const Stack args = TensorSlots::with(k.stack, ts, k.first);
    std::vector<Tensor> outs;
    std::string error;
    try {
      outs = *result_tensors(ops::call(*k.op, args));
    } catch (const Error& e) {
      error = e.what();
    }
    r.outputs.push_back(std::move(outs));
    r.inputs_after.push_back(TensorSlots(args).tensors);
    r.errors.push_back(std::move(error));
  }
  return r;
}

/// The compiled function at `inputs` (copies, given to `prepare` first): its flat outputs
/// split into cases.
template <typename Compiled, typename Prepare>
SizeResults run_compiled(Compiled& fn, const CaseCalls& calls, const std::vector<Tensor>& inputs, Prepare prepare) {
  SizeResults r;
  const std::vector<Tensor> ts = clones(inputs);
  prepare(ts);
  try {
    manual_seed(kSeed);
    const std::vector<Tensor> outs = fn(ts);
    size_t o = 0;
    for (size_t k = 0; k < calls.cases.size(); ++k) {
      const auto from = outs.begin() + static_cast<std::ptrdiff_t>(o);
      r.outputs.emplace_back(from, from + static_cast<std::ptrdiff_t>(calls.out_counts.at(k)));
      o += calls.out_counts[k];
      const auto in = ts.begin() + static_cast<std::ptrdiff_t>(calls.cases[k].first);
      r.inputs_after.emplace_back(in, in + static_cast<std::ptrdiff_t>(calls.cases[k].num_inputs));
    }
    if (o != outs.size()) r.error = std::to_string(outs.size()) + " outputs, the cases make " + std::to_string(o);
  } catch (const InternalError& e) {
    r.error = std::string("internal error: ") + e.what();
    r.internal = true;
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

/// What the replay of a case found.
struct CaseOutcome {
  std::string failure;       // empty when the compiled function equals eager at every size
  bool one_compile = false;  // the three calls ran one compiled entry
};

/// The sizes of `inputs` as text: "[3, 4], [5]".
std::string sizes_text(const std::vector<Tensor>& inputs, size_t first, size_t n) {
  std::string out;
  for (size_t i = first; i < first + n; ++i) out += (out.empty() ? "" : ", ") + shape_str(inputs[i].sizes());
  return out;
}

/// Case k at size `which` (0: the case's): the compiled results against eager's.
void check_at(const CaseCalls& calls, size_t k, const std::vector<Tensor>& inputs, const SizeResults& eager,
              const SizeResults& compiled) {
  const DynCase& c = calls.cases[k];
  const std::string at = "at sizes " + sizes_text(inputs, c.first, c.num_inputs) + ": ";
  if (!eager.errors[k].empty()) {
    if (compiled.error.empty())
      throw Mismatch{at + "eager raises (" + eager.errors[k] + "), the compiled function returned normally"};
    if (compiled.internal) throw Mismatch{at + "eager raises a user error, compiled an " + compiled.error};
    return;
  }
  if (!compiled.error.empty()) throw Mismatch{at + "compiled raised: " + compiled.error};
  const std::vector<Tensor>& got = compiled.outputs.at(k);
  const std::vector<Tensor>& want = eager.outputs[k];
  if (got.size() != want.size())
    throw Mismatch{at + std::to_string(got.size()) + " outputs, eager " + std::to_string(want.size())};
  const bool values = c.c->value("values", true);
  for (size_t i = 0; i < got.size(); ++i)
    check_same(got[i], want[i], at + "output " + std::to_string(i), values, /*strides=*/true);
  for (size_t i = 0; i < c.num_inputs; ++i)
    check_same(compiled.inputs_after.at(k).at(i), eager.inputs_after[k].at(i),
               at + "input " + std::to_string(i) + " after the call", true, /*strides=*/true);
}

/// The top of the range each case's symbolic dims are marked with: one value per case, so
/// that duck shaping never makes two cases share a symbol (each case's sizes vary as when
/// it is compiled alone).
constexpr int64_t kRangeTop = int64_t{1} << 40;
/// How many ops' cases one compiled function holds (each C++ compile costs a fixed part
/// for the headers, whatever the graph).
constexpr size_t kOpsPerFunction = 16;

/// Compiles `cases` (each planned by plan_sizes) as one function with `.dynamic = true`
/// and the inductor backend and calls it at the case's sizes and at the two others. When
/// the function fails as a whole at some size (a compiled error, or eager rejecting a
/// case there), or recompiles though every case's graph compiles over its symbols, the
/// cases are rerun each op alone, then each case alone, so each failure names its case.
std::vector<CaseOutcome> replay(const std::vector<DynCase>& cases) {
  CaseCalls calls{cases, {}, {}};
  std::vector<std::vector<Tensor>> sizes(1 + kOtherSizes);
  for (DynCase& k : calls.cases) {
    k.first = sizes[0].size();
    for (size_t j = 0; j < sizes.size(); ++j) sizes[j].insert(sizes[j].end(), k.at[j].begin(), k.at[j].end());
  }
  calls.inputs = sizes[0];
  auto fn = compile([&](const std::vector<Tensor>& ts) { return calls(ts); },
                    {.backend = "inductor", .name = "dynamic_conformance", .arg_names = {"ts"}, .dynamic = true});
  std::vector<SizeResults> eager, compiled;
  bool whole_failed = false;
  for (size_t j = 0; j < sizes.size(); ++j) {
    eager.push_back(run_eager(calls, sizes[j]));
    compiled.push_back(run_compiled(fn, calls, sizes[j], [&](const std::vector<Tensor>& ts) {
      if (j > 0) return;  // marks are read when the function is traced
      for (size_t q = 0; q < calls.cases.size(); ++q)
        for (const auto& [input, dim] : calls.cases[q].symbolic_dims)
          mark_dynamic(ts.at(calls.cases[q].first + input), dim, std::nullopt, kRangeTop - static_cast<int64_t>(q));
    }));
    whole_failed = whole_failed || !compiled.back().error.empty();
  }
  const bool symbolic = std::all_of(cases.begin(), cases.end(), [](const DynCase& k) { return k.not_symbolic.empty(); });
  std::vector<CaseOutcome> out;
  if ((whole_failed || (symbolic && fn.cache_size() > 1)) && cases.size() > 1) {
    const bool one_op = std::all_of(cases.begin(), cases.end(), [&](const DynCase& k) { return k.op == cases[0].op; });
    for (size_t k = 0; k < cases.size();) {
      size_t end = k + 1;
      while (!one_op && end < cases.size() && cases[end].op == cases[k].op) ++end;
      for (const CaseOutcome& o : replay({cases.begin() + static_cast<std::ptrdiff_t>(k),
                                          cases.begin() + static_cast<std::ptrdiff_t>(end)}))
        out.push_back(o);
      k = end;
    }
    return out;
  }
  for (size_t k = 0; k < calls.cases.size(); ++k) {
    CaseOutcome o;
    o.one_compile = fn.cache_size() == 1;
    try {
      for (size_t j = 0; j < sizes.size(); ++j) check_at(calls, k, sizes[j], eager[j], compiled[j]);
    } catch (const Mismatch& m) {
      o.failure = m.what;
    }
    out.push_back(std::move(o));
  }
  return out;
}

TEST(Conformance, EveryOpCompiledDynamicEqualsEagerAtOtherSizes) {
  register_builtin_backends();
  const Device device = case_device();
  if (device.is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  Tally tally(device.is_cuda() ? "cuda dynamic" : "dynamic");
  const bool stderr_was = logging::set_stderr_enabled(false);
  const auto start = std::chrono::steady_clock::now();
  const int64_t compiles_before = inductor::compiler_invocations();
  // On CUDA the cases made for it (tests/ops/cases_cuda: the ops and dtypes PyTorch's CUDA runs).
  const char* dir = device.is_cuda() ? EMBER_CUDA_CASES_DIR : EMBER_CASES_DIR;
  const std::vector<CaseFile> files = load_case_files(dir);  // the cases point into it
  ASSERT_FALSE(files.empty()) << "no case files in " << dir;
  int64_t varied = 0, one_compile = 0, specialized = 0, left_out = 0;
  std::map<std::string, int64_t> kept;
  // Two lists: the cases the inductor compiles over their symbols, and the others.
  std::vector<DynCase> groups[2];
  for (const auto& [name, entries] : cases_by_op(files)) {
    const ops::OpDef* op = ops::registry().find(name);
    if (!op) continue;  // the eager test reports it
    for (const auto& [f, c] : entries) {
      if (!runs_eagerly(*f, *op, *c)) continue;
      DynCase k{op, f, c, build_stack(*f, *op, *c, device)};
      k.at.push_back(TensorSlots(k.stack).tensors);
      k.num_inputs = k.at[0].size();
      if (device.is_cuda() && (k.num_inputs == 0 || !runs_eagerly_on_cuda(k))) {
        ++left_out;  // a CPU graph, or an op or dtype without a CUDA kernel
        continue;
      }
      try {
        plan_sizes(k);
      } catch (const std::exception& e) {
        tally.run(name, *c, "dynamic ", [&] { throw Mismatch{std::string("tracing it: ") + e.what()}; });
        continue;
      }
      groups[k.not_symbolic.empty() ? 0 : 1].push_back(std::move(k));
    }
  }
  // The cases of kOpsPerFunction ops per compiled function: one C++ compile per size
  // serves them all.
  for (const std::vector<DynCase>& group : groups) {
    for (size_t first = 0; first < group.size();) {
      size_t end = first, ops_in = 0;
      for (; end < group.size(); ++end) {
        if (end == first || group[end].op != group[end - 1].op) ++ops_in;
        if (ops_in > kOpsPerFunction) break;
      }
      const std::vector<DynCase> cases(group.begin() + static_cast<std::ptrdiff_t>(first),
                                       group.begin() + static_cast<std::ptrdiff_t>(end));
      first = end;
      const std::vector<CaseOutcome> outcomes = replay(cases);
      for (size_t k = 0; k < outcomes.size(); ++k) {
        const CaseOutcome& o = outcomes[k];
        tally.run(cases[k].op->name, *cases[k].c, "dynamic ", [&] {
          if (!o.failure.empty()) throw Mismatch{o.failure};
          if (cases[k].varied && cases[k].not_symbolic.empty() && !o.one_compile)
            throw Mismatch{"recompiled at the other sizes, though its graph compiles over its symbols"};
        });
        if (!cases[k].varied) {
          ++kept[cases[k].kept];
        } else {
          ++varied;
          one_compile += o.one_compile;
          specialized += !cases[k].not_symbolic.empty();
        }
      }
    }
  }
  logging::set_stderr_enabled(stderr_was);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << (device.is_cuda() ? "cuda " : "")
            << "dynamic conformance: " << inductor::compiler_invocations() - compiles_before << " C++ compiles, "
            << seconds << " s; " << varied << " cases ran at other sizes, " << one_compile
            << " of them all three in one compile (" << specialized
            << " compiled for fixed sizes: the inductor specializes their graphs)";
  for (const auto& [why, n] : kept) std::cout << "; " << n << " kept their sizes (" << why << ")";
  if (left_out) std::cout << "; " << left_out << " left out (no tensor input, or eager CUDA does not run them)";
  std::cout << std::endl;
  tally.report();
}

}  // namespace
}  // namespace ember::conformance
