// aot/aot.cpp — the AOT stage in order (functionalize → decompose → dead-code elimination)
// and aot_compile, which hands its result to an inner compiler: one inference graph, or,
// when a call would record autograd history, a joint graph partitioned into a forward and
// a backward graph run under one autograd node (joint.h). See Note [aot] (docs/notes/aot.md).
#include "aot/aot.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <unordered_map>

#include "aot/joint.h"
#include "capture/events.h"
#include "capture/repro_hooks.h"
#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "ember/autograd.h"
#include "ember/config.h"
#include "graph/interpreter.h"
#include "graph/text.h"
#include "support/logging.h"

namespace ember::aot {
namespace {

thread_local GraphRole t_role;

/// Whether the guards of `env` (the shape environment `g` was traced over; null for a
/// static graph) admit the sizes of `inputs`. A training graph compiled at a later call
/// than the trace (the first call with its pattern of inputs requiring grad) may have
/// added guards that this call's sizes break: its joint graph was traced at the example
/// sizes. Each symbol's value is read from the input placeholder whose size it was at the
/// trace (the recorded expression, not what it became since: a specialized symbol reads
/// as a constant now), or computed from the ones read (a duck-sized symbol); one that can
/// be neither answers false.
bool guards_admit(const core::ShapeEnv* env, const Graph& g, const std::vector<Tensor>& inputs) {
  if (!env) return true;
  std::vector<int64_t> values(env->num_symbols(), graph::kUnbound);
  size_t i = 0;
  for (const Node* input : g.inputs()) {
    const Tensor& t = inputs.at(i++);
    if (input->meta().empty() || !input->meta()[0].sym || !t.defined()) continue;
    const core::SymInts& sizes = input->meta()[0].sym->sizes;
    for (size_t d = 0; d < sizes.size() && d < static_cast<size_t>(t.dim()); ++d) {
      const core::sym::Expr e = sizes[d].expr();
      if (e.kind() == core::sym::Kind::Symbol && static_cast<size_t>(e.symbol_id()) < values.size())
        values[static_cast<size_t>(e.symbol_id())] = t.size(static_cast<int64_t>(d));
    }
  }
  for (size_t id = 0; id < values.size(); ++id) {
    if (values[id] != graph::kUnbound) continue;
    const core::sym::Expr e = env->simplify(core::sym::Expr::symbol(static_cast<int32_t>(id)));
    for (int32_t other : core::sym::free_symbols(e))
      if (static_cast<size_t>(other) >= values.size() || values[static_cast<size_t>(other)] == graph::kUnbound)
        return false;
    values[id] = core::sym::evaluate(e, values);
  }
  return env->check(values);
}

std::atomic<int> g_aot_ids{0};

/// One captured graph as aot_compile hands it out: the inference graph and one training
/// graph per pattern of inputs that require grad, each compiled when first needed (the
/// capture cache may share one compiled graph between entries guarded on grad mode and
/// requires_grad, so either kind of call can reach it).
class AotFunction {
 public:
  AotFunction(const Graph& g, Backend inner, std::string inner_name, CompileAhead ahead, ForwardPass before_joint)
      : captured_(g.clone()),
        inner_(std::move(inner)),
        inner_name_(std::move(inner_name)),
        ahead_(std::move(ahead)),
        before_joint_(std::move(before_joint)),
        shape_env_(graph_text::shape_env_of(g)),
        initial_(ranges_and_guards()),
        id_(g_aot_ids++) {}

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) {
    const std::optional<std::string> why = graph::why_autograd_records(*captured_, inputs);
    const Compiled compiled = why ? training(inputs, *why) : inference(inputs);
    if (compiled.specialized && !guards_admit(shape_env_, *captured_, inputs)) {
      // The graph was compiled after a joint graph, traced at the example sizes of the
      // call that first needed it, specialized a size this call does not have: the
      // interpreter runs this call. The guards of the entry traced with this graph hold
      // the new ones; another entry sharing the compiled graph (the capture cache shares
      // it between entries that differ in grad mode, requires_grad or the sizes their
      // guards admit) may not, so such a graph checks them at every call.
      capture::warn_interpreted(captured_->name(),
                                "its compiled graph specialized sizes this call does not have (a derivative formula "
                                "read them as integers)");
      return run_graph(*captured_, inputs);
    }
    return compiled.fn(inputs);
  }

  /// A compiled graph and whether the shape environment had gained guards (a
  /// specialization) by the time it was compiled.
  struct Compiled {
    CompiledGraph fn;
    bool specialized = false;
  };

  Compiled inference(const std::vector<Tensor>& examples) {
    std::lock_guard lock(mu_);
    if (!inference_.fn) {
      capture::PhaseTimer timer("AOT autograd", capture::Nesting::OwnTime);
      // Inner compilers may keep a reference to the graph (eager_backend does): it lives
      // as long as this function.
      std::vector<InputWrite> writes;
      prepared_ = lift_input_writes(*prepare_inference_graph(*captured_), &writes);
      if (config().aot.inference_layout_optimization)
        if (std::unique_ptr<Graph> nhwc = layout_optimized_inference_graph(*prepared_)) prepared_ = std::move(nhwc);
      EMBER_LOG_ARTIFACT(aot_graphs) << "aot forward graph " << prepared_->name() << ":\n" << *prepared_;
      // A repro cut here checks the compiled graph against the example inputs, which the
      // graph must not write then.
      GraphRoleScope role({GraphRole::Kind::Inference, id_,
                           config().dynamo.repro_after == "aot" ? std::vector<InputWrite>{} : writes});
      inference_.fn = capture::compile_with_repro(*prepared_, examples, inner_, inner_name_, "aot");
      if (!writes.empty()) inference_.fn = write_back(inference_.fn, std::move(writes));
      inference_.specialized = ranges_and_guards() != initial_;
    }
    return inference_;
  }

  /// AOT autograd's epilogue for mutated inputs: `compiled` returns the values written into
  /// the inputs `writes` names as extra outputs; they are copied into those inputs after
  /// the call. The graph read its inputs before any write, so an input sharing memory
  /// with a written one (a view of it, passed separately) would read too early: such a call
  /// runs the captured graph in the interpreter, which writes in order.
  CompiledGraph write_back(CompiledGraph compiled, std::vector<InputWrite> writes) {
    const size_t results = writes.front().output;
    std::shared_ptr<Graph> captured = captured_;
    return [compiled = std::move(compiled), writes = std::move(writes), results,
            captured](const std::vector<Tensor>& inputs) {
      if (written_input_shares_memory(inputs, writes)) {
        capture::warn_interpreted(captured->name(), "a graph input it writes shares memory with another input");
        return run_graph(*captured, inputs);
      }
      std::vector<Tensor> outs = compiled(inputs);
      NoGradGuard no_grad;  // the writes were recorded where autograd records nothing (why_autograd_records)
      for (const InputWrite& w : writes) {
        Tensor dst = inputs[w.input];
        const Tensor& value = outs[w.output];
        // The compiler may have written the value into the input already (GraphRole's
        // input_writes); the write still counts for autograd's version checks.
        if (value.storage() == dst.storage() && value.storage_offset() == dst.storage_offset() &&
            value.strides() == dst.strides() && value.sizes() == dst.sizes()) {
          dst.storage()->bump_version();
          continue;
        }
        dst.copy_(value);
      }
      outs.resize(results);
      return outs;
    };
  }

  static bool written_input_shares_memory(const std::vector<Tensor>& inputs, const std::vector<InputWrite>& writes) {
    std::unordered_map<const Storage*, size_t> uses;
    for (const Tensor& t : inputs)
      if (t.defined()) ++uses[t.storage().get()];
    for (const InputWrite& w : writes)
      if (uses[inputs[w.input].storage().get()] > 1) return true;
    return false;
  }

  /// The training graph for `examples`' pattern of inputs requiring grad, compiled now if
  /// no call needed it before (`compiled_now` then set). A graph traced over size symbols
  /// gets a joint graph over the same symbols (Note [aot], "Dynamic shapes"): the guards
  /// its formulas add go into the trace's shape environment, so the entry checks them.
  Compiled training(const std::vector<Tensor>& examples, const std::string& why) {
    std::vector<bool> mask;
    for (const Tensor& t : examples) mask.push_back(t.defined() && t.requires_grad());
    std::lock_guard lock(mu_);
    auto it = training_.find(mask);
    if (it != training_.end()) return it->second;
    capture::PhaseTimer timer("AOT autograd", capture::Nesting::OwnTime);
    CompiledGraph fn;
    // A graph with data-dependent sizes (unbacked symbols) traces its joint graph over them
    // as over input symbols: the forward reads each from the output of the op computing
    // it, the backward from the size of a saved value or tangent that has it (Note
    // [dynamic shapes], "Data-dependent sizes").
    try {
      std::unique_ptr<Graph> prepared = prepare_inference_graph(*captured_, /*for_joint=*/true);
      if (before_joint_)
        if (std::unique_ptr<Graph> rewritten = before_joint_(*prepared, mask)) prepared = std::move(rewritten);
      JointGraph joint = make_joint_graph(*prepared, mask);
      if (config().aot.layout_optimization) joint = make_layout_optimized_joint_graph(*prepared, mask, std::move(joint));
      auto partition = std::make_shared<Partition>(partition_joint_graph(joint, configured_partitioner()));
      fn = make_training_function(partition, joint, examples, inner_, inner_name_, id_, ahead_);
    } catch (const Error& e) {
      // What AOT autograd cannot trace yet runs in the interpreter, where autograd records
      // it as eager would.
      EMBER_LOG(aot, INFO) << "aot: graph " << captured_->name() << " is not compiled for training: " << e.what();
      fn = interpreted(why + "; AOT autograd cannot compile it for training: " + e.message());
    }
    return training_.emplace(mask, Compiled{fn, ranges_and_guards() != initial_}).first->second;
  }

 private:
  /// The captured graph run by the interpreter, saying `reason` once (warn_interpreted).
  CompiledGraph interpreted(std::string reason) const {
    return [g = captured_, reason = std::move(reason)](const std::vector<Tensor>& inputs) {
      capture::warn_interpreted(g->name(), reason);
      return run_graph(*g, inputs);
    };
  }

  std::shared_ptr<Graph> captured_;
  Backend inner_;
  std::string inner_name_;
  CompileAhead ahead_;
  ForwardPass before_joint_;
  std::mutex mu_;
  std::shared_ptr<Graph> prepared_;
  Compiled inference_;
  std::map<std::vector<bool>, Compiled> training_;
  /// The environment the graph was traced over (null when static), kept from the start: a
  /// graph whose symbols were all specialized since has none (graph_text::shape_env_of).
  const core::ShapeEnv* shape_env_;
  /// shape_env_'s ranges and guard count when this function was made (ranges_and_guards).
  std::vector<core::sym::Range> initial_;
  int id_;

  /// Each symbol's range, then the number of guards as a range of its own: what a
  /// specialization changes.
  std::vector<core::sym::Range> ranges_and_guards() const {
    std::vector<core::sym::Range> out;
    if (!shape_env_) return out;
    for (size_t i = 0; i < shape_env_->num_symbols(); ++i) out.push_back(shape_env_->symbol(static_cast<int32_t>(i)).range);
    const auto n = static_cast<int64_t>(shape_env_->guards().size());
    out.push_back({n, n});
    return out;
  }
};

}  // namespace

const GraphRole& current_graph_role() { return t_role; }

GraphRoleScope::GraphRoleScope(GraphRole role) : saved_(t_role) { t_role = role; }
GraphRoleScope::~GraphRoleScope() { t_role = saved_; }

std::unique_ptr<Graph> prepare_inference_graph(const Graph& g, bool for_joint) {
  const auto start = std::chrono::steady_clock::now();
  EMBER_LOG(aot, INFO) << "aot: preparing graph " << g.name() << " (" << g.op_count() << " ops)";
  size_t copies = 0, decomposed = 0;
  std::unique_ptr<Graph> functional = functionalize(g, &copies);
  std::unique_ptr<Graph> out = decompose(*functional, &decomposed, for_joint);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EMBER_LOG(aot, INFO) << "aot: graph " << g.name() << ": " << copies << " copy_ of intermediates removed, "
                       << decomposed << " nodes decomposed, " << out->op_count() << " ops (" << ms << " ms)";
  return out;
}

CompiledGraph aot_compile(Graph& g, const std::vector<Tensor>& example_inputs, const Backend& inner,
                          const std::string& inner_name, CompileAhead ahead, ForwardPass before_joint) {
  auto fn = std::make_shared<AotFunction>(g, inner, inner_name, std::move(ahead), std::move(before_joint));
  // Compile now what the example call needs; the other kind when a call first needs it.
  if (auto why = graph::why_autograd_records(g, example_inputs)) {
    fn->training(example_inputs, *why);
  } else {
    fn->inference(example_inputs);
  }
  return [fn](const std::vector<Tensor>& inputs) { return (*fn)(inputs); };
}

}  // namespace ember::aot
