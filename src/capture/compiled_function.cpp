// capture/compiled_function.cpp — the call path of a compiled function (DESIGN.md section
// 3): guarded cache entries tried without a lock, a miss traced once under the function's
// lock, replay of break-free entries, segment mode for functions with breaks, the
// cache_size_limit, and the fallbacks when capture fails.
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <sstream>
#include <unordered_map>

#include "capture/call_reports.h"
#include "capture/compile_mode.h"
#include "capture/dynamic_shapes.h"
#include "capture/entries.h"
#include "capture/events.h"
#include "capture/guards.h"
#include "capture/record.h"
#include "capture/repro_hooks.h"
#include "capture/tracer.h"
#include "ember/config.h"
#include "graph/text.h"
#include "ops/dispatch.h"
#include "support/compile_debug.h"
#include "support/logging.h"

namespace ember {
namespace capture {
namespace {

struct Entry {
  enum class Mode { Replay, Segments, Eager };
  GuardSet guards;
  Mode mode = Mode::Replay;
  std::shared_ptr<Graph> graph;
  CompiledGraph compiled;
  std::vector<InputSource> sources;
  std::vector<OutputSlot> slots;
  size_t graph_count = 0, break_count = 0;  // what the trace made (entries())
  std::string outside_state;
  Entry* next = nullptr;  // older entries; immutable once published
};

struct Segment {
  std::shared_ptr<Graph> graph;
  CompiledGraph compiled;
};

std::string default_name(const std::source_location& where) {
  std::string file = where.file_name();
  if (auto p = file.find_last_of('/'); p != std::string::npos) file = file.substr(p + 1);
  if (auto p = file.find('.'); p != std::string::npos) file = file.substr(0, p);
  std::string name = "fn_";
  for (char c : file) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name + "_" + std::to_string(where.line());
}

/// The graph text that finds a segment's compiled code: structure, geometry, literals and
/// user lines, but not storage offsets. Compiled code takes any offset (kernels load
/// through each input's data pointer, unaligned), so a minibatch narrowed out of a larger
/// tensor must find the segment compiled for the first one. Offsets print only in a
/// node's geometry, between " : " and " = " (literal arguments come after " = ").
std::string segment_key(const Graph& g) {
  std::string text = to_string(g), out;
  out.reserve(text.size());
  size_t line_start = 0;
  while (line_start < text.size()) {
    size_t eol = text.find('\n', line_start);
    if (eol == std::string::npos) eol = text.size();
    const std::string_view line(text.data() + line_start, eol - line_start);
    const size_t meta_end = std::min(line.find(" = "), line.size());
    size_t pos = 0;
    for (size_t at = line.find(" offset=", pos); at < meta_end; at = line.find(" offset=", pos)) {
      out.append(line.substr(pos, at - pos));
      pos = at + 8;
      while (pos < line.size() && std::isdigit(static_cast<unsigned char>(line[pos]))) ++pos;
    }
    out.append(line.substr(pos));
    out += '\n';
    line_start = eol + 1;
  }
  return out;
}

void log_warning(const std::string& text) { EMBER_LOG(dynamo, WARNING) << text; }

/// The compiled function whose call is running on this thread (graphs it runs report
/// through it, warn_interpreted).
thread_local CompiledFunctionState* t_calling = nullptr;

class CallingScope {
 public:
  explicit CallingScope(CompiledFunctionState* state) : saved_(t_calling) { t_calling = state; }
  ~CallingScope() { t_calling = saved_; }
  CallingScope(const CallingScope&) = delete;
  CallingScope& operator=(const CallingScope&) = delete;

 private:
  CompiledFunctionState* saved_;
};

/// TORCHDYNAMO_DEBUG_FUNCTION: whether the value in force has matched a function yet, and
/// whether its mismatch was reported (once per value).
struct FunctionFilter {
  std::mutex mu;
  std::set<std::string> matched, reported;
};
FunctionFilter& function_filter() {
  static FunctionFilter* f = new FunctionFilter;
  return *f;
}

}  // namespace

class CompiledFunctionState {
 public:
  CompiledFunctionState(CompileOptions options, const std::source_location& where, Invoker invoke,
                        std::vector<size_t> param_kinds)
      : options_(std::move(options)),
        name_(options_.name.empty() ? default_name(where) : options_.name),
        where_(where),
        backend_(backend_with_mode(options_, options_.custom_backend ? options_.custom_backend
                                                                      : lookup_backend(options_.backend))),
        invoke_(std::move(invoke)),
        param_kinds_(std::move(param_kinds)) {
    install_capture_hooks();
  }

  std::vector<IValue> call(std::vector<CallArg>& args) { return call(args, invoke_); }

  std::vector<IValue> call(std::vector<CallArg>& args, const Invoker& invoke) {
    // A compiled function called while another is traced is inlined into that trace.
    if (Tracer::current()) return invoke(args);
    // EMBER_REPLAY (`ember replay`): a recorded frame of this function runs instead, and
    // the program ends.
    if (!config().dynamo.replay_record.empty()) [[unlikely]]
      replay_if_recorded(name_, args);
    // TORCHDYNAMO_DEBUG_FUNCTION: compile only the function of that name.
    const std::string& only = config().dynamo.debug_function;
    if (!only.empty()) {
      if (only != name_) {
        note_filtered_out(only);
        return invoke(args);
      }
      if (!matched_filter_.exchange(true, std::memory_order_relaxed)) {
        FunctionFilter& f = function_filter();
        std::lock_guard lock(f.mu);
        f.matched.insert(only);
      }
    }
    CallingScope calling(this);
    for (Entry* e = head_.load(std::memory_order_acquire); e; e = e->next) {
      if (e->guards.check(args)) return run_entry(*e, args, invoke);
    }
    return miss(args, invoke);
  }

  void reset() {
    std::lock_guard lock(mu_);
    head_.store(nullptr, std::memory_order_release);
    entries_.clear();
    limit_warned_ = false;
    automatic_dims_.clear();
    std::unique_lock seg(segments_mu_);
    segments_.clear();
    segments_per_site_.clear();
    std::lock_guard said(said_mu_);
    said_.clear();
  }

  size_t cache_size() const { return entry_count_.load(std::memory_order_relaxed); }

  /// A snapshot of the cache entries, oldest first (capture::entries).
  std::vector<EntryView> entries() {
    std::lock_guard lock(mu_);
    std::vector<EntryView> out;
    for (const auto& e : entries_) {
      EntryView v;
      v.mode = e->mode == Entry::Mode::Replay     ? EntryView::Mode::Replay
               : e->mode == Entry::Mode::Segments ? EntryView::Mode::Segments
                                                  : EntryView::Mode::Eager;
      v.graph = e->graph;
      v.sources = e->sources;
      v.graph_count = e->graph_count;
      v.break_count = e->break_count;
      v.outside_state = e->outside_state;
      out.push_back(std::move(v));
    }
    return out;
  }
  const std::vector<std::string>& arg_names() const { return options_.arg_names; }

  /// True the first time `what` is asked about for this function (warnings said once).
  bool first_time(const std::string& what) {
    std::lock_guard lock(said_mu_);
    return said_.insert(what).second;
  }
  const std::string& name() const { return name_; }
  const std::source_location& where() const { return where_; }
  const Invoker& invoker() const { return invoke_; }

  /// Traces `args` once more without caching anything (replay of a recorded frame).
  const std::vector<size_t>& param_kinds() const { return param_kinds_; }

  std::vector<IValue> trace_once(std::vector<CallArg>& args) {
    Tracer tracer(trace_options(), segment_compiler());
    return tracer.run(args, invoke_);
  }

 private:
  TraceOptions trace_options() const {
    TraceOptions t{name_, options_.fullgraph, options_.arg_names};
    t.where = SourceLoc(where_);
    return t;
  }

  /// This function runs eagerly because TORCHDYNAMO_DEBUG_FUNCTION names another: said
  /// once per value, while that value has matched no function (a typo compiles nothing).
  void note_filtered_out(const std::string& only) {
    FunctionFilter& f = function_filter();
    std::lock_guard lock(f.mu);
    if (f.matched.contains(only) || !f.reported.insert(only).second) return;
    EMBER_LOG(dynamo, WARNING) << "TORCHDYNAMO_DEBUG_FUNCTION=\"" << only
                               << "\" has matched no compiled function so far: '" << name_ << "' ("
                               << SourceLoc(where_).str()
                               << ") does not match and runs eagerly. A compiled function's name is "
                                  "CompileOptions::name, or fn_<file>_<line> by default.";
  }

  std::vector<IValue> run_entry(const Entry& e, std::vector<CallArg>& args, const Invoker& invoke) {
    switch (e.mode) {
      case Entry::Mode::Replay: {
        std::vector<Tensor> inputs;
        inputs.reserve(e.sources.size());
        for (const InputSource& s : e.sources) {
          switch (s.kind) {
            case InputSource::Kind::Arg: inputs.push_back(std::get<Tensor>(args[s.arg])); break;
            case InputSource::Kind::ArgElement: inputs.push_back(std::get<std::vector<Tensor>>(args[s.arg])[s.element]); break;
            case InputSource::Kind::Bound: inputs.push_back(s.bound); break;
            case InputSource::Kind::Grad: inputs.push_back(grad_slot(s.bound)); break;
          }
        }
        // The graph holds the casts autocast made while tracing (Note [autocast]).
        ops::ExcludeLayerGuard no_autocast(ops::DispatchLayer::Autocast);
        return assemble_results(e.slots, e.compiled(inputs));
      }
      case Entry::Mode::Segments: {
        Tracer tracer(trace_options(), segment_compiler());
        return tracer.run(args, invoke);
      }
      case Entry::Mode::Eager:
        return invoke(args);
    }
    EMBER_INTERNAL_ASSERT(false) << "unknown entry mode";
  }

  std::vector<IValue> miss(std::vector<CallArg>& args, const Invoker& invoke) {
    std::unique_lock lock(mu_);
    // Another caller may have compiled these guards while this one waited.
    for (Entry* e = head_.load(std::memory_order_acquire); e; e = e->next) {
      if (e->guards.check(args)) {
        lock.unlock();
        return run_entry(*e, args, invoke);
      }
    }
    const int64_t limit = config().dynamo.cache_size_limit;
    const bool over_limit = static_cast<int64_t>(entries_.size()) >= limit;
    // Past the limit the function runs eagerly for guards it has no entry for, as PyTorch
    // skips the frame: the warning is said once, and nothing recompiles to log.
    if (over_limit && limit_warned_) {
      if (has_observers()) notify({CompileEvent::Kind::CacheLimit, name_, SourceLoc(where_), "", {}, 0});
      lock.unlock();
      return invoke(args);
    }
    logging::apply_config();
    compile_debug::run_dir();  // TORCH_COMPILE_DEBUG: torchdynamo/debug.log records this compile
    std::vector<std::string> failures;
    std::string hint;
    const bool verbose_log = logging::is_enabled(logging::Artifact::recompiles_verbose);
    if (!entries_.empty() &&
        (logging::is_enabled(logging::Artifact::recompiles) || verbose_log || has_observers() || over_limit)) {
      std::vector<EntryFailures> per_entry;
      for (Entry* e = head_.load(std::memory_order_acquire); e; e = e->next) {
        EntryFailures f{e->guards.first_failure(args).value_or("(passes now)"), {}};
        if (verbose_log) f.all = e->guards.all_failures(args);
        failures.push_back(f.first);
        per_entry.push_back(std::move(f));
      }
      if (Entry* newest = head_.load(std::memory_order_acquire))
        hint = newest->guards.value_change_hint(args).value_or("");
      if (!over_limit) {
        const SourceLoc where(where_);
        EMBER_LOG_ARTIFACT(recompiles) << recompile_report(name_, where, per_entry, hint);
        if (verbose_log)
          EMBER_LOG_ARTIFACT(recompiles_verbose) << recompile_verbose_report(name_, where, per_entry, hint);
      }
    }
    if (over_limit) {
      notify({CompileEvent::Kind::CacheLimit, name_, SourceLoc(where_), "", failures, 0});
      limit_warned_ = true;
      log_warning(cache_limit_warning(name_, SourceLoc(where_), limit, failures.empty() ? "" : failures.front(), hint));
      lock.unlock();
      return invoke(args);
    }

    note_size_changes(args);
    auto entry = std::make_unique<Entry>();
    entry->guards = GuardSet::for_call(args, options_.arg_names);
    TraceOptions topts = trace_options();
    topts.report_breaks = true;
    if (backend_takes_symbolic_sizes(options_)) {
      topts.dynamic = plan_dynamic(args, options_.dynamic, automatic_dims_);
    } else if (!plan_dynamic(args, options_.dynamic, {}).empty() && first_time("static backend marks")) {
      EMBER_LOG(dynamic, INFO) << name_ << ": sizes marked dynamic (mark_dynamic, dynamic=true) stay static: "
                               << (options_.custom_backend ? "a custom backend" : "backend '" + options_.backend + "'")
                               << " compiles code for fixed sizes, so each entry is guarded on its sizes";
    }
    if (!entries_.empty()) notify({CompileEvent::Kind::Recompile, name_, SourceLoc(where_), "", failures, 0});
    Tracer tracer(topts, segment_compiler());
    std::vector<IValue> results;
    EMBER_LOG(dynamo, INFO) << "Step 1: torchdynamo start tracing " << name_ << " " << SourceLoc(where_).str();
    // Capture's own time: the backend compile and the first run it starts are phases of
    // their own (compile_times()).
    auto trace = [&] {
      PhaseTimer timer(name_, "capture (Step 1)", Nesting::OwnTime);
      return tracer.run(args, invoke);
    };
    try {
      results = trace();
    } catch (const BackendCompilerFailed& e) {
      if (config().dynamo.replay_record_enabled) write_record(args, e);
      if (!config().dynamo.suppress_errors) throw;
      log_warning(wont_convert_report(name_, SourceLoc(where_), e));
      entry->mode = Entry::Mode::Eager;
      publish(std::move(entry));
      lock.unlock();
      return invoke(args);
    } catch (const Error& e) {
      if (config().dynamo.replay_record_enabled) write_record(args, e);
      // Under fullgraph, and once a segment ran on real data (re-running would repeat its
      // effects), the error is the user's answer.
      if (options_.fullgraph || tracer.ran_segment()) throw;
      // Otherwise run eagerly. An error eager raises too is the user's (wrong shapes, a bad
      // index): it propagates from the user's line, and capture says nothing. One eager
      // does not raise was capture's: WON'T CONVERT, and these guards stay eager.
      lock.unlock();  // the function may call itself
      std::vector<IValue> eager = invoke(args);
      log_warning(wont_convert_report(name_, SourceLoc(where_), e));
      entry->mode = Entry::Mode::Eager;
      lock.lock();
      bool known = false;  // another caller may have failed on these guards meanwhile
      for (Entry* other = head_.load(std::memory_order_acquire); other && !known; other = other->next)
        known = other->guards.check(args);
      if (!known) publish(std::move(entry));
      return eager;
    }
    for (const auto& [arg, element] : tracer.offset_reads()) entry->guards.guard_storage_offset(arg, element);
    if (tracer.shape_env() && tracer.shape_env()->num_symbols() > 0) {
      entry->guards.set_shape_env(tracer.shape_env(), tracer.symbol_sources(), tracer.dynamic_inputs());
    }
    EMBER_LOG(dynamo, INFO) << "Step 1: torchdynamo done tracing " << name_ << " (" << tracer.graphs().size()
                            << " graph" << (tracer.graphs().size() == 1 ? "" : "s") << ", " << tracer.breaks().size()
                            << " graph break" << (tracer.breaks().size() == 1 ? "" : "s") << ")";
    entry->graph_count = tracer.graphs().size();
    entry->break_count = tracer.breaks().size();
    entry->outside_state = tracer.outside_state();
    for (UserGuard& g : tracer.user_guards()) entry->guards.add_user_guard(std::move(g));
    for (AttributeGuard& g : tracer.attribute_guards()) entry->guards.add_attribute_guard(std::move(g));
    for (GradGuard& g : tracer.grad_guards()) entry->guards.add_grad_guard(std::move(g));
    if (logging::is_enabled(logging::Artifact::guards)) {
      std::string text;
      for (const auto& g : entry->guards.describe()) text += "\n  " + g;
      EMBER_LOG_ARTIFACT(guards) << "GUARDS of " << name_ << ":" << text;
    }
    if (tracer.breaks().empty() && tracer.outside_state().empty() && tracer.escaped() > 0) {
      // Note [escaping tensors]: this trace made tensors that outlive it (a static
      // module's weights, an optimizer's state); its graph computes them, so replaying it
      // would make them again. They are real now: the next call traces again and reads them.
      EMBER_LOG(dynamo, INFO) << name_ << ": " << tracer.escaped()
                              << " tensor(s) made while tracing outlive the call; the next call traces again";
      return results;
    }
    if (!tracer.outside_state().empty()) {
      // Note [outside state]: a replay would not read the state again.
      EMBER_LOG(dynamo, INFO) << name_ << " reads " << tracer.outside_state()
                              << ", which lives outside the graph: it is traced again on every call";
    }
    if (tracer.breaks().empty() && tracer.outside_state().empty()) {
      entry->mode = Entry::Mode::Replay;
      entry->graph = tracer.final_graph();
      entry->compiled = tracer.final_compiled();
      entry->sources = tracer.final_sources();
      entry->slots = tracer.output_slots();
    } else {
      entry->mode = Entry::Mode::Segments;
    }
    publish(std::move(entry));
    return results;
  }

  /// Automatic dynamic shapes (CompileOptions::dynamic unset): when the newest entry
  /// fails only because sizes of tensor arguments changed, those sizes are symbolic in
  /// this and every later trace (unless marked static), as PyTorch's automatic_dynamic_shapes.
  /// Under mu_.
  void note_size_changes(const std::vector<CallArg>& args) {
    if (options_.dynamic.has_value() || entries_.empty()) return;
    const std::vector<SizeChange> changes = head_.load(std::memory_order_acquire)->guards.size_changes(args);
    if (changes.empty()) return;
    if (!backend_takes_symbolic_sizes(options_)) {
      if (first_time("static backend")) {
        const std::string backend = options_.custom_backend ? "a custom backend" : "backend '" + options_.backend + "'";
        EMBER_LOG_ARTIFACT(recompiles) << "automatic dynamic shapes: " << name_ << " recompiles for new sizes, but "
                                       << backend << " compiles code for fixed sizes: its graphs stay static (said once)";
      }
      return;
    }
    std::string made;
    for (const SizeChange& c : changes) {
      const Tensor* t = tensor_at(args, c.arg, c.element);
      if ((t && is_marked_static(*t, c.dim)) || !automatic_dims_.insert(ArgDim{c.arg, c.element, c.dim}).second) continue;
      made += std::string(made.empty() ? "" : ", ") + c.name + ".size(" + std::to_string(c.dim) + ") " +
              std::to_string(c.before) + " -> " + std::to_string(c.after);
    }
    if (!made.empty()) {
      EMBER_LOG_ARTIFACT(recompiles) << "automatic dynamic shapes: " << name_ << " recompiles because only sizes "
                                     << "changed (" << made << "); they are symbolic from this compile on";
    }
  }

  void publish(std::unique_ptr<Entry> entry) {
    entry->next = head_.load(std::memory_order_relaxed);
    head_.store(entry.get(), std::memory_order_release);
    entries_.push_back(std::move(entry));
    entry_count_.store(entries_.size(), std::memory_order_relaxed);
  }

  /// Compiles a flushed graph once per distinct text (structure, geometry but offsets,
  /// literals; segment_key).
  SegmentCompiler segment_compiler() {
    return [this](const std::shared_ptr<Graph>& g, const std::vector<Tensor>& inputs) -> CompiledGraph {
      std::string key = segment_key(*g);
      // Under freezing (Note [freezing]) the compiled graph holds its parameters' values as
      // constants: a graph reading other parameter tensors (a parameter replaced, which
      // the module guard caught) compiles again. The compiled graph holds the tensors it
      // froze, so an address here is never another tensor's while its entry lives.
      if (config().inductor.freezing) {
        const std::vector<Node*> graph_inputs = g->inputs();
        for (size_t i = 0; i < graph_inputs.size() && i < inputs.size(); ++i)
          if (graph_inputs[i]->kind() == NodeKind::Attribute && inputs[i].defined()) {
            std::ostringstream id;
            id << "frozen " << graph_inputs[i]->target() << " " << static_cast<const void*>(inputs[i].impl())
               << "\n";
            key += id.str();
          }
      }
      {
        std::shared_lock read(segments_mu_);
        if (auto it = segments_.find(key); it != segments_.end()) return it->second.compiled;
      }
      std::unique_lock write(segments_mu_);
      if (auto it = segments_.find(key); it != segments_.end()) return it->second.compiled;
      const Node* first_call = nullptr;
      for (const auto& n : g->nodes()) {
        if (n->kind() == NodeKind::Call) {
          first_call = n.get();
          break;
        }
      }
      const std::string site = first_call ? first_call->loc().str() : "";
      const int64_t limit = config().dynamo.cache_size_limit;
      if (static_cast<int64_t>(segments_per_site_[site]) >= limit) {
        if (first_time("segment cache limit")) {
          log_warning("torch._dynamo hit config.cache_size_limit (" + std::to_string(limit) + ") for the graph of '" +
                      name_ + "' starting at " + site + "; new versions of it run eagerly from now on (said once)");
        }
        return eager_backend(*g);
      }
      EMBER_LOG_ARTIFACT(graph_code) << "TRACED GRAPH\n" << to_string(*g);
      EMBER_LOG_ARTIFACT(graph) << "TRACED GRAPH\n===== " << name_ << " =====\n" << graph_text::tabular(*g);
      if (logging::is_enabled(logging::Artifact::graph_sizes)) {
        std::ostringstream sizes;
        for (const auto& n : g->nodes()) {
          for (size_t k = 0; k < n->meta().size(); ++k) {
            sizes << "\n" << n->name() << (n->meta().size() > 1 ? "." + std::to_string(k) : "") << ": "
                  << graph_text::format_sizes(n->meta()[k]);
          }
        }
        EMBER_LOG_ARTIFACT(graph_sizes) << "TRACED GRAPH TENSOR SIZES\n===== " << name_ << " =====" << sizes.str();
      }
      const std::string backend_name = options_.custom_backend ? "custom" : options_.backend;
      EMBER_LOG(dynamo, INFO) << "Step 2: calling compiler function " << backend_name;
      CompiledGraph compiled;
      try {
        PhaseTimer timer(name_, "backend compile (Step 2)");
        compiled = compile_with_repro(*g, inputs, backend_, backend_name, "dynamo");
      } catch (const BackendCompilerFailed&) {
        throw;
      } catch (const Error& e) {
        throw BackendCompilerFailed(backend_name, e);
      }
      notify({CompileEvent::Kind::GraphCompiled, name_, SourceLoc(where_), key, {}, g->op_count()});
      EMBER_LOG(dynamo, INFO) << "Step 2: done compiler function " << backend_name;
      ++segments_per_site_[site];
      segments_.emplace(std::move(key), Segment{g, compiled});
      return compiled;
    };
  }

  void write_record(const std::vector<CallArg>& args, const Error& e) {
    try {
      const std::string path = capture::write_record(name_, SourceLoc(where_), options_.arg_names, args, e);
      EMBER_LOG(dynamo, WARNING) << "Execution record of " << name_ << " written to " << path
                                 << " (replay it with `ember replay " << path << "` or ember::replay(\"" << path
                                 << "\"))";
    } catch (const Error& io) {
      EMBER_LOG(dynamo, ERROR) << "could not write the execution record of " << name_ << ": " << io.what();
    }
  }

  CompileOptions options_;
  std::string name_;
  std::source_location where_;
  Backend backend_;
  Invoker invoke_;
  std::vector<size_t> param_kinds_;

  std::atomic<Entry*> head_{nullptr};
  std::atomic<size_t> entry_count_{0};
  std::mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_;
  bool limit_warned_ = false;  // under mu_
  std::set<ArgDim> automatic_dims_;  // under mu_: sizes automatic dynamic shapes made symbolic
  std::atomic<bool> matched_filter_{false};

  std::mutex said_mu_;
  std::set<std::string> said_;  // first_time()

  std::shared_mutex segments_mu_;
  std::unordered_map<std::string, Segment> segments_;
  std::map<std::string, size_t> segments_per_site_;
};

void warn_interpreted(const std::string& graph, const std::string& reason) {
  std::string function = graph;
  if (t_calling) {
    if (!t_calling->first_time("interpreted")) return;
    function = t_calling->name();
  } else {
    static std::mutex mu;
    static std::set<std::string>* said = new std::set<std::string>;
    std::lock_guard lock(mu);
    if (!said->insert(graph).second) return;
  }
  EMBER_LOG(dynamo, WARNING) << function
                             << " runs in the interpreter (eager kernels) instead of its compiled code: " << reason
                             << " (said once per function)";
  EMBER_LOG_ARTIFACT(perf_hints) << "graph " << graph << " of " << function << " runs in the interpreter: " << reason;
}

std::shared_ptr<CompiledFunctionState> make_state(CompileOptions options, const std::source_location& where,
                                                  Invoker invoke, std::vector<size_t> param_kinds) {
  auto state =
      std::make_shared<CompiledFunctionState>(std::move(options), where, std::move(invoke), std::move(param_kinds));
  register_function(state->name(), state);
  return state;
}

std::vector<IValue> call(CompiledFunctionState& state, std::vector<CallArg> args) { return state.call(args); }

const std::vector<size_t>& param_kinds(const CompiledFunctionState& state) { return state.param_kinds(); }

std::vector<IValue> trace_once(CompiledFunctionState& state, std::vector<CallArg>& args) {
  return state.trace_once(args);
}

void reset(CompiledFunctionState& state) { state.reset(); }
std::vector<EntryView> entries(CompiledFunctionState& state) { return state.entries(); }
const std::string& function_name(const CompiledFunctionState& state) { return state.name(); }
std::string argument_name(const CompiledFunctionState& state, size_t i) { return arg_name(state.arg_names(), i); }
size_t cache_size(const CompiledFunctionState& state) { return state.cache_size(); }

ExplainOutput explain_call(const std::string& name, const std::source_location& where, std::vector<CallArg> args,
                           const Invoker& invoke) {
  GuardSet guards = GuardSet::for_call(args, {});
  TraceOptions topts{name.empty() ? default_name(where) : name, false, {}};
  topts.where = SourceLoc(where);
  Tracer tracer(topts, [](const std::shared_ptr<Graph>& g, const std::vector<Tensor>&) { return eager_backend(*g); });
  tracer.run(args, invoke);
  for (UserGuard& g : tracer.user_guards()) guards.add_user_guard(std::move(g));
  ExplainOutput out;
  out.graphs = tracer.graphs();
  out.graph_count = out.graphs.size();
  out.graph_break_count = tracer.breaks().size();
  for (const auto& g : out.graphs) {
    std::vector<std::string> ops;
    for (const auto& n : g->nodes())
      if (n->kind() == NodeKind::Call) ops.push_back(n->target());
    out.op_count += ops.size();
    out.ops_per_graph.push_back(std::move(ops));
  }
  for (const GraphBreak& b : tracer.breaks()) out.break_reasons.push_back({b.reason(), b.loc});
  out.out_guards = guards.describe();
  return out;
}

}  // namespace capture

BackendCompilerFailed::BackendCompilerFailed(std::string backend, const Error& cause)
    : Error(cause.kind(),
            "backend='" + backend + "' raised:\n" + error_kind_name(cause.kind()) + ": " + cause.message() +
                (config().dynamo.verbose ? ""
                                         : "\n\nSet TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do "
                                           "this especially if you're reporting a bug to Ember)."),
            cause.context()),
      backend_(std::move(backend)) {}

std::string ExplainOutput::str() const {
  std::string out = "Dynamo produced " + std::to_string(graph_count) + " graph" + (graph_count == 1 ? "" : "s") +
                    " with " + std::to_string(graph_break_count) + " graph break" +
                    (graph_break_count == 1 ? "" : "s") + " and " + std::to_string(op_count) + " op" +
                    (op_count == 1 ? "" : "s") + "\n";
  if (!break_reasons.empty()) {
    out += " Break reasons:\n";
    for (size_t i = 0; i < break_reasons.size(); ++i) {
      const BreakReason& b = break_reasons[i];
      out += "\n" + std::to_string(i + 1) + ". " + b.reason + "\n";
      if (b.loc.known()) out += "  File \"" + b.loc.file + "\", line " + std::to_string(b.loc.line) + "\n";
    }
    out += "\n";
  }
  out += "Ops per Graph:\n";
  for (size_t i = 0; i < ops_per_graph.size(); ++i) {
    out += "  Ops " + std::to_string(i + 1) + ":\n";
    for (const auto& op : ops_per_graph[i]) out += "    " + op + "\n";
  }
  out += "Out Guards:\n";
  for (const auto& g : out_guards) out += "  " + g + "\n";
  return out;
}

void graph_break(Loc loc) {
  if (capture::Tracer* t = capture::Tracer::current()) t->on_graph_break(capture::BreakKind::Explicit, "", SourceLoc(loc));
}

bool is_compiling() { return capture::Tracer::current() != nullptr; }

namespace {
template <typename T>
void add_user_guard(const std::string& name, const T& variable, const std::source_location& loc) {
  if (capture::Tracer* t = capture::Tracer::current()) {
    t->add_user_guard(capture::UserGuard{name, &variable, IValue(variable), SourceLoc(loc)});
  }
}
}  // namespace

void guard_on(const std::string& name, const int64_t& variable, Loc loc) { add_user_guard(name, variable, loc); }
void guard_on(const std::string& name, const double& variable, Loc loc) { add_user_guard(name, variable, loc); }
void guard_on(const std::string& name, const bool& variable, Loc loc) { add_user_guard(name, variable, loc); }
void guard_on(const std::string& name, const std::string& variable, Loc loc) { add_user_guard(name, variable, loc); }

}  // namespace ember
