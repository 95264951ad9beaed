// inductor/compile_graph.cpp — the inductor CPU backend in one function (lower → schedule
// and fuse → generate C++ → build and load), the wrapper that runs the result (outputs
// allocated here, kernels and extern calls in graph order), and the backend's
// registration. See Note [inductor] (docs/notes/inductor.md).
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "aot/aot.h"
#include "capture/compile_mode.h"
#include "capture/events.h"
#include "core/shape.h"
#include "core/shape_env.h"
#include "core/sym_geometry.h"
#include "ember/autograd.h"
#include "core/cuda.h"
#include "ember/config.h"
#include "ember/cuda.h"
#include "ember/ops/creation.h"
#include "graph/interpreter.h"
#include "inductor/cudagraphs.h"
#include "inductor/freezing.h"
#include "inductor/inductor.h"
#include "inductor/kernel_profile.h"
#include "inductor/launch_tuning.h"
#include "inductor/pipeline.h"
#include "inductor/symbolic.h"
#include "inductor/trace.h"
#include "kernels/cuda/nvrtc.h"
#include "ops/dispatch.h"
#include "ops/registry.h"
#include "support/call_context.h"
#include "support/logging.h"

namespace ember::inductor {
namespace {

/// The most size symbols a graph for CUDA compiles over (each kernel takes all of their
/// values as one by-value argument; a launch's parameters hold 4 KiB, its buffers included).
constexpr size_t kMaxCudaSizeSlots = 384;

std::atomic<int64_t> g_buffers_reused{0};
std::atomic<int64_t> g_outputs_in_place{0};
std::atomic<int64_t> g_outputs_into_inputs{0};
std::mutex g_report_mu;
CompileReport g_last_report;

using GeneratedKernelFn = void (*)(void* const*);
/// A kernel over size symbols: also the symbols' values, by id.
using SymbolicKernelFn = void (*)(void* const*, const int64_t*);

/// The compiled program: the graph (owned), its kernels, and per Call node what runs it.
struct Program {
  std::unique_ptr<Graph> graph;
  LoweredGraph lowered;
  std::vector<Kernel> kernels;
  std::vector<GeneratedKernelFn> fns;
  /// A graph compiled over size symbols: where each symbol is read, and per kernel its
  /// entry point when it takes the symbols' values (null: a static kernel, in fns).
  bool symbolic = false;
  SymbolTable symbols;
  /// Per node position: whether the call there computes a data-dependent size the later
  /// steps read (symbols.from_outputs).
  std::vector<bool> reads_sizes;
  /// Per node position: an extern call's size arguments over the value slots, resolved
  /// once (graph::resolve_sizes); empty for a static graph.
  std::vector<graph::ResolvedSizes> resolved_sizes;
  std::vector<SymbolicKernelFn> sym_fns;
  std::map<const Node*, int> kernel_at;  // kernel roots, by root node
  std::map<const Node*, size_t> index;   // node -> position
  /// The wrapper's walk, planned once (plan_steps) so that a call does no lookups by node:
  /// per node position what runs there and its first slot in the call's flat array of
  /// values (node i's outputs are slots first_slot[i] to first_slot[i + 1]); per kernel the
  /// slots it reads and writes and its outputs' geometry; the results' slots.
  enum class Step : uint8_t { Input, Constant, Kernel, Inlined, Eager, Linear, Output };
  struct KernelPlan {
    std::vector<size_t> in_slots, out_slots;
    std::vector<const TensorMeta*> out_metas;
    /// Over size symbols: per output and per input, its geometry over the value slots
    /// (empty for a static one), evaluated at each call.
    std::vector<std::optional<SlotGeometry>> out_geometry, in_geometry;
    bool raises = false;  // inject_relu_bug_TESTING_ONLY=runtime_error
  };
  std::vector<Step> steps;
  std::vector<int> kernel_of;  // per position: the kernel run there (Step::Linear: the linear), or -1
  std::vector<size_t> first_slot;
  std::vector<KernelPlan> plans;
  std::vector<size_t> result_slots;
  size_t num_inputs = 0;
  std::set<int> raise_after;             // inject_relu_bug_TESTING_ONLY=runtime_error
  std::vector<void*> handles;            // the kernels' libraries, one per translation unit
  /// A graph whose tensors live on cuda:N (cuda_device = N): per kernel its function in
  /// the loaded module and its launch (grid, block, arguments); -1 on the CPU.
  int cuda_device = -1;
  std::vector<void*> cuda_fns;
  std::vector<void*> split_fns;  // per kernel, a split reduction's first kernel (else null)
  std::vector<CudaLaunch> launches;
  /// Launch tuning (launch_tuning.h): per kernel the index of its chosen candidate, -1
  /// until settled at its first launch outside a capture; the trace's launch_tuning.txt.
  mutable std::vector<std::atomic<int>> chosen;
  mutable std::mutex tune_mu;
  std::optional<std::filesystem::path> tuning_trace;
  /// Compile mode "reduce-overhead" (or inductor.cudagraphs): run through a CUDA graph.
  bool cudagraphs = false;
  /// Calls computed once at compile time (fold_host_constants), for the report.
  std::vector<std::string> host_constants;
  /// Freezing (Note [freezing]): the GEMMs with a packed weight, by their GEMM node, and
  /// the nodes of their epilogues, which run inside them.
  std::vector<FrozenLinear> linears;
  std::map<const Node*, int> linear_at;
  std::set<const Node*> absorbed;
  /// The parameters frozen, held: while the compiled graph lives, no other tensor can take
  /// the address its guards compare a parameter's identity with.
  std::vector<Tensor> frozen_parameters;
  /// Memory plan: the values of node i die after the node at position i runs
  /// (dies_after[i]), so their buffers can be handed to later kernels of the same size.
  std::vector<std::vector<size_t>> dies_after;
  /// Per kernel: inputs (ValueRefs) dying at that kernel that it may write its output over.
  std::vector<std::vector<ValueRef>> in_place;
  /// Per kernel, per output: the graph input (its position among the inputs) the output
  /// is written over, or -1. AOT autograd lets a graph write the values it lifted out of
  /// input writes (aot::GraphRole::input_writes) straight into those inputs; plan_input_writes.
  std::vector<std::vector<int>> writes_input;
  /// trace.kernel_profile: the timed steps, and per node position its step (-1: none).
  std::shared_ptr<KernelProfile> profile;
  std::vector<int> step_of;
  /// Whether a kernel input was copied to its recorded layout (logged once per program).
  mutable std::atomic<bool> restrided{false};

  void plan_steps();
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  /// Launches kernel k on the current stream of cuda_device with its `count` buffers `ptrs`
  /// (and, for a kernel over size symbols, their values `ks`, which also give its grid).
  void launch(size_t k, void** ptrs, size_t count, const std::vector<int64_t>& ks) const;
  /// Settles kernel k's launch configuration before its first launch (a kernel with
  /// several candidates; choose_launch), once, under tune_mu.
  void settle_launch(size_t k, void* const* ptrs, size_t count, int aligned, void* stream) const;
};

void Program::plan_steps() {
  reads_sizes.assign(graph->nodes().size(), false);
  for (const OutputBinding& b : symbols.from_outputs) reads_sizes[b.node] = true;
  const Graph& g = *graph;
  const size_t n = g.nodes().size();
  steps.assign(n, Step::Eager);
  kernel_of.assign(n, -1);
  first_slot.assign(n + 1, 0);
  if (symbolic) resolved_sizes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = *g.nodes()[i];
    first_slot[i + 1] = first_slot[i] + node.num_outputs();
    if (symbolic && node.kind() == NodeKind::Call) resolved_sizes[i] = graph::resolve_sizes(node);
    switch (node.kind()) {
      case NodeKind::Placeholder:
      case NodeKind::Attribute: steps[i] = Step::Input; ++num_inputs; break;
      case NodeKind::Constant: steps[i] = Step::Constant; break;
      case NodeKind::Output:
        steps[i] = Step::Output;
        result_slots.assign(node.args().size(), 0);  // filled below
        break;
      case NodeKind::Call: {
        if (auto l = linear_at.find(&node); l != linear_at.end()) {
          steps[i] = Step::Linear;
          kernel_of[i] = l->second;  // the linear's index
          break;
        }
        if (absorbed.count(&node)) {
          steps[i] = Step::Inlined;  // computed by its frozen linear
          break;
        }
        const NodeRole role = lowered.roles.at(&node);
        if (role != NodeRole::Pointwise && role != NodeRole::Row) break;
        auto k = kernel_at.find(&node);
        steps[i] = k == kernel_at.end() ? Step::Inlined : Step::Kernel;
        if (k != kernel_at.end()) kernel_of[i] = k->second;
        break;
      }
    }
  }
  auto slot = [&](const Node* node, uint32_t out) { return first_slot[index.at(node)] + out; };
  if (const Node* out = g.output_node())
    for (size_t r = 0; r < out->args().size(); ++r) result_slots[r] = slot(out->args()[r].value.node, out->args()[r].value.index);
  for (size_t k = 0; k < kernels.size(); ++k) {
    const Kernel& kernel = kernels[k];
    KernelPlan p;
    for (const ValueRef& v : kernel.inputs) p.in_slots.push_back(slot(v.node, v.index));
    // A pointwise kernel writes the nodes it stores; a row kernel its root's output, or
    // without an epilogue every output of its row node (layer norm's mean and rstd).
    if (!kernel.outputs.empty()) {
      for (const PointwiseNode* o : kernel.outputs) {
        p.out_metas.push_back(&o->node->meta()[0]);
        p.out_slots.push_back(slot(o->node, 0));
      }
    } else {
      const Node* root = kernel.root ? kernel.root->node : kernel.row->node;
      for (uint32_t o = 0; o < (kernel.root ? 1u : root->meta().size()); ++o) {
        p.out_metas.push_back(&root->meta()[o]);
        p.out_slots.push_back(slot(root, o));
      }
    }
    if (symbolic) {
      auto geometry = [](const TensorMeta& m) { return m.sym ? std::optional(slot_geometry(m)) : std::nullopt; };
      for (const TensorMeta* m : p.out_metas) p.out_geometry.push_back(geometry(*m));
      for (const ValueRef& v : kernel.inputs) p.in_geometry.push_back(geometry(v.node->meta()[v.index]));
    }
    p.raises = raise_after.count(static_cast<int>(k)) > 0;
    plans.push_back(std::move(p));
  }
}

void Program::launch(size_t k, void** ptrs, size_t count, const std::vector<int64_t>& ks) const {
  const CudaLaunch& l = launches[k];
  const int64_t sized_grid = l.takes_sizes ? heuristic_grid(l.tune, core::sym::evaluate(l.work, ks), l.block) : l.grid;
  if (sized_grid <= 0) return;  // an empty kernel
  void* args[64];
  EMBER_INTERNAL_ASSERT(count < 64) << "inductor: kernel " << kernels[k].name << " takes " << count
                                    << " buffers, more than a launch holds";
  size_t n = 0;
  int aligned = 1;
  for (size_t b = 0; b < count; ++b) {
    args[n++] = kernel_arg(l, b, ptrs[b]);
    if (!passed_by_value(l, b)) aligned = aligned && reinterpret_cast<uintptr_t>(ptrs[b]) % 16 == 0;
  }
  if (l.aligned_check) args[n++] = &aligned;
  // The symbols' values by value (ember_dev::Sizes: as many 64-bit integers as ks holds).
  if (l.takes_sizes) args[n++] = const_cast<int64_t*>(ks.data());
  void* stream = core::cuda::current_stream_handle(cuda_device);
  if (l.workspace_bytes == 0) {
    int64_t grid = sized_grid;
    int block = l.block;
    if (l.candidates.size() > 1) {
      if (chosen[k].load(std::memory_order_acquire) < 0) settle_launch(k, ptrs, count, aligned, stream);
      const int c = chosen[k].load(std::memory_order_acquire);
      if (c >= 0) {
        grid = l.candidates[static_cast<size_t>(c)].grid;
        block = l.candidates[static_cast<size_t>(c)].block;
      }
    }
    kernels::cuda::launch_kernel(cuda_fns[k], static_cast<unsigned>(grid), static_cast<unsigned>(block), args, stream);
    return;
  }
  // A split reduction: the parts into the workspace, then their combination. The
  // workspace goes back to the allocator once both are queued (stream order keeps it).
  void* ws = core::cuda::device_alloc(l.workspace_bytes, cuda_device);
  args[n++] = &ws;
  try {
    kernels::cuda::launch_kernel(split_fns[k], static_cast<unsigned>(l.split_grid), static_cast<unsigned>(l.split_block),
                                 args, stream);
    kernels::cuda::launch_kernel(cuda_fns[k], static_cast<unsigned>(l.grid), static_cast<unsigned>(l.block), args, stream);
  } catch (...) {
    core::cuda::device_free(ws);
    throw;
  }
  core::cuda::device_free(ws);
}

size_t storage_bytes(const TensorMeta& m);

void Program::settle_launch(size_t k, void* const* ptrs, size_t count, int aligned, void* stream) const {
  std::lock_guard lock(tune_mu);
  if (chosen[k].load(std::memory_order_acquire) >= 0) return;
  std::vector<size_t> out_bytes;
  for (const TensorMeta* m : plans[k].out_metas) out_bytes.push_back(storage_bytes(*m));
  const int c = choose_launch(launches[k], cuda_fns[k], {ptrs, ptrs + count}, out_bytes, aligned, cuda_device, stream,
                              tuning_trace);
  if (c >= 0) chosen[k].store(c, std::memory_order_release);
}

/// "float32 [3, 4]".
std::string geometry_text(ScalarType dtype, IntArrayRef sizes) {
  std::ostringstream os;
  os << dtype_name(dtype) << " " << sizes;
  return os.str();
}

/// Kernel input `v` (holding `t`) as the kernel reads it, through the strides the graph
/// recorded for it (`m`, evaluated at this call's sizes in a graph over size symbols): `t` itself when its sizes and dtype are the recorded ones and its
/// strides address the same elements (strides of size-1 dims and of empty tensors never
/// do: a graph recorded elsewhere, by PyTorch's rules, may give them other values);
/// otherwise, when only the strides of larger dims differ (a graph whose recorded layout is
/// not the one Ember's op gives), a copy of `t` in the recorded layout, kept in `hold`. A
/// size or dtype that differs, or a recorded layout that overlaps itself, is an error
/// naming the value. See Note [inductor] ("The wrapper").
const Tensor& as_recorded(const Tensor& t, const ValueRef& v, const TensorMeta& m, const Graph& g,
                          std::atomic<bool>& logged, std::vector<Tensor>& hold) {
  auto where = [&] {
    return "inductor: %" + v.node->name() + (v.node->num_outputs() > 1 ? "." + std::to_string(v.index) : "") +
           " of graph " + g.name();
  };
  EMBER_CHECK(t.defined() && t.sizes() == IntArrayRef(m.sizes) && t.dtype() == m.dtype)
      << where() << " is " << (t.defined() ? geometry_text(t.dtype(), t.sizes()) : "undefined")
      << ", but the graph records " << geometry_text(m.dtype, m.sizes) << " for it, and its kernels were generated "
      << "for that";
  EMBER_CHECK(t.device() == core::cuda::normalize_device(m.device)) << where() << " is on " << t.device() << ", but the graph was compiled for "
                                      << m.device;
  if (core::strides_equivalent(m.sizes, t.strides(), m.strides)) return t;
  EMBER_CHECK(core::is_non_overlapping_and_dense(m.sizes, m.strides))
      << where() << " has strides " << t.strides() << ", but the graph records strides " << IntArrayRef(m.strides)
      << " for it (overlapping), and its kernels read it through those";
  if (!logged.exchange(true)) {
    EMBER_LOG(inductor, INFO) << where() << " has strides " << t.strides() << ", but its kernels read it through the "
                              << "recorded strides " << IntArrayRef(m.strides)
                              << "; it is copied to that layout on each call";
  }
  Tensor copy = empty_strided(m.sizes, m.strides, TensorOptions(m.dtype).device(m.device));
  copy.copy_(t);
  hold.push_back(std::move(copy));
  return hold.back();
}

/// A tensor of `m`'s geometry on `storage` (a dead intermediate's buffer of the same size).
Tensor on_storage(const TensorMeta& m, std::shared_ptr<Storage> storage) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->sizes = m.sizes;
  impl->strides = m.strides;
  impl->dtype = m.dtype;
  impl->device = m.device;
  impl->refresh();
  return Tensor(std::move(impl));
}

size_t storage_bytes(const TensorMeta& m) {
  int64_t extent = 1;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (m.sizes[d] == 0) return 0;
    extent += (m.sizes[d] - 1) * m.strides[d];
  }
  return static_cast<size_t>(extent) * element_size(m.dtype);
}

/// A tensor of `m`'s geometry over the buffer of one of `candidates` (inputs of `kernel`
/// that die at its position and that it may write over), when nothing but the values in
/// `dying` holds that buffer and no other input of the kernel reads it; otherwise undefined.
template <typename ValueOf>
Tensor take_in_place(const Kernel& kernel, const std::vector<ValueRef>& candidates, const TensorMeta& m,
                     ValueOf& value_of, const std::vector<Tensor>& env, const std::vector<size_t>& first_slot,
                     const std::vector<size_t>& dying) {
  for (const ValueRef& v : candidates) {
    const Tensor& t = value_of(v);
    if (!t.defined() || !t.storage() || t.storage_offset() != 0 || t.storage()->nbytes() < storage_bytes(m)) continue;
    // Another input on the same buffer (a view of it) would be read at other positions.
    bool aliased = false;
    for (const ValueRef& other : kernel.inputs)
      aliased = aliased || (!(other == v) && value_of(other).storage() == t.storage());
    if (aliased) continue;
    long holders = 0;
    for (size_t d : dying)
      for (size_t e = first_slot[d]; e < first_slot[d + 1]; ++e)
        if (env[e].defined() && env[e].storage() == t.storage()) ++holders;
    if (t.storage().use_count() == holders) return on_storage(m, t.storage());
  }
  return Tensor();
}

/// A tensor of `m`'s geometry over graph input `t`'s memory, for a kernel output planned
/// to be written over it (Program::writes_input), when `t` has exactly that geometry and no
/// other input of `kernel` reads its buffer; otherwise undefined.
template <typename ValueOf>
Tensor take_input(const Kernel& kernel, const Tensor& t, const TensorMeta& m, ValueOf& value_of) {
  if (!t.defined() || !t.storage() || t.storage_offset() != 0 || m.storage_offset != 0 || t.dtype() != m.dtype ||
      t.device() != m.device || t.sizes() != m.sizes || !core::strides_equivalent(m.sizes, t.strides(), m.strides) ||
      t.storage()->nbytes() < storage_bytes(m))
    return Tensor();
  int readers = 0;  // the input itself may be read (at the output's index map); a view of it may not
  for (const ValueRef& in : kernel.inputs)
    if (value_of(in).storage() == t.storage() && ++readers > 1) return Tensor();
  return on_storage(m, t.storage());
}

std::vector<Tensor> Program::run(const std::vector<Tensor>& inputs) const {
  const Graph& g = *graph;
  // Every value of the call, flat: node i's outputs at slots first_slot[i]… (plan_steps).
  std::vector<Tensor> env(first_slot.back());
  // Buffers of dead intermediates nothing else references, by size in bytes.
  std::multimap<size_t, std::shared_ptr<Storage>> pool;
  auto value_of = [&](const ValueRef& v) -> const Tensor& { return env[first_slot[index.at(v.node)] + v.index]; };
  size_t next_input = 0;
  std::vector<Tensor> restrided_inputs;  // kernel inputs copied to their recorded layout
  std::vector<int64_t> step_ns;  // this call's time per profiled step
  // Over size symbols: their values on this call, and each value's geometry at them.
  std::vector<int64_t> ks;
  if (symbolic) read_symbols(symbols, inputs, ks);
  // A symbolic value's geometry on this call, evaluated into scratch reused by every kernel
  // (its vectors keep their storage: no allocation per operand).
  TensorMeta out_at_call, in_at_call;
  if (profile) step_ns.assign(profile->steps().size(), 0);
  std::optional<ember::cuda::DeviceGuard> device_guard;
  if (cuda_device >= 0) device_guard.emplace(cuda_device);
  // Times node i's step into step_ns when profiling (a no-op timer otherwise).
  // On a CUDA device the steps are timed with events (launches return before kernels run).
  std::unique_ptr<CudaStepEvents> events;
  if (profile && cuda_device >= 0) events = std::make_unique<CudaStepEvents>(profile->steps().size());
  auto time_step = [&](size_t i) {
    return StepTimer(profile && !events && step_of[i] >= 0 ? &step_ns : nullptr, profile ? step_of[i] : 0);
  };
  auto time_cuda_step = [&](size_t i) {
    return CudaStepTimer(events && step_of[i] >= 0 ? events.get() : nullptr, profile ? step_of[i] : 0);
  };
  void* small_ptrs[32];
  std::vector<void*> large_ptrs;
  // Constants first: a frozen step runs at its first node's position and its unpacked form
  // may read a constant that comes later in the graph (a folded batch norm's scale).
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i] == Step::Constant) env[first_slot[i]] = g.constants().at(g.nodes()[i]->target());
  for (size_t i = 0; i < steps.size(); ++i) {
    switch (steps[i]) {
      case Step::Input: env[first_slot[i]] = inputs.at(next_input++); break;
      case Step::Constant: break;  // filled before the steps
      case Step::Inlined: break;  // computed by a later kernel
      case Step::Output: break;
      case Step::Linear: {
        const StepTimer timer = time_step(i);
        run_frozen_linear(linears[static_cast<size_t>(kernel_of[i])], value_of,
                          [&](const Node* n, std::vector<Tensor> outs) {
                            const size_t at = first_slot[index.at(n)];
                            for (size_t o = 0; o < outs.size(); ++o) env[at + o] = std::move(outs[o]);
                          });
        break;
      }
      case Step::Eager: {
        // Views and extern calls run their eager kernels, as the interpreter does.
        const StepTimer timer = time_step(i);
        const CudaStepTimer cuda_timer = time_cuda_step(i);
        // Size lists over symbols at this call's values.
        std::vector<Tensor> outs =
            graph::run_call_node(*g.nodes()[i], value_of, ks, symbolic ? &resolved_sizes[i] : nullptr);
        if (symbolic && reads_sizes[i]) read_output_symbols(symbols, i, outs, ks);     // data-dependent sizes
        for (size_t o = 0; o < outs.size(); ++o) env[first_slot[i] + o] = std::move(outs[o]);
        break;
      }
      case Step::Kernel: {
        const size_t k = static_cast<size_t>(kernel_of[i]);
        const Kernel& kernel = kernels[k];
        const KernelPlan& plan = plans[k];
        const size_t count = plan.in_slots.size() + plan.out_slots.size();
        void** ptrs = small_ptrs;
        if (count > std::size(small_ptrs)) {
          large_ptrs.resize(count);
          ptrs = large_ptrs.data();
        }
        for (size_t o = 0; o < plan.out_metas.size(); ++o) {
          const TensorMeta* mp = plan.out_metas[o];
          if (symbolic && plan.out_geometry[o]) {
            evaluate_meta_into(*mp, *plan.out_geometry[o], ks, out_at_call);
            mp = &out_at_call;
          }
          const TensorMeta& m = *mp;
          Tensor& out = env[plan.out_slots[o]];
          if (const int j = o < writes_input[k].size() ? writes_input[k][o] : -1; j >= 0) {
            out = take_input(kernel, inputs[static_cast<size_t>(j)], m, value_of);
            if (out.defined()) {
              g_outputs_into_inputs.fetch_add(1, std::memory_order_relaxed);
              continue;
            }
          }
          if (o == 0) {
            out = take_in_place(kernel, in_place[k], m, value_of, env, first_slot, dies_after[i]);
            if (out.defined()) {
              g_outputs_in_place.fetch_add(1, std::memory_order_relaxed);
              continue;
            }
          }
          auto reuse = pool.find(storage_bytes(m));
          if (reuse != pool.end() && reuse->first > 0) {
            out = on_storage(m, std::move(reuse->second));
            pool.erase(reuse);
            g_buffers_reused.fetch_add(1, std::memory_order_relaxed);
          } else {
            out = ops::empty_from_meta(m);  // what empty_strided makes, without the dispatcher
          }
        }
        restrided_inputs.clear();
        // The kernel's index maps are the recorded strides (guards and meta functions
        // usually make the real ones equal).
        for (size_t b = 0; b < plan.in_slots.size(); ++b) {
          const ValueRef& v = kernel.inputs[b];
          const TensorMeta* recorded = &v.node->meta()[v.index];
          if (symbolic && plan.in_geometry[b]) {
            evaluate_meta_into(*recorded, *plan.in_geometry[b], ks, in_at_call);
            recorded = &in_at_call;
          }
          ptrs[b] = as_recorded(env[plan.in_slots[b]], v, *recorded, g, restrided, restrided_inputs).raw_data_ptr();
        }
        for (size_t o = 0; o < plan.out_slots.size(); ++o) ptrs[plan.in_slots.size() + o] = env[plan.out_slots[o]].raw_data_ptr();
        {
          const StepTimer timer = time_step(i);
          const CudaStepTimer cuda_timer = time_cuda_step(i);
          if (cuda_device >= 0) {
            launch(k, ptrs, count, ks);
          } else if (SymbolicKernelFn fn = symbolic ? sym_fns[k] : nullptr) {
            fn(ptrs, ks.data());
          } else {
            fns[k](ptrs);
          }
        }
        EMBER_CHECK(!plan.raises) << "inductor: injected runtime error after kernel " << kernel.name << " of graph "
                                  << g.name() << " (inject_relu_bug_TESTING_ONLY=runtime_error)";
        break;
      }
    }
    // Values whose last reader just ran: a buffer only they hold (no view, no output, no
    // input aliases it) goes to the pool for a later kernel output of the same size.
    for (size_t dead : dies_after[i]) {
      for (size_t e = first_slot[dead]; e < first_slot[dead + 1]; ++e) {
        Tensor& t = env[e];
        if (t.defined() && t.storage() && t.storage().use_count() == 1 && t.impl_ptr().use_count() == 1) {
          pool.emplace(t.storage()->nbytes(), t.storage());
        }
        t = Tensor();
      }
    }
  }
  if (events) events->collect(step_ns);
  if (profile) profile->add_call(step_ns);
  std::vector<Tensor> results;
  results.reserve(result_slots.size());
  for (size_t r : result_slots) results.push_back(env[r]);
  return results;
}

/// Where each value is last read: by a node's arguments, or by a kernel (at its root's
/// position) reading it as an input; graph outputs and inputs never die.
std::vector<std::vector<size_t>> plan_memory(const Graph& g, const std::map<const Node*, size_t>& index,
                                             const std::vector<Kernel>& kernels) {
  const size_t n = g.nodes().size();
  std::vector<size_t> last(n, 0);
  std::vector<bool> keep(n, false);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = *g.nodes()[i];
    if (node.kind() != NodeKind::Call) keep[i] = true;  // inputs, constants: not ours to reuse
    for (const Arg& a : node.args()) {
      auto use = [&](const ValueRef& v) {
        const size_t j = index.at(v.node);
        if (node.kind() == NodeKind::Output) keep[j] = true;
        last[j] = std::max(last[j], i);
      };
      if (a.kind == Arg::Kind::Value) use(a.value);
      if (a.kind == Arg::Kind::ValueList)
        for (const auto& v : a.values)
          if (v) use(*v);
    }
  }
  for (const Kernel& k : kernels) {
    const size_t at = index.at(k.root_node());
    for (const ValueRef& v : k.inputs) {
      const size_t j = index.at(v.node);
      last[j] = std::max(last[j], at);
    }
  }
  // A view shares its base's buffer: the base lives as long as any view of it.
  for (size_t i = n; i-- > 0;) {
    const Node& node = *g.nodes()[i];
    if (node.kind() == NodeKind::Call && node.op() && node.op()->kind == ops::OpKind::View && !node.args().empty() &&
        node.args()[0].kind == Arg::Kind::Value) {
      const size_t base = index.at(node.args()[0].value.node);
      last[base] = std::max(last[base], last[i]);
      if (keep[i]) keep[base] = true;
    }
  }
  std::vector<std::vector<size_t>> dies_after(n);
  for (size_t j = 0; j < n; ++j)
    if (!keep[j] && last[j] > j) dies_after[last[j]].push_back(j);
  return dies_after;
}

}  // namespace

int64_t buffers_reused() { return g_buffers_reused.load(std::memory_order_relaxed); }
int64_t outputs_in_place() { return g_outputs_in_place.load(std::memory_order_relaxed); }
int64_t outputs_into_inputs() { return g_outputs_into_inputs.load(std::memory_order_relaxed); }

/// trace.kernel_profile's steps: each kernel (at its run position) and each extern call, in
/// run order; views are not timed.
std::shared_ptr<KernelProfile> make_profile(Program& p, const std::filesystem::path& file) {
  const Graph& g = *p.graph;
  std::vector<KernelProfile::Step> steps;
  p.step_of.assign(g.nodes().size(), -1);
  auto bytes_of = [](const Node& n, uint64_t sum) {
    for (const TensorMeta& m : n.meta()) sum += storage_bytes(m);
    return sum;
  };
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = *g.nodes()[i];
    if (n.kind() != NodeKind::Call) continue;
    KernelProfile::Step step;
    if (p.absorbed.count(&n)) continue;  // inside a frozen linear's step
    if (auto l = p.linear_at.find(&n); l != p.linear_at.end()) {
      const FrozenLinear& linear = p.linears[static_cast<size_t>(l->second)];
      step.what = (linear.conv ? "frozen convolution " : "frozen linear ") + linear.text;
      step.bytes = storage_bytes(linear.input.node->meta()[linear.input.index]);
      for (const ValueRef& v : linear.add_operands) step.bytes += storage_bytes(v.node->meta()[v.index]);
      step.bytes = bytes_of(*linear.chain.back(), step.bytes);
    } else if (auto k = p.kernel_at.find(&n); k != p.kernel_at.end()) {
      const Kernel& kernel = p.kernels[k->second];
      step.what = "kernel " + kernel.name;
      for (const ValueRef& v : kernel.inputs) step.bytes += storage_bytes(v.node->meta()[v.index]);
      if (!kernel.outputs.empty()) {
        for (const PointwiseNode* o : kernel.outputs) step.bytes = bytes_of(*o->node, step.bytes);
      } else {
        step.bytes = bytes_of(kernel.root ? *kernel.root->node : *kernel.row->node, step.bytes);
      }
    } else if (p.lowered.roles.at(&n) == NodeRole::Extern) {
      step.what = "extern " + n.target() + " (%" + n.name() + ")";
      // A matrix product names its m x k x n, for GFLOP/s (bench_inductor_workloads).
      if ((n.target() == "aten::mm" || n.target() == "aten::addmm") && n.meta()[0].sizes.size() == 2) {
        const Arg& a = n.args()[n.target() == "aten::mm" ? 0 : 1];
        if (a.kind == Arg::Kind::Value && a.value.node->meta()[a.value.index].sizes.size() == 2)
          step.what += " " + std::to_string(n.meta()[0].sizes[0]) + "x" +
                       std::to_string(a.value.node->meta()[a.value.index].sizes[1]) + "x" +
                       std::to_string(n.meta()[0].sizes[1]);
      }
      for (const Arg& a : n.args()) {
        if (a.kind == Arg::Kind::Value) step.bytes += storage_bytes(a.value.node->meta()[a.value.index]);
        if (a.kind == Arg::Kind::ValueList)
          for (const auto& v : a.values)
            if (v) step.bytes += storage_bytes(v->node->meta()[v->index]);
      }
      step.bytes = bytes_of(n, step.bytes);
    } else {
      continue;
    }
    p.step_of[i] = static_cast<int>(steps.size());
    steps.push_back(std::move(step));
  }
  return std::make_shared<KernelProfile>(g.name(), file, std::move(steps));
}

namespace {

/// The first data-dependent size (unbacked symbol) in `g`'s geometry, `u0 (aten::nonzero)`,
/// or empty.
std::string first_unbacked_symbol(const Graph& g) {
  for (const auto& n : g.nodes()) {
    for (const TensorMeta& m : n->meta()) {
      if (!m.sym) continue;
      for (const core::SymInt& s : m.sym->sizes) {
        if (!s.is_symbolic()) continue;
        for (int32_t id : core::sym::free_symbols(s.expr()))
          if (core::sym::is_unbacked(id))
            return core::sym::default_symbol_name(id) + " (" + s.env()->symbol(id).source + ", %" + n->name() + ")";
      }
    }
  }
  return {};
}

/// The calls compile_graph folded as host constants before AOT autograd, for the reports
/// of the graphs compile_fx_inner compiles from it on this thread (FoldedBeforeAot).
thread_local const std::vector<std::string>* t_folded_before_aot = nullptr;

/// Names `folded` as the calls folded before AOT autograd while it lives.
class FoldedBeforeAot {
 public:
  explicit FoldedBeforeAot(const std::vector<std::string>& folded) : saved_(t_folded_before_aot) {
    t_folded_before_aot = &folded;
  }
  ~FoldedBeforeAot() { t_folded_before_aot = saved_; }
  FoldedBeforeAot(const FoldedBeforeAot&) = delete;
  FoldedBeforeAot& operator=(const FoldedBeforeAot&) = delete;

 private:
  const std::vector<std::string>* saved_;
};

/// The one device `g`'s tensors live on, or why there is none: tensors on two devices
/// (0-dim CPU tensors beside CUDA ones are CPU scalars, as PyTorch allows, and do not
/// count). A graph without tensors is a CPU graph.
std::optional<Device> graph_device(const Graph& g, std::string& why) {
  std::optional<Device> device;
  const Node* first = nullptr;
  for (const auto& n : g.nodes()) {
    for (const TensorMeta& m : n->meta()) {
      if (m.undefined || (m.device.type == DeviceType::CPU && m.sizes.empty())) continue;
      const Device d = core::cuda::normalize_device(m.device);  // `cuda`: the current device
      if (!device) {
        device = d;
        first = n.get();
      } else if (!(*device == d)) {
        why = "it mixes tensors on " + device->str() + " (%" + first->name() + ") and " + d.str() + " (%" +
              n->name() + ")";
        return std::nullopt;
      }
    }
  }
  return device.value_or(Device(DeviceType::CPU));
}

/// A compiled graph that runs `graph` in the interpreter (eager kernels), saying why.
CompiledGraph interpreted(std::shared_ptr<Graph> graph, const std::string& reason) {
  EMBER_LOG(inductor, INFO) << "graph " << graph->name() << " runs in the interpreter: " << reason;
  if (cudagraphs_wanted()) log_cudagraphs_skip(graph->name(), "the graph running in the interpreter: " + reason);
  return [graph, reason](const std::vector<Tensor>& inputs) {
    capture::warn_interpreted(graph->name(), reason);
    return run_graph(*graph, inputs);
  };
}

}  // namespace

CompiledGraph compile_graph(Graph& captured, const std::vector<Tensor>& example_inputs) {
  // A graph with a data-dependent size compiles over it on the CPU: the wrapper reads the
  // size from the output of the op that computes it (an extern call) and sizes the later
  // kernels from it (Note [dynamic shapes]). Otherwise it runs in the interpreter, whose
  // eager kernels allocate from the size each call computes (a data-dependent size cannot
  // be specialized).
  if (std::string u = first_unbacked_symbol(captured); !u.empty()) {
    std::string mixed;
    const std::optional<Device> device = graph_device(captured, mixed);
    const std::string why = !device ? mixed : why_not_symbolic(captured, example_inputs);
    if (!why.empty())
      return interpreted(std::shared_ptr<Graph>(captured.clone()),
                         "it has the data-dependent size " + u + ", and " + why);
  }
  // A graph traced over size symbols compiles once for every size when symbolic.cpp's rule
  // admits it; otherwise its symbols are specialized now, while the entry is traced (its
  // guards then pin every size), and it compiles as a static graph.
  if (has_symbols(captured)) {
    if (std::string why = why_not_symbolic(captured, example_inputs); !why.empty()) specialize_symbols(captured, why);
  }
  // Host constants copied to the device (the GPT-2 block's causal mask, built on the CPU
  // and moved to the input's device) are folded before AOT autograd splits the graph: the
  // split would otherwise save the host values for backward or recompute them there, and
  // the forward and backward graphs would both mix devices and run in the interpreter.
  std::string mixed;
  auto folded_names = std::make_shared<std::vector<std::string>>();
  std::unique_ptr<Graph> folded =
      graph_device(captured, mixed) ? nullptr : fold_host_constants(captured, *folded_names);
  Graph& graph = folded ? *folded : captured;
  // The function's compile mode holds for every graph AOT autograd compiles, the backward
  // included (it may compile after this call returns); so does the list of calls folded
  // here, which each graph's compile report names.
  const capture::CompileMode mode = capture::current_compile_mode();
  auto inner = [mode, folded_names](Graph& g, const std::vector<Tensor>& examples) {
    capture::CompileModeScope scope(mode);
    FoldedBeforeAot folded_scope(*folded_names);
    return compile_fx_inner(g, examples);
  };
  return aot::aot_compile(graph, example_inputs, inner, "inductor_inner", compile_fx_ahead, run_training_graph_passes);
}

void compile_fx_ahead(Graph& g) {
  // The bisector counts decisions in the order graphs compile; running the backward's
  // steps ahead would count them twice.
  if (bisect_active()) return;
  std::string mixed;
  if (auto d = graph_device(g, mixed); !d || d->type != DeviceType::CPU) return;  // only the C++ compiler runs ahead
  try {
    // The same steps as compile_fx_inner up to the source, without its logs (they come
    // when it compiles the graph for real) or trace files.
    logging::MuteScope mute;
    capture::PhaseTimer timer("backward graph passes to codegen, ahead");
    std::unique_ptr<Graph> transformed = run_graph_passes(g);
    const LoweredGraph lowered = lower(*transformed);
    std::vector<Kernel> kernels = schedule(*transformed, lowered);
    start_build_units(generate_cpp_parts(lowered, kernels));
  } catch (const std::exception&) {
    // Nothing is reported ahead: compile_fx_inner meets the same failure and reports it.
  }
}

namespace {
void mark_input_writes(const Graph& g, std::vector<Kernel>& kernels);
/// The steps after code generation and loading, shared by both devices: kernel positions,
/// the memory plan, in-place outputs, the profile, the report; returns the wrapper.
CompiledGraph finish(const std::shared_ptr<Program>& program, GraphTrace& trace, const std::string& source,
                     const std::string& so_path, bool cache_hit);
CompiledGraph finish_cuda(const std::shared_ptr<Program>& program, GraphTrace& trace);
}  // namespace

CompiledGraph compile_fx_inner(Graph& given_graph, const std::vector<Tensor>& example_inputs) {
  // One device per graph: a graph mixing CPU and CUDA tensors (other than 0-dim CPU
  // scalars) runs eagerly, unless its CPU values are host constants copied to the device
  // (fold_host_constants); a CUDA graph gets CUDA kernels (over size symbols too).
  std::string mixed;
  std::optional<Device> device = graph_device(given_graph, mixed);
  std::vector<std::string> host_constants;
  if (t_folded_before_aot) host_constants = *t_folded_before_aot;
  std::unique_ptr<Graph> folded = device ? nullptr : fold_host_constants(given_graph, host_constants);
  if (folded) device = graph_device(*folded, mixed);
  if (!device) {
    return interpreted(std::shared_ptr<Graph>(given_graph.clone()),
                       mixed + ", and the inductor compiles a graph for one device");
  }
  Graph& input_graph = folded ? *folded : given_graph;
  const bool on_cuda = device->type == DeviceType::CUDA;
  auto program = std::make_shared<Program>();
  program->cudagraphs = cudagraphs_wanted();
  program->host_constants = std::move(host_constants);
  GraphTrace trace(input_graph);
  EMBER_LOG(inductor, INFO) << "Step 3: torchinductor compiling graph " << input_graph.name();
  // Freezing (Note [freezing]): an inference graph's parameters as constants, folded.
  const std::string why_not_frozen = why_not_freezing(input_graph, example_inputs, on_cuda);
  if (config().inductor.freezing && !why_not_frozen.empty())
    EMBER_LOG(inductor, INFO) << "freezing ignored for graph " << input_graph.name() << ": " << why_not_frozen;
  {
    capture::PhaseTimer timer("graph passes");
    if (why_not_frozen.empty()) {
      std::unique_ptr<Graph> frozen = freeze_parameters(input_graph, example_inputs);
      const std::vector<Node*> inputs = input_graph.inputs();
      for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i]->kind() == NodeKind::Attribute) program->frozen_parameters.push_back(example_inputs[i]);
      program->graph = run_graph_passes(*frozen);
    } else {
      program->graph = run_graph_passes(input_graph);
    }
  }
  const Graph& g = *program->graph;
  trace.stage_done("graph passes");
  trace.transformed(g);
  std::optional<capture::PhaseTimer> lowering(std::in_place, "lowering");
  program->lowered = lower(g);
  program->symbolic = has_symbols(g);
  if (program->symbolic) {
    // A graph given to "inductor_inner" directly saw no rule (symbolic.cpp): one that breaks
    // it runs in the interpreter, correct for every size.
    const std::string why = why_not_symbolic(g, example_inputs);
    if (!why.empty()) {
      auto graph = std::shared_ptr<Graph>(std::move(program->graph));
      const std::string reason = "graph " + graph->name() + " has size symbols, and " + why;
      if (program->cudagraphs) log_cudagraphs_skip(graph->name(), "dynamic shapes: " + reason);
      return [graph, reason](const std::vector<Tensor>& inputs) {
        capture::warn_interpreted(graph->name(), reason);
        return run_graph(*graph, inputs);
      };
    }
    program->symbols = bind_symbols(g);
    // A CUDA kernel takes the symbols' values by value (ember_dev::Sizes, 8 bytes each),
    // and a launch's parameters hold 4 KiB: past kMaxCudaSizeSlots the graph runs in the
    // interpreter, saying why.
    if (on_cuda && program->symbols.num_symbols > kMaxCudaSizeSlots) {
      return interpreted(std::shared_ptr<Graph>(std::move(program->graph)),
                         "it has " + std::to_string(program->symbols.num_symbols) + " size symbols, more than the " +
                             std::to_string(kMaxCudaSizeSlots) + " a CUDA kernel's parameters hold");
    }
  }
  if (why_not_frozen.empty()) {
    program->linears = plan_frozen_linears(g, program->lowered);
    for (size_t l = 0; l < program->linears.size(); ++l) {
      const std::vector<const Node*>& chain = program->linears[l].chain;
      program->linear_at[chain.front()] = static_cast<int>(l);
      program->absorbed.insert(chain.begin() + 1, chain.end());
    }
  }
  lowering.reset();
  trace.stage_done("lowering");
  trace.lowered(g, program->lowered);
  {
    capture::PhaseTimer timer("scheduling (fusion)");
    program->kernels = schedule(g, program->lowered);
    mark_input_writes(g, program->kernels);
  }
  if (on_cuda) name_cuda_kernels(program->kernels);
  trace.stage_done("scheduling and fusion");
  trace.scheduled(g, program->lowered, program->kernels);
  if (on_cuda) {
    program->cuda_device = device->index < 0 ? ember::cuda::current_device() : device->index;
    return finish_cuda(program, trace);
  }
  CppParts parts;
  {
    capture::PhaseTimer timer("codegen");
    parts = generate_cpp_parts(program->lowered, program->kernels);
  }
  const std::string source = parts.text();
  trace.stage_done("code generation");
  trace.generated(source);
  std::vector<std::string> symbols;
  for (const Kernel& kernel : program->kernels) symbols.push_back(kernel.name);
  LoadedCode code;
  try {
    code = load_or_build_units(parts, symbols);
  } catch (const Error& e) {
    // Name the kernels the compiler's output points at (all of them when it names none).
    std::string named;
    for (const Kernel& k : program->kernels)
      if (std::string(e.what()).find(k.name) != std::string::npos) named += (named.empty() ? "" : ", ") + k.name;
    if (named.empty())
      for (const Kernel& k : program->kernels) named += (named.empty() ? "" : ", ") + k.name;
    EMBER_FAIL() << "inductor: the generated code of graph " << g.name() << " does not compile (kernel " << named << ")"
                 << (trace.dir() ? "; its files are in " + trace.dir()->string() : "") << "\n"
                 << e.what();
  }
  trace.stage_done(code.cache_hit ? "load (cache hit)" : "C++ compile and load");
  EMBER_LOG_ARTIFACT(output_code) << "Output code written to: " << code.so_path.substr(0, code.so_path.size() - 3)
                                  << ".cpp\n"
                                  << source;
  program->handles = code.handles;
  for (size_t k = 0; k < program->kernels.size(); ++k) {
    const Kernel& kernel = program->kernels[k];
    void* fn = code.symbols[k];
    EMBER_INTERNAL_ASSERT(fn) << "inductor: " << code.so_path << " has no kernel " << kernel.name;
    // A pointwise kernel over size symbols takes their values too (codegen_cpp.cpp).
    const bool takes_symbols = program->symbolic && kernel.symbolic();
    program->fns.push_back(takes_symbols ? nullptr : reinterpret_cast<GeneratedKernelFn>(fn));
    if (program->symbolic) program->sym_fns.push_back(takes_symbols ? reinterpret_cast<SymbolicKernelFn>(fn) : nullptr);
  }
  return finish(program, trace, source, code.so_path, code.cache_hit);
}

namespace {

/// The CUDA graph runner of `p` (compile mode "reduce-overhead"), or null when its graph
/// cannot be captured (logged on `cudagraphs`). See cudagraphs.h.
std::shared_ptr<CudaGraphRunner> cudagraph_runner(const std::shared_ptr<Program>& p) {
  const Graph& g = *p->graph;
  std::string why = why_not_cudagraphs(g);
  const aot::GraphRole& role = aot::current_graph_role();
  const bool training = role.kind != aot::GraphRole::Kind::Inference;
  if (why.empty() && p->profile) why = "kernel profiling (trace.kernel_profile times each step with events)";
  if (why.empty() && !p->raise_after.empty()) why = "an injected runtime error (inject_relu_bug_TESTING_ONLY)";
  if (!why.empty()) {
    log_cudagraphs_skip(g.name(), why);
    return nullptr;
  }
  EMBER_INTERNAL_ASSERT(p->cuda_device >= 0) << "inductor: graph " << g.name() << " has no CPU tensor but no device";
  // A training graph (PyTorch's cudagraph trees capture these too): its inputs are read in place
  // where they stay put (the parameters, which the optimizer updates in place), a
  // backward's saved values where its forward's replays leave them, its tangents (new at
  // each backward) copied; its saved values and gradients are protected while autograd
  // holds them (CudaGraphRunner).
  // An inference graph's inputs it writes (an optimizer's parameters and state) are read
  // and written in place too: copied, each replay would write a static copy and the runtime
  // copy it back.
  std::set<size_t> written;
  for (const aot::InputWrite& w : role.input_writes) written.insert(w.input);
  std::vector<TensorMeta> inputs;
  std::vector<InputUse> uses;
  for (const auto& n : g.nodes())
    if (n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Attribute) {
      inputs.push_back(n->meta().at(0));
      const bool backward = role.kind == aot::GraphRole::Kind::Backward;
      const size_t i = uses.size();
      uses.push_back(backward && i < role.saved_forward_outputs                         ? InputUse::InPlaceFromCapture
                     : backward && i >= role.first_tangent                              ? InputUse::Copied
                     : training || n->kind() == NodeKind::Attribute || written.count(i) ? InputUse::InPlaceIfUnmoved
                                                                                        : InputUse::Copied);
    }
  return std::make_shared<CudaGraphRunner>(
      g.name(), p->cuda_device, std::move(inputs), std::move(uses),
      [p = p.get()](const std::vector<Tensor>& in) { return p->run(in); },
      training ? std::optional<size_t>(role.first_held_output) : std::nullopt);
}

/// The value `w` writes and the input it writes it into, when both exist and the value has
/// the input's geometry, is no other output of the graph, and its writes are the only
/// readers of the input apart from nodes of one kernel (checked by the caller).
std::optional<std::pair<ValueRef, const Node*>> input_write_of(const Graph& g, const aot::InputWrite& w) {
  std::vector<const Node*> inputs;
  for (const auto& n : g.nodes())
    if (n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Attribute) inputs.push_back(n.get());
  const std::vector<Arg>& outs = g.output_node()->args();
  if (w.input >= inputs.size() || w.output >= outs.size() || outs[w.output].kind != Arg::Kind::Value)
    return std::nullopt;
  const ValueRef v = outs[w.output].value;
  size_t returned = 0;
  for (const Arg& a : outs) returned += a.kind == Arg::Kind::Value && a.value == v;
  const TensorMeta& vm = v.node->meta()[v.index];
  const TensorMeta& im = inputs[w.input]->meta()[0];
  const bool same_geometry = vm.sizes == im.sizes && core::strides_equivalent(vm.sizes, vm.strides, im.strides) &&
                             vm.storage_offset == 0 && im.storage_offset == 0 && vm.dtype == im.dtype &&
                             sym_sizes_of(vm) == sym_sizes_of(im) && sym_strides_of(vm) == sym_strides_of(im);
  if (returned != 1 || v.index != 0 || !same_geometry) return std::nullopt;
  return std::make_pair(v, inputs[w.input]);
}

/// The nodes a pointwise kernel stores (its root when it names none).
std::vector<const PointwiseNode*> stored_nodes(const Kernel& k) {
  std::vector<const PointwiseNode*> stored = k.outputs;
  if (stored.empty() && k.root) stored.push_back(k.root);
  return stored;
}

/// Fills Kernel::written_inputs from the input writes AOT autograd lifted out of the graph
/// being compiled (aot::current_graph_role().input_writes): the pointwise kernel storing the
/// value written into an input whose every reader is a node of that kernel. Code
/// generation then tells which of them each output may be stored over.
void mark_input_writes(const Graph& g, std::vector<Kernel>& kernels) {
  const std::vector<aot::InputWrite>& writes = aot::current_graph_role().input_writes;
  if (writes.empty()) return;
  const std::map<const Node*, std::vector<Node*>> users = g.users();
  for (const aot::InputWrite& w : writes) {
    const auto write = input_write_of(g, w);
    if (!write) continue;
    const auto [v, in] = *write;
    for (Kernel& k : kernels) {
      if (k.row) continue;
      const std::vector<const PointwiseNode*> stored = stored_nodes(k);
      const auto o = std::find_if(stored.begin(), stored.end(), [&](const PointwiseNode* s) { return s->node == v.node; });
      if (o == stored.end()) continue;
      bool readers_inside = true;
      if (auto u = users.find(in); u != users.end())
        for (const Node* user : u->second)
          readers_inside = readers_inside && std::any_of(k.nodes.begin(), k.nodes.end(),
                                                         [&](const PointwiseNode* m) { return m->node == user; });
      // A kernel that recomputes a reader of the input (Note [recomputed scalars]) loads it
      // without being among its graph users: it must not find the input written already.
      for (const Kernel& other : kernels)
        if (&other != &k)
          for (const PointwiseNode* m : other.nodes)
            for (const PwOp& op : m->body)
              readers_inside = readers_inside && !(op.kind == PwOp::Kind::Load && op.value.node == in);
      if (readers_inside) k.written_inputs.push_back({in, w.input, static_cast<size_t>(o - stored.begin())});
      break;
    }
  }
}

/// Fills p.writes_input from each kernel's written_inputs (mark_input_writes): the output is
/// stored straight into its input when the kernel does not read the input or reads it only
/// at that output's index map (Kernel::may_alias_output, or may_alias_stored for a kernel of
/// several outputs), so each element is read before it is written. Not under CUDA graphs
/// (their static inputs are copies).
void plan_input_writes(Program& p) {
  p.writes_input.clear();
  for (const Kernel& k : p.kernels) p.writes_input.emplace_back(std::max<size_t>(k.outputs.size(), 1), -1);
  if (p.cudagraphs) return;
  for (size_t kk = 0; kk < p.kernels.size(); ++kk) {
    const Kernel& k = p.kernels[kk];
    for (const Kernel::WrittenInput& w : k.written_inputs) {
      const auto b = std::find(k.inputs.begin(), k.inputs.end(), ValueRef{const_cast<Node*>(w.input), 0});
      bool aliasable = b == k.inputs.end();  // not read by the kernel at all
      if (!aliasable) {
        const int bi = static_cast<int>(b - k.inputs.begin());
        const std::vector<int>& allowed = k.outputs.size() <= 1         ? k.may_alias_output
                                          : w.output < k.may_alias_stored.size() ? k.may_alias_stored[w.output]
                                                                                 : std::vector<int>{};
        aliasable = std::find(allowed.begin(), allowed.end(), bi) != allowed.end();
      }
      if (aliasable) p.writes_input[kk][w.output] = static_cast<int>(w.graph_input);
    }
  }
}

CompiledGraph finish(const std::shared_ptr<Program>& program, GraphTrace& trace, const std::string& source,
                     const std::string& so_path, bool cache_hit) {
  const Graph& g = *program->graph;
  for (size_t k = 0; k < program->kernels.size(); ++k) {
    const Kernel& kernel = program->kernels[k];
    program->kernel_at[kernel.root_node()] = static_cast<int>(k);
    if (injects_relu_runtime_error())
      for (const PointwiseNode* p : kernel.nodes)
        if (p->node->target().rfind("aten::relu", 0) == 0) program->raise_after.insert(static_cast<int>(k));
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) program->index[g.nodes()[i].get()] = i;
  program->dies_after = plan_memory(g, program->index, program->kernels);
  // In place: an input the kernel may write over (codegen's may_alias_output) that dies at
  // the kernel and has the output's geometry.
  for (const Kernel& kernel : program->kernels) {
    const size_t at = program->index.at(kernel.root_node());
    const Node* out_node = !kernel.outputs.empty() ? kernel.outputs[0]->node
                           : kernel.root           ? kernel.root->node
                                                   : kernel.row->node;
    const TensorMeta& out = out_node->meta()[0];
    const auto& dying = program->dies_after[at];
    std::vector<ValueRef> candidates;
    for (int b : kernel.outputs.size() > 1 ? std::vector<int>{} : kernel.may_alias_output) {
      const ValueRef& v = kernel.inputs[b];
      const TensorMeta& m = v.node->meta()[v.index];
      // Over size symbols, the same expressions (equal example values are not enough).
      const bool same_symbols =
          !program->symbolic || (sym_sizes_of(m) == sym_sizes_of(out) && sym_strides_of(m) == sym_strides_of(out));
      if (std::find(dying.begin(), dying.end(), program->index.at(v.node)) != dying.end() && m.sizes == out.sizes &&
          core::strides_equivalent(m.sizes, m.strides, out.strides) && m.storage_offset == 0 && m.dtype == out.dtype &&
          same_symbols)
        candidates.push_back(v);
    }
    program->in_place.push_back(std::move(candidates));
  }
  plan_input_writes(*program);
  program->plan_steps();

  if (trace.dir() && config().inductor.trace.kernel_profile) {
    program->profile = make_profile(*program, *trace.dir() / "kernel_profile.txt");
  }

  CompileReport report;
  report.graph_name = g.name();
  for (const Kernel& k : program->kernels) {
    std::vector<std::string> names;
    for (const PointwiseNode* p : k.nodes) names.push_back(p->node->name());
    if (k.row) names.push_back(k.row->node->name());
    for (const RowNode* r : k.more_rows) names.push_back(r->node->name());
    report.kernels.emplace_back(k.name, std::move(names));
  }
  for (const auto& n : g.nodes())
    if (n->kind() == NodeKind::Call && program->lowered.roles.at(n.get()) == NodeRole::Extern &&
        !program->absorbed.count(n.get()) && !program->linear_at.count(n.get()))
      report.extern_calls.push_back(n->target());
  for (const FrozenLinear& l : program->linears) report.frozen_linears.push_back(l.text);
  report.source = source;
  report.host_constants = program->host_constants;
  report.so_path = so_path;
  report.cache_hit = cache_hit;
  {
    std::lock_guard lock(g_report_mu);
    g_last_report = std::move(report);
  }
  trace.finished(g, program->lowered, program->kernels, cache_hit);
  EMBER_LOG(inductor, INFO) << "Step 3: torchinductor done compiling graph " << g.name() << " ("
                            << program->kernels.size() << " kernels)";

  std::shared_ptr<CudaGraphRunner> runner = program->cudagraphs ? cudagraph_runner(program) : nullptr;
  return [program, runner](const std::vector<Tensor>& inputs) -> std::vector<Tensor> {
    const Graph& g = *program->graph;
    EMBER_CHECK_VALUE(inputs.size() == program->num_inputs)
        << "graph " << g.name() << " takes " << program->num_inputs << " inputs, got " << inputs.size();
    // Generated kernels record no autograd history. "inductor" runs AOT autograd first,
    // whose forward and backward graphs run here under no_grad; a graph given to
    // "inductor_inner" directly (a repro cut after AOT) whose results eager would give a
    // grad_fn runs in the interpreter instead. Note [capture], "Interpreted graphs".
    if (auto why = graph::why_autograd_records(g, inputs)) {
      capture::warn_interpreted(g.name(), *why +
                                              "; inductor_inner compiles graphs that record no history (the "
                                              "\"inductor\" backend compiles training graphs through AOT "
                                              "autograd)");
      return run_graph(g, inputs);
    }
    return runner ? (*runner)(inputs) : program->run(inputs);
  };
}

/// The CUDA half of compile_fx_inner: CUDA source for the kernels, NVRTC (or the cubin
/// cache) for the device's architecture, the module loaded, the launch plan kept.
CompiledGraph finish_cuda(const std::shared_ptr<Program>& program, GraphTrace& trace) {
  const Graph& g = *program->graph;
  const CudaCode code =
      generate_cuda(program->lowered, program->kernels, program->symbolic ? program->symbols.num_symbols : 0);
  const std::string text = code.source + "\n/*\n" + launch_plan_text(program->kernels, code) + "*/\n";
  trace.stage_done("code generation");
  trace.generated_cuda(text);
  std::vector<std::string> symbols;
  for (const CudaLaunch& l : code.launches) symbols.push_back(l.symbol);
  for (const CudaLaunch& l : code.launches)
    if (!l.split_symbol.empty()) symbols.push_back(l.split_symbol);
  kernels::cuda::CubinResult cubin;
  try {
    const auto [major, minor] = ember::cuda::get_device_capability(program->cuda_device);
    cubin = kernels::cuda::compile_cubin(code.source, "sm_" + std::to_string(major) + std::to_string(minor));
    std::vector<void*> fns = kernels::cuda::get_kernels(code.source, symbols, program->cuda_device);
    size_t next_split = code.launches.size();
    for (size_t k = 0; k < code.launches.size(); ++k) {
      program->cuda_fns.push_back(fns[k]);
      program->split_fns.push_back(code.launches[k].split_symbol.empty() ? nullptr : fns[next_split++]);
    }
  } catch (const std::exception& e) {
    EMBER_FAIL() << "inductor: the generated CUDA code of graph " << g.name() << " does not compile or load"
                 << (trace.dir() ? "; its files are in " + trace.dir()->string() : "") << "\n"
                 << e.what();
  }
  trace.stage_done(cubin.from_cache ? "load (cache hit)" : "NVRTC compile and load");
  EMBER_LOG_ARTIFACT(output_code) << "Output code (cuda:" << program->cuda_device << ") compiled to: " << cubin.path
                                  << "\n"
                                  << text;
  program->launches = code.launches;
  program->chosen = std::vector<std::atomic<int>>(code.launches.size());
  for (std::atomic<int>& c : program->chosen) c.store(-1);
  if (trace.dir()) program->tuning_trace = *trace.dir() / "launch_tuning.txt";
  return finish(program, trace, text, cubin.path, cubin.from_cache);
}

}  // namespace

CompileReport last_compile_report() {
  std::lock_guard lock(g_report_mu);
  return g_last_report;
}

}  // namespace ember::inductor

namespace ember::inductor {

void register_inductor_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::vector<std::string> known = list_backends();
    if (std::find(known.begin(), known.end(), "inductor") != known.end()) return;
    // "inductor" compiles a graph over its size symbols or specializes them while it
    // compiles (inductor/symbolic.h); "aot_eager" interprets.
    register_backend("inductor", with_symbolic_sizes([](Graph& g, const std::vector<Tensor>& examples) {
                       return inductor::compile_graph(g, examples);
                     }));
    // The code generator alone, for graphs already through the AOT stage: what
    // TORCHDYNAMO_REPRO_AFTER=aot launchers and repros run (PyTorch's compile_fx_inner).
    register_backend("inductor_inner", [](Graph& g, const std::vector<Tensor>& examples) {
      return inductor::compile_fx_inner(g, examples);
    });
    // The AOT stage, then the interpreter: isolates the stage when a compiled result is wrong.
    register_backend("aot_eager", with_symbolic_sizes([](Graph& g, const std::vector<Tensor>& examples) {
                       return aot::aot_compile(
                           g, examples,
                           [](Graph& prepared, const std::vector<Tensor>&) { return eager_backend(prepared); }, "eager");
                     }));
  });
}

}  // namespace ember::inductor
