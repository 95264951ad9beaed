// capture/tracer.h — records the ops a user function runs on fake tensors into graphs.
//
// Note [fake tensors]: the user function is called with *fake* tensors: TensorImpls with
// real sizes, strides, dtype and device but no memory (TensorImpl::is_fake). The Capture
// dispatch layer sends every op on them here; the op's meta function gives the outputs'
// geometry and the call becomes a graph node. Tensors the function reaches that are not
// fake (module parameters, tensors captured by a lambda, results of earlier segments) are
// lifted to graph inputs. When the function needs a value (item(), a tensor as bool,
// printing, an op whose output shape depends on data, graph_break()), the graph so far is
// *flushed*: compiled, run on the real inputs, and every fake the user code still holds is
// turned into the real tensor in place (same TensorImpl, so the user's handles see it).
// Tracing then continues into a new graph. See docs/notes/capture.md.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "capture/guards.h"
#include "core/fake.h"
#include "ember/compile.h"
#include "ops/registry.h"

namespace ember::capture {

/// The geometry a graph records for `t`.
TensorMeta meta_of(const Tensor& t);
/// A fake tensor of geometry `m` (sizes, strides, offset, dtype, device; no data) on
/// `storage`, or on a new storage without memory of the size a real one would have. It
/// carries no autograd state. The Tracer and the GraphRecorder make their fakes with it.
Tensor new_fake(const TensorMeta& m, std::shared_ptr<Storage> storage);

/// An op call's arguments as a graph records them (`graph`) and as its meta function sees
/// them (`fakes`: every tensor replaced by its fake).
struct BoundArgs {
  std::vector<Arg> graph;
  Stack fakes;
};
/// Binds `args` of a call of `op`: `bind(t)` gives the graph value of tensor argument `t`
/// and the fake that stands for it (tensors in lists too; undefined tensors stay None), and
/// `on_write(t, fake)` is called for each tensor argument the op writes. The Tracer and the
/// GraphRecorder record calls with it.
BoundArgs bind_args(const ops::OpDef& op, const Stack& args,
                    const std::function<std::pair<ValueRef, Tensor>(const Tensor&)>& bind,
                    const std::function<void(const Tensor& arg, const Tensor& fake)>& on_write);

enum class BreakKind {
#define GRAPH_BREAK(name, id, what, hint) name,
#include "capture/graph_breaks.def"
#undef GRAPH_BREAK
};

struct GraphBreak {
  BreakKind kind;
  std::string detail;  // e.g. the op's name
  SourceLoc loc;
  /// "GB0001: Tensor.item() reads a tensor's value"
  std::string reason() const;
  const char* hint() const;
};

/// Where a graph input's value comes from when an entry replays.
struct InputSource {
  enum class Kind { Arg, ArgElement, Bound, Grad };
  Kind kind = Kind::Arg;
  int arg = -1;
  int element = -1;
  /// Kind::Bound: a module tensor or a tensor lifted from outside the arguments; Kind::Grad:
  /// the tensor whose gradient slot holds the input (read again at each replay).
  Tensor bound;
};

/// How a flattened result of the user function is rebuilt from the graph's outputs.
struct OutputSlot {
  enum class Kind { Tensor, TensorList, Constant };
  Kind kind = Kind::Constant;
  std::vector<size_t> outputs;  // indices into the graph's outputs
  IValue constant;
};

/// Compiles one flushed graph for the given real inputs (the owner caches and picks the backend).
using SegmentCompiler = std::function<CompiledGraph(const std::shared_ptr<Graph>& graph, const std::vector<Tensor>& inputs)>;

/// A size of a tensor argument (element `element` of a tensor list, or -1) that a trace
/// makes symbolic, with the values mark_dynamic allows. See Note [dynamic shapes].
struct DynamicDim {
  int arg = 0;
  int element = -1;
  int64_t dim = 0;
  std::optional<int64_t> min;
  std::optional<int64_t> max;
};

struct TraceOptions {
  std::string name;
  bool fullgraph = false;
  std::vector<std::string> arg_names;
  /// Log each break (WARNING, and the graph_breaks artifact): on for a function's first
  /// trace, off when segment mode re-runs it.
  bool report_breaks = false;
  /// Where the function was compiled: the line a break names when no user line is known.
  SourceLoc where;
  /// The sizes traced symbolically (empty: a static trace).
  std::vector<DynamicDim> dynamic;
};

class Tracer {
 public:
  Tracer(TraceOptions options, SegmentCompiler compile);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  /// Runs `invoke` on fakes of `args` under this tracer and returns the real results.
  std::vector<IValue> run(const std::vector<CallArg>& args, const Invoker& invoke);

  // --- called from the dispatch layer and core hooks -----------------------------
  Stack record(const ops::OpDef& op, Stack& args);
  void on_data_access(const Tensor& t, const char* what, const std::source_location& loc);
  void on_graph_break(BreakKind kind, std::string detail, SourceLoc loc);
  /// The user's code read the storage offset of `t` (a fake): the offsets of the arguments
  /// it is a view of become guards.
  void on_offset_read(const Tensor& t);
  void add_user_guard(UserGuard g) { user_guards_.push_back(std::move(g)); }
  /// The function read state outside any graph (core::note_outside_state): it must be
  /// traced again on every call rather than replayed. Keeps the first reason.
  void on_outside_state(const char* what);
  /// The function read `owner.grad()`, which is `grad`: for an owner reached outside the
  /// arguments (a parameter) the slot is guarded and `grad` is lifted as a Kind::Grad
  /// input; any other slot is outside state.
  void on_grad_read(const Tensor& owner, const Tensor& grad);
  /// A module attribute read while tracing (nn::Attribute): guarded by value.
  void on_attribute_read(const std::shared_ptr<const nn::AttributeCell>& cell);
  /// Code that sees only example values (the user's, a composite op's, a meta function not
  /// written over SymInt) read `what` of `t`, a fake with symbolic geometry: the symbols
  /// it read are specialized to their example values (guards).
  void on_symbolic_read(const Tensor& t, core::SymbolicRead what);

  // --- results ------------------------------------------------------------------
  const std::vector<GraphBreak>& breaks() const { return breaks_; }
  /// The graphs flushed so far (those with at least one op), in order.
  const std::vector<std::shared_ptr<Graph>>& graphs() const { return graphs_; }
  /// After a break-free run: the one graph, its compiled form and how to replay it.
  const std::shared_ptr<Graph>& final_graph() const { return final_graph_; }
  const CompiledGraph& final_compiled() const { return final_compiled_; }
  const std::vector<InputSource>& final_sources() const { return final_sources_; }
  const std::vector<OutputSlot>& output_slots() const { return output_slots_; }
  std::vector<UserGuard>& user_guards() { return user_guards_; }
  /// Tensor arguments (argument, element or -1) whose storage offset the code read.
  const std::set<std::pair<int, int>>& offset_reads() const { return offset_reads_; }
  std::vector<AttributeGuard>& attribute_guards() { return attribute_guards_; }
  std::vector<GradGuard>& grad_guards() { return grad_guards_; }
  /// Why the function cannot be replayed (it read state outside the graph), or "".
  const std::string& outside_state() const { return outside_state_; }
  /// How many tensors made during the trace were still held outside the function when it
  /// returned (Note [escaping tensors]); they were made real with the values computed.
  size_t escaped() const { return escaped_; }
  /// The shape environment of a trace with dynamic sizes (null for a static trace), the
  /// source of each of its symbols (by id) and the arguments traced symbolically.
  const std::shared_ptr<core::ShapeEnv>& shape_env() const { return shape_env_; }
  const std::vector<SymbolSource>& symbol_sources() const { return symbol_sources_; }
  const std::vector<DynamicInput>& dynamic_inputs() const { return dynamic_inputs_; }
  /// Whether a segment already ran on real data (so re-running the function eagerly would
  /// repeat its side effects).
  bool ran_segment() const { return ran_segment_; }

  /// The tracer active on this thread, or null.
  static Tracer* current();

 private:
  struct Live {
    std::weak_ptr<TensorImpl> fake;
    ValueRef value;
  };
  /// A tensor's graph value; `object` detects a TensorImpl freed and its address reused.
  struct Known {
    std::weak_ptr<TensorImpl> object;
    ValueRef ref;
  };

  /// A fake of geometry `m` (on `storage`, or a new meta storage). `real`, when given, is
  /// the tensor it stands for: the fake shares its autograd state (requires_grad, grad_fn).
  Tensor make_fake(const TensorMeta& m, std::shared_ptr<Storage> storage, const Tensor* real = nullptr);
  /// Gives the outputs of a recorded op the autograd state eager would give them.
  void set_traced_autograd(const ops::OpDef& op, const Stack& fake_args, std::vector<Tensor>& outs) const;
  /// Turns every fake still held outside the function into a real tensor, as a graph
  /// break does, adding its value to `outputs`; returns those fakes with their output index.
  std::vector<std::pair<std::shared_ptr<TensorImpl>, size_t>> collect_escaped(std::vector<ValueRef>& outputs);
  /// The graph value for a tensor: its node if it is one of this segment's fakes, else it
  /// is lifted to a new input.
  ValueRef value_for(const Tensor& t);
  std::optional<ValueRef> find_value(const Tensor& t) const;
  /// The fake the meta function sees for `t` (itself if fake, else its input's fake).
  Tensor fake_for(const Tensor& t, ValueRef ref) const;
  ValueRef add_input(const Tensor& real, const Tensor& fake, std::string_view name, InputSource source, bool attribute);
  /// Gives `fake`, standing for tensor argument `arg` (element `element` of a list, or
  /// -1), the symbolic sizes options_.dynamic asks for.
  void make_symbolic(Tensor& fake, int arg, int element);
  void start_segment();
  /// Runs the current graph with `outputs` and returns their real values.
  std::vector<Tensor> flush(const std::vector<ValueRef>& outputs);
  static void materialize(TensorImpl& fake, const Tensor& real);
  /// resize_ while tracing: ends the graph and resizes eagerly (Note [resize_]).
  Stack break_for_resize(const ops::OpDef& op, Stack& args, const SourceLoc& loc);

  TraceOptions options_;
  SegmentCompiler compile_;
  Tracer* previous_ = nullptr;

  std::shared_ptr<Graph> graph_;
  std::unordered_map<const TensorImpl*, Known> values_;  // this segment's fakes and lifted tensors
  std::vector<Live> live_;
  std::unordered_map<const TensorImpl*, Tensor> fake_of_input_;
  /// Real tensors an op of this segment writes: reading their data needs a flush first.
  std::unordered_set<const TensorImpl*> dirty_;
  CompiledGraph last_compiled_;
  std::vector<Tensor> input_values_;  // real value of each graph input, in order
  std::vector<Tensor> input_fakes_;   // the fake standing for each
  std::vector<InputSource> input_sources_;
  /// The handles the user function got for its tensor arguments, kept across segments:
  /// resize_ of one is refused (Note [resize_]).
  std::vector<std::weak_ptr<TensorImpl>> argument_handles_;
  std::unordered_map<const TensorImpl*, std::string> module_tensors_;  // real module tensor → qualified name
  std::unordered_map<const nn::Module*, std::string> module_paths_;    // a module argument's modules → "model.ln"
  std::unordered_map<const TensorImpl*, std::string> optimizer_params_;  // an optimizer argument's → "opt.param_0"
  int lifted_count_ = 0;

  std::vector<GraphBreak> breaks_;
  std::vector<std::shared_ptr<Graph>> graphs_;
  std::vector<UserGuard> user_guards_;
  std::set<std::pair<int, int>> offset_reads_;
  SourceLoc last_loc_;  // the user line of the op recorded last
  std::vector<AttributeGuard> attribute_guards_;
  std::unordered_set<const nn::AttributeCell*> attributes_read_;
  std::vector<GradGuard> grad_guards_;
  std::unordered_map<const TensorImpl*, size_t> grad_guard_of_owner_;  // owner → index in grad_guards_
  /// Gradients read from a guarded slot: lifted as Kind::Grad inputs named after the slot.
  std::unordered_map<const TensorImpl*, size_t> slot_of_grad_;  // gradient → index in grad_guards_
  std::string outside_state_;
  size_t escaped_ = 0;
  bool ran_segment_ = false;

  std::shared_ptr<core::ShapeEnv> shape_env_;
  std::vector<SymbolSource> symbol_sources_;
  std::vector<DynamicInput> dynamic_inputs_;

  std::shared_ptr<Graph> final_graph_;
  CompiledGraph final_compiled_;
  std::vector<InputSource> final_sources_;
  std::vector<OutputSlot> output_slots_;
};

/// The function's results from a graph's outputs, as `slots` say.
std::vector<IValue> assemble_results(const std::vector<OutputSlot>& slots, const std::vector<Tensor>& outputs);

/// Installs the Capture dispatch layer and the fake-data hook (idempotent).
void install_capture_hooks();

}  // namespace ember::capture
