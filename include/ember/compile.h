// ember/compile.h — ember::compile(fn): capture of ordinary C++ tensor code into graphs,
// with guards, a cache of compiled entries, graph breaks, explain() and backends by name.
// The counterpart of torch.compile / TorchDynamo; semantics in DESIGN.md section 3 and
// docs/notes/capture.md.
//
//   auto f = ember::compile([](const Tensor& x, const Tensor& y) { return (x * 2 + y).relu(); });
//   Tensor out = f(a, b);   // first call traces and compiles; later calls replay
//
// Arguments may be tensors, numbers (int64_t, int, double, bool), std::vectors of tensors,
// int64_t or double, and nn::Module references (their parameters and buffers become graph inputs). Results may be
// a Tensor, std::vector<Tensor>, a std::tuple/std::pair of those, a number, or void.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ember/graph.h"
#include "ember/nn/module.h"

namespace ember {

// --- backends -----------------------------------------------------------------

/// What a backend returns: runs the graph on real inputs (one per Graph::inputs()).
using CompiledGraph = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;
/// A backend: compiles a captured graph, given real example inputs (the first call's).
/// It may rewrite the graph (it owns it until it returns). The guide's `toy_compiler` is
///   [](Graph& g, const std::vector<Tensor>&) { std::cout << g; return eager_backend(g); }
using Backend = std::function<CompiledGraph(Graph& graph, const std::vector<Tensor>& example_inputs)>;

/// `backend`, declared to take graphs whose sizes are symbols (s0, s1, … in the graph's
/// geometry, with the graph header's ranges: what eager_backend runs). compile() makes
/// sizes dynamic only for such backends (mark_dynamic, CompileOptions::dynamic, automatic
/// dynamic shapes), as for the registered "eager", "aot_eager" and "inductor"; any other
/// custom backend gets graphs of fixed sizes, guarded per shape. PyTorch hands every
/// backend symbolic graphs; Ember asks a custom backend to say that it reads sizes that
/// are not integers. The CompileProfiler's backend is declared so.
///   compile(fn, {.custom_backend = with_symbolic_sizes(my_backend)})
Backend with_symbolic_sizes(Backend backend);
/// Whether `backend` was declared with with_symbolic_sizes.
bool takes_symbolic_sizes(const Backend& backend);

/// Makes `backend` available to compile() under `name`; raises if the name is taken.
void register_backend(const std::string& name, Backend backend);
/// The backend registered as `name`; raises an Error listing the known names otherwise.
Backend lookup_backend(const std::string& name);
/// Names of the registered backends, sorted.
std::vector<std::string> list_backends();
/// The "eager" backend: runs the graph with the interpreter (run_graph).
CompiledGraph eager_backend(Graph& graph);
/// Registers the backends of the libraries above capture ("inductor", "inductor_inner",
/// "aot_eager") and installs the TORCHDYNAMO_REPRO_AFTER wrapper of the debug library;
/// safe to call any number of times from any thread. compile() calls it: that call, made
/// from the user's code, is what makes a static link keep those libraries' registrations
/// (nothing in capture may name a later library). Call it before lookup_backend/
/// list_backends in a program that never calls compile(). Defined in ember_debug, the
/// library above all others.
void register_builtin_backends();

/// A backend raised while compiling a graph (torch._dynamo.exc.BackendCompilerFailed).
/// With config().dynamo.suppress_errors the function runs eagerly instead, with a warning.
class BackendCompilerFailed : public Error {
 public:
  BackendCompilerFailed(std::string backend, const Error& cause);
  const std::string& backend() const { return backend_; }

 private:
  std::string backend_;
};

// --- options ------------------------------------------------------------------

struct CompileOptions {
  /// A registered backend's name; ignored when `custom_backend` is set. The default is
  /// "inductor", as torch.compile's: the fusing code generator. "eager" runs captured
  /// graphs with the interpreter (for checking capture alone), "aot_eager" adds the AOT stage.
  std::string backend = "inductor";
  Backend custom_backend;
  /// Raise at the first graph break instead of splitting the function.
  bool fullgraph = false;
  /// The function's name in logs, explain() and records; default "fn_<file>_<line>".
  std::string name;
  /// Names of the arguments for guards and messages (default "arg0", "arg1", …).
  std::vector<std::string> arg_names;
  /// Dynamic shapes (torch.compile's `dynamic`; Note [dynamic shapes]). nullopt
  /// (automatic): the first compile is static, and a recompile caused only by changed
  /// sizes makes those sizes symbolic; true: every size of every tensor argument is
  /// symbolic from the first compile (but 0 and 1, and dims marked static); false: every
  /// size is static, as are dims passed to mark_dynamic. "eager" and "aot_eager"
  /// (inference graphs) run one graph for many sizes; "inductor" compiles one for many
  /// sizes when the graph needs no gradients and holds only pointwise ops, the reductions,
  /// softmax and layer norm it lowers, views and mm/addmm/bmm, and otherwise fixes each
  /// entry to its sizes; custom backends always get fixed sizes.
  std::optional<bool> dynamic;
  /// torch.compile's `mode`: "default", or "reduce-overhead" — the inductor then replays
  /// each graph compiled for a CUDA device (static sizes, every step on the device) as a
  /// CUDA graph after a warm-up call, cutting the host's per-call launch cost. Its outputs
  /// are then buffers the next call of the same graph overwrites: clone an output kept
  /// across calls. Graphs it cannot capture run as in "default", saying why on
  /// TORCH_LOGS=cudagraphs. "max-autotune" also times more launch configurations of each
  /// generated CUDA kernel at its first call ("default" times a few for row kernels);
  /// "max-autotune-no-cudagraphs" does that without CUDA graphs. Note [inductor], "CUDA
  /// graphs" and "Launch tuning".
  std::string mode = "default";
};

// --- dynamic shapes ----------------------------------------------------------------
/// Makes dim `dim` of `t` symbolic when a compiled function is next traced with `t` as an
/// argument (torch._dynamo.mark_dynamic), with the values it may take in [min, max].
/// Raises for a dim `t` does not have, min > max, or a size outside [min, max].
void mark_dynamic(const Tensor& t, int64_t dim, std::optional<int64_t> min = std::nullopt,
                  std::optional<int64_t> max = std::nullopt, Loc loc = Loc::current());
/// Keeps dim `dim` of `t` static even under dynamic=true or automatic dynamic
/// (torch._dynamo.mark_static).
void mark_static(const Tensor& t, int64_t dim, Loc loc = Loc::current());

// --- graph breaks ----------------------------------------------------------------

/// Ends the current graph here, as a data-dependent point would (torch._dynamo.graph_break()).
void graph_break(Loc loc = Loc::current());

/// Declares outside state that a traced function depends on: the trace is guarded on the
/// value `variable` has now, and retraced when it differs. `variable` must outlive the
/// compiled function. Outside a trace it does nothing.
void guard_on(const std::string& name, const int64_t& variable, Loc loc = Loc::current());
void guard_on(const std::string& name, const double& variable, Loc loc = Loc::current());
void guard_on(const std::string& name, const bool& variable, Loc loc = Loc::current());
void guard_on(const std::string& name, const std::string& variable, Loc loc = Loc::current());

/// Whether the calling thread is tracing a compiled function right now.
bool is_compiling();

namespace optim {
class Optimizer;
}

namespace capture {

/// One argument of a compiled call, type-erased. An optimizer argument is guarded by its
/// identity and its parameters' (Note [outside state]).
using CallArg = std::variant<Tensor, std::vector<Tensor>, int64_t, double, bool, std::vector<int64_t>,
                             std::vector<double>, nn::Module*, optim::Optimizer*>;
/// Runs the user function on (possibly fake) arguments and flattens its result.
using Invoker = std::function<std::vector<IValue>(std::vector<CallArg>& args)>;

class CompiledFunctionState;

/// The type-erased compiled function (shared by copies of a Compiled<…>).
/// `invoke` runs the user function; kept so that replay() can re-run a recorded frame.
/// `param_kinds` holds each parameter's CallArg alternative (its variant index), so that
/// replay() can refuse a record whose arguments the function does not take.
std::shared_ptr<CompiledFunctionState> make_state(CompileOptions options, const std::source_location& where,
                                                  Invoker invoke, std::vector<size_t> param_kinds);
std::vector<IValue> call(CompiledFunctionState& state, std::vector<CallArg> args);
/// Drops every cache entry (torch._dynamo.reset() for one function).
void reset(CompiledFunctionState& state);
size_t cache_size(const CompiledFunctionState& state);

// Argument and result conversion between C++ types and CallArg / IValue.
template <typename A>
CallArg to_call_arg(A&& a) {
  using T = std::remove_cvref_t<A>;
  if constexpr (std::is_same_v<T, Tensor> || std::is_same_v<T, std::vector<Tensor>> ||
                std::is_same_v<T, std::vector<int64_t>> || std::is_same_v<T, std::vector<double>>) {
    return CallArg(a);
  } else if constexpr (std::is_same_v<T, bool>) {
    return CallArg(static_cast<bool>(a));
  } else if constexpr (std::is_integral_v<T>) {
    return CallArg(static_cast<int64_t>(a));
  } else if constexpr (std::is_floating_point_v<T>) {
    return CallArg(static_cast<double>(a));
  } else if constexpr (std::is_base_of_v<nn::Module, T>) {
    return CallArg(static_cast<nn::Module*>(const_cast<T*>(&a)));
  } else if constexpr (std::is_base_of_v<optim::Optimizer, T>) {
    return CallArg(static_cast<optim::Optimizer*>(const_cast<T*>(&a)));
  } else {
    static_assert(sizeof(T) == 0,
                  "ember::compile: arguments must be Tensor, a number (int64_t, int, double, bool), a std::vector "
                  "of Tensor, int64_t or double, an nn::Module or an optim::Optimizer");
  }
}

/// The CallArg alternative a parameter of type P is passed as (from_call_arg's std::get).
template <typename P>
constexpr size_t call_arg_index() {
  using T = std::remove_cvref_t<P>;
  if constexpr (std::is_same_v<T, Tensor>)
    return 0;
  else if constexpr (std::is_same_v<T, std::vector<Tensor>>)
    return 1;
  else if constexpr (std::is_same_v<T, bool>)
    return 4;
  else if constexpr (std::is_integral_v<T>)
    return 2;
  else if constexpr (std::is_floating_point_v<T>)
    return 3;
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
    return 5;
  else if constexpr (std::is_same_v<T, std::vector<double>>)
    return 6;
  else if constexpr (std::is_base_of_v<nn::Module, T>)
    return 7;
  else
    return 8;
}

template <typename P>
decltype(auto) from_call_arg(CallArg& a) {
  using T = std::remove_cvref_t<P>;
  if constexpr (std::is_same_v<T, Tensor> || std::is_same_v<T, std::vector<Tensor>> ||
                std::is_same_v<T, std::vector<int64_t>> || std::is_same_v<T, std::vector<double>>) {
    return static_cast<T&>(std::get<T>(a));
  } else if constexpr (std::is_same_v<T, bool>) {
    return std::get<bool>(a);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(std::get<int64_t>(a));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(std::get<double>(a));
  } else if constexpr (std::is_base_of_v<nn::Module, T>) {
    return static_cast<T&>(*std::get<nn::Module*>(a));
  } else if constexpr (std::is_base_of_v<optim::Optimizer, T>) {
    return static_cast<T&>(*std::get<optim::Optimizer*>(a));
  }
}

template <typename R>
void flatten_result(const R& r, std::vector<IValue>& out) {
  if constexpr (std::is_same_v<R, Tensor> || std::is_same_v<R, std::vector<Tensor>>) {
    out.emplace_back(r);
  } else if constexpr (std::is_same_v<R, bool> || std::is_same_v<R, double>) {
    out.emplace_back(r);
  } else if constexpr (std::is_integral_v<R>) {
    out.emplace_back(static_cast<int64_t>(r));
  } else if constexpr (std::is_floating_point_v<R>) {
    out.emplace_back(static_cast<double>(r));
  } else {
    std::apply([&](const auto&... e) { (flatten_result(e, out), ...); }, r);
  }
}

template <typename R>
R unflatten_result(std::vector<IValue>& values, size_t& pos) {
  if constexpr (std::is_same_v<R, Tensor>) {
    return std::move(values.at(pos++).to_tensor());
  } else if constexpr (std::is_same_v<R, std::vector<Tensor>>) {
    return values.at(pos++).to_tensor_list();
  } else if constexpr (std::is_same_v<R, bool>) {
    return values.at(pos++).to_bool();
  } else if constexpr (std::is_integral_v<R>) {
    return static_cast<R>(values.at(pos++).to_int());
  } else if constexpr (std::is_floating_point_v<R>) {
    return static_cast<R>(values.at(pos++).to_double());
  } else {
    return std::apply([&](auto... proto) { return R{unflatten_result<decltype(proto)>(values, pos)...}; }, R{});
  }
}

template <typename F>
struct Signature : Signature<decltype(&F::operator())> {};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...) const> {
  using Result = R;
  using Args = std::tuple<A...>;
};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...)> {
  using Result = R;
  using Args = std::tuple<A...>;
};
template <typename R, typename... A>
struct Signature<R (*)(A...)> {
  using Result = R;
  using Args = std::tuple<A...>;
};

}  // namespace capture

/// A compiled function: call it like the original. Copies share one cache.
template <typename F, typename Sig = capture::Signature<std::decay_t<F>>, typename Args = typename Sig::Args>
class Compiled;

template <typename F, typename Sig, typename... A>
class Compiled<F, Sig, std::tuple<A...>> {
 public:
  using Result = typename Sig::Result;

  Compiled(F fn, CompileOptions options, const std::source_location& where)
      : state_((register_builtin_backends(),
                capture::make_state(std::move(options), where,
                                    [fn = std::make_shared<F>(std::move(fn))](std::vector<capture::CallArg>& in) {
                                      std::vector<IValue> out;
                                      invoke_unpacked(*fn, in, out, std::index_sequence_for<A...>{});
                                      return out;
                                    },
                                    {capture::call_arg_index<A>()...}))) {}

  Result operator()(A... args) const {
    std::vector<IValue> flat = capture::call(*state_, {capture::to_call_arg(args)...});
    if constexpr (!std::is_void_v<Result>) {
      size_t pos = 0;
      return capture::unflatten_result<std::remove_cvref_t<Result>>(flat, pos);
    }
  }

  /// Drops every compiled entry of this function.
  void reset() const { capture::reset(*state_); }
  /// Number of cache entries (one per distinct set of guards seen).
  size_t cache_size() const { return capture::cache_size(*state_); }
  capture::CompiledFunctionState& state() const { return *state_; }

 private:
  template <size_t... I>
  static void invoke_unpacked(F& fn, std::vector<capture::CallArg>& in, std::vector<IValue>& out,
                              std::index_sequence<I...>) {
    if constexpr (std::is_void_v<Result>) {
      fn(capture::from_call_arg<A>(in[I])...);
    } else {
      capture::flatten_result(fn(capture::from_call_arg<A>(in[I])...), out);
    }
  }

  std::shared_ptr<capture::CompiledFunctionState> state_;
};

/// Compiles `fn` (a lambda, function object or function pointer) — torch.compile.
template <typename F>
Compiled<std::decay_t<F>> compile(F&& fn, CompileOptions options = {}, Loc where = Loc::current()) {
  return Compiled<std::decay_t<F>>(std::forward<F>(fn), std::move(options), where);
}

// --- compile_times ----------------------------------------------------------------

/// Time spent compiling, per compiled function and phase (torch._dynamo.utils.
/// compile_times()). Top-level phases: "capture (Step 1)" (tracing, without what it
/// starts), "backend compile (Step 2)", "first run" (the compiled graph's first execution,
/// in the call that compiled it), and, for a training graph, "backward compile (first
/// backward call)" and "first backward run". Parts (`parent` names the phase they are part
/// of): "AOT autograd" (functionalize, decompose, joint graph, partition), "graph passes",
/// "lowering", "scheduling (fusion)", "codegen", "C++ compile", "load" (dlopen and symbol
/// lookup) under a compile; "autotuning (timing runs)" under a run. A phase's parts add up
/// to at most its own time. See docs/diagnostics.md, "compile_times()".
struct CompileTimeRow {
  std::string function;
  std::string phase;
  int64_t count = 0;
  double total_seconds = 0;
  /// The phase this one is a part of ("" for a top-level phase).
  std::string parent;
  /// CPU time: the compiling thread's, plus the C++ compiler processes' it waited for.
  double cpu_seconds = 0;
  double average_seconds() const { return count ? total_seconds / static_cast<double>(count) : 0; }
};
/// Every row, each function's phases in the order they first started.
std::vector<CompileTimeRow> compile_times_rows();
/// The rows as an aligned table, parts indented under their phase, with a "(rest)" line
/// for a phase's time outside its parts (torch._dynamo.utils.compile_times()).
std::string compile_times();
void reset_compile_times();

// --- record and replay --------------------------------------------------------------

/// Re-runs the capture of the frame recorded in `record_path` (written when
/// config().dynamo.replay_record_enabled is set and capture failed) with the recorded
/// inputs and config, raising the same error. The compiled function is found by its
/// name, so replay runs in a program that compiled it; `modules` supplies module
/// arguments, in order, which a record cannot hold.
void replay(const std::string& record_path, const std::vector<nn::Module*>& modules = {});

// --- explain ------------------------------------------------------------------

struct BreakReason {
  std::string reason;
  SourceLoc loc;
};

/// What explain() found: the guide's ExplainOutput.
struct ExplainOutput {
  std::vector<std::shared_ptr<Graph>> graphs;
  size_t graph_count = 0;
  size_t graph_break_count = 0;
  size_t op_count = 0;
  std::vector<BreakReason> break_reasons;
  /// Qualified op names of each graph, in order.
  std::vector<std::vector<std::string>> ops_per_graph;
  /// The guards of the entry the call made (text, one per guard).
  std::vector<std::string> out_guards;
  /// "Dynamo produced 3 graphs with 2 graph breaks and 6 ops.\n Break reasons: …"
  std::string str() const;
};

namespace capture {
ExplainOutput explain_call(const std::string& name, const std::source_location& where, std::vector<CallArg> args,
                           const Invoker& invoke);
}

/// explain(fn)(args…) runs fn once under capture and reports its graphs and breaks.
template <typename F>
auto explain(F&& fn, Loc where = Loc::current()) {
  using Sig = capture::Signature<std::decay_t<F>>;
  return [fn = std::decay_t<F>(std::forward<F>(fn)), where](auto&&... args) -> ExplainOutput {
    std::vector<capture::CallArg> packed{capture::to_call_arg(args)...};
    capture::Invoker invoke = [&fn](std::vector<capture::CallArg>& in) {
      std::vector<IValue> out;
      [&]<typename... A>(std::tuple<A...>*) {
        [&]<size_t... I>(std::index_sequence<I...>) {
          if constexpr (std::is_void_v<typename Sig::Result>) {
            fn(capture::from_call_arg<A>(in[I])...);
          } else {
            capture::flatten_result(fn(capture::from_call_arg<A>(in[I])...), out);
          }
        }(std::index_sequence_for<A...>{});
      }(static_cast<typename Sig::Args*>(nullptr));
      return out;
    };
    return capture::explain_call("", where, std::move(packed), invoke);
  };
}

}  // namespace ember
