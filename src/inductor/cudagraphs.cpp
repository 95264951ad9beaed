// inductor/cudagraphs.cpp — the capture decision and the CUDA graph runner of
// cudagraphs.h. The CUDA runtime is reached only through core/cuda_runtime.h.
#include "inductor/cudagraphs.h"

#include <sstream>
#include <unordered_map>

#include "capture/compile_mode.h"
#include "core/cuda_runtime.h"
#include "core/shape.h"
#include "ember/autograd.h"
#include "ember/config.h"
#include "ember/cuda.h"
#include "ember/ops/creation.h"
#include "inductor/symbolic.h"
#include "ops/registry.h"
#include "support/logging.h"

namespace ember::inductor {
namespace {

/// A new handle of `t`'s memory and geometry, without autograd history.
Tensor alias_of(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->autograd_meta.reset();
  impl->view_base.reset();
  impl->is_view = false;
  return Tensor(std::move(impl));
}

bool is_input(const Node& n) { return n.kind() == NodeKind::Placeholder || n.kind() == NodeKind::Attribute; }

/// The node whose buffer `n`'s value lives in: `n` itself, or for a view the base it views.
const Node& buffer_owner(const Node& n) {
  const Node* at = &n;
  while (at->kind() == NodeKind::Call && at->op() && at->op()->kind == ops::OpKind::View && !at->args().empty() &&
         at->args()[0].kind == Arg::Kind::Value)
    at = at->args()[0].value.node;
  return *at;
}

/// Calls whose values the host reads (a scalar out of a tensor, a size computed from values,
/// a bool mask's coordinates for index_put): the wrapper synchronizes with the device there.
bool reads_on_host(const Node& n) {
  const ops::OpDef& op = *n.op();
  if (op.kind == ops::OpKind::Dynamic || op.reads_on_host || op.name == "aten::_local_scalar_dense" ||
      op.name == "aten::item")
    return true;
  if (!op.host_indices) return false;
  for (const Arg& a : n.args())
    if (a.kind == Arg::Kind::ValueList)
      for (const auto& v : a.values)
        if (v && (v->node->meta()[v->index].dtype == kBool || v->node->meta()[v->index].dtype == kUInt8)) return true;
  return false;
}

std::string call_text(const Node& n) { return "%" + n.name() + ", " + n.target(); }

/// The stream this thread captures on for `device`: created once, used for nothing else.
void* capture_stream(int device) {
  thread_local std::unordered_map<int, void*> streams;
  auto it = streams.find(device);
  if (it == streams.end()) it = streams.emplace(device, ember::cuda::Stream::create(device).handle()).first;
  return it->second;
}

std::string geometry(ScalarType dtype, IntArrayRef sizes, Device device) {
  std::ostringstream os;
  os << dtype_name(dtype) << " " << sizes << " on " << device;
  return os.str();
}

}  // namespace

bool cudagraphs_wanted() {
  const capture::CompileMode mode = capture::current_compile_mode();
  return mode == capture::CompileMode::ReduceOverhead || mode == capture::CompileMode::MaxAutotune ||
         config().inductor.cudagraphs;
}

std::string why_not_cudagraphs(const Graph& g) {
  for (const auto& n : g.nodes())
    if (is_input(*n) && (n->meta().size() != 1 || n->meta()[0].undefined)) return "non-tensor input (%" + n->name() + ")";
  // CPU inputs change from call to call and CPU outputs are written by the host: neither
  // can be replayed. A CPU constant (or a value computed from constants), read on the host
  // by a CUDA op, is the same at every call; should an op copy it to the device, the copy
  // refuses to be captured (cuda_runtime.cpp) and the capture fails safely.
  auto on_cpu = [](const TensorMeta& m) { return !m.undefined && m.device.type == DeviceType::CPU; };
  for (const auto& n : g.nodes())
    if (is_input(*n) && on_cpu(n->meta()[0])) return "cpu device (%" + n->name() + ")";
  if (const Node* out = g.output_node())
    for (const Arg& a : out->args())
      if (a.kind == Arg::Kind::Value && on_cpu(a.value.node->meta()[a.value.index]))
        return "cpu device (%" + a.value.node->name() + ")";
  for (const auto& n : g.nodes())
    for (const TensorMeta& m : n->meta())
      if (has_symbols(m)) return "dynamic shapes (%" + n->name() + ")";
  for (const auto& n : g.nodes()) {
    if (n->kind() != NodeKind::Call || !n->op()) continue;
    const ops::OpDef& op = *n->op();
    if (reads_on_host(*n)) return "host sync (" + call_text(*n) + ")";
    if (op.nondeterministic_seeded) return "random op (" + call_text(*n) + ")";
    if (op.kind == ops::OpKind::InPlace && !n->args().empty() && n->args()[0].kind == Arg::Kind::Value &&
        is_input(buffer_owner(*n->args()[0].value.node)))
      return "mutated inputs (" + call_text(*n) + ")";
  }
  if (const Node* out = g.output_node()) {
    for (const Arg& a : out->args()) {
      if (a.kind != Arg::Kind::Value) continue;
      const Node& owner = buffer_owner(*a.value.node);
      if (is_input(owner)) return "output aliases input (%" + owner.name() + ")";
    }
  }
  return {};
}

void log_cudagraphs_skip(const std::string& graph, const std::string& reason) {
  EMBER_LOG_ARTIFACT(cudagraphs) << "skipping cudagraphs due to " << reason << "; graph " << graph
                                 << " runs without CUDA graphs";
}

CudaGraphRunner::CudaGraphRunner(std::string graph_name, int device, std::vector<TensorMeta> inputs,
                                 std::vector<InputUse> uses, Run run, std::optional<size_t> held_outputs_from)
    : graph_name_(std::move(graph_name)),
      device_(device),
      input_metas_(std::move(inputs)),
      run_(std::move(run)),
      uses_(std::move(uses)),
      held_outputs_from_(held_outputs_from) {
  EMBER_INTERNAL_ASSERT(uses_.size() == input_metas_.size());
  for (InputUse u : uses_) in_place_.push_back(u != InputUse::Copied);
}

CudaGraphRunner::~CudaGraphRunner() {
  if (!exec_) return;
  // A replay may still run on some stream: wait for the device before its blocks go back.
  try {
    core::cuda_rt::device_synchronize(device_);
    core::cuda_rt::graph_exec_destroy(exec_);
  } catch (const Error&) {
  }
}

bool CudaGraphRunner::copy_inputs(const std::vector<Tensor>& inputs, size_t* moved) {
  EMBER_CHECK_VALUE(inputs.size() == static_inputs_.size())
      << "graph " << graph_name_ << " takes " << static_inputs_.size() << " inputs, got " << inputs.size();
  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    Tensor& s = static_inputs_[i];
    const TensorMeta& m = input_metas_[i];
    const Device device(DeviceType::CUDA, static_cast<int8_t>(device_));
    EMBER_CHECK(t.defined() && t.sizes() == IntArrayRef(m.sizes) && t.dtype() == m.dtype && t.device() == device)
        << "inductor: input " << i << " of graph " << graph_name_ << " is "
        << (t.defined() ? geometry(t.dtype(), t.sizes(), t.device()) : "undefined")
        << ", but its CUDA graph was captured for " << geometry(m.dtype, m.sizes, device);
    // An input read in place from the capture on is compared with what the capture read
    // (the runner does not hold it); any other with its static tensor.
    const bool same = s.defined()
                          ? t.storage() == s.storage() && t.storage_offset() == s.storage_offset() &&
                                core::strides_equivalent(m.sizes, t.strides(), s.strides())
                          : captured_unheld_[i].is(t) && core::strides_equivalent(m.sizes, t.strides(), m.strides);
    if (same) continue;
    if (in_place_[i]) {
      if (moved) *moved = i;
      return false;
    }
    s.copy_(t);
  }
  return true;
}

void CudaGraphRunner::retire_graph() {
  core::cuda_rt::device_synchronize(device_);
  core::cuda_rt::graph_exec_destroy(exec_);
  exec_ = nullptr;
  retired_pools_.push_back(std::move(pool_));
}

bool CudaGraphRunner::capture(const std::vector<Tensor>& inputs) {
  static_inputs_.clear();
  size_t in_place = 0;
  for (size_t i = 0; i < input_metas_.size(); ++i) {
    const TensorMeta& m = input_metas_[i];
    const Tensor& t = inputs[i];
    // An input read in place has the recorded geometry and, unless its use reads it in
    // place from the capture on, was at this address in the warm-up.
    in_place_[i] = in_place_[i] && t.defined() && (uses_[i] == InputUse::InPlaceFromCapture || first_seen_[i].is(t)) &&
                   t.sizes() == IntArrayRef(m.sizes) && t.dtype() == m.dtype &&
                   core::strides_equivalent(m.sizes, t.strides(), m.strides);
    in_place += in_place_[i];
    static_inputs_.push_back(in_place_[i] ? t
                                          : empty_strided(m.sizes, m.strides,
                                                          TensorOptions(m.dtype).device(
                                                              core::cuda::normalize_device(m.device))));
  }
  copy_inputs(inputs);
  pool_ = std::make_unique<core::cuda::GraphPool>(device_);
  void* stream = capture_stream(device_);
  void* graph = nullptr;
  std::string error;
  {
    ember::cuda::StreamGuard on_capture(ember::cuda::Stream(device_, stream));
    core::cuda::GraphPoolScope in_pool(*pool_);
    try {
      core::cuda_rt::stream_begin_capture(stream);
      static_outputs_ = run_(static_inputs_);
      graph = core::cuda_rt::stream_end_capture(stream, &error);
    } catch (const std::exception& e) {
      error = e.what();
      std::string ignored;
      if (core::cuda_rt::stream_is_capturing(stream))
        if (void* g = core::cuda_rt::stream_end_capture(stream, &ignored)) core::cuda_rt::graph_destroy(g);
    }
  }
  // The saved values a backward reads in place are not kept alive by it: the forward's
  // runner holds their memory, and whether autograd still holds them is what its
  // outputs_held() asks.
  captured_unheld_.assign(static_inputs_.size(), Seen{});
  for (size_t i = 0; graph && i < static_inputs_.size(); ++i)
    if (in_place_[i] && uses_[i] == InputUse::InPlaceFromCapture) {
      captured_unheld_[i] = Seen{static_inputs_[i].storage(), static_inputs_[i].storage_offset()};
      static_inputs_[i] = Tensor();
    }
  if (graph && held_outputs_from_) {
    // What holds each protected output's storage now is the runner's own: its static outputs
    // over it, and the bases of those that are views (a weight's gradient as the transpose
    // of a product).
    own_storage_refs_.clear();
    for (size_t i = *held_outputs_from_; i < static_outputs_.size(); ++i)
      own_storage_refs_.push_back(static_outputs_[i].defined() ? static_outputs_[i].storage().use_count() : 0);
  }
  if (graph) {
    try {
      const size_t nodes = core::cuda_rt::graph_node_count(graph);
      exec_ = core::cuda_rt::graph_instantiate(graph);
      EMBER_LOG_ARTIFACT(cudagraphs) << "recorded a CUDA graph of graph " << graph_name_ << " on cuda:" << device_
                                     << ": " << nodes << " nodes, " << core::cuda::format_size(pool_->bytes())
                                     << " in its memory pool, " << static_inputs_.size() << " inputs ("
                                     << in_place << " read in place, " << static_inputs_.size() - in_place
                                     << " copied into static buffers)";
    } catch (const std::exception& e) {
      error = e.what();
    }
    core::cuda_rt::graph_destroy(graph);
  }
  if (exec_) return true;
  // Nothing of the failed capture ran: its blocks and buffers can go back at once.
  static_outputs_.clear();
  static_inputs_.clear();
  pool_.reset();
  failed_ = true;
  log_cudagraphs_skip(graph_name_, "a failed capture: " + error);
  return false;
}

bool CudaGraphRunner::outputs_held() const {
  for (size_t i = *held_outputs_from_, k = 0; i < static_outputs_.size(); ++i, ++k)
    if (static_outputs_[i].defined() && static_outputs_[i].storage().use_count() > own_storage_refs_[k]) return true;
  return false;
}

std::vector<Tensor> CudaGraphRunner::operator()(const std::vector<Tensor>& inputs) {
  std::lock_guard lock(mu_);
  if (failed_) return run_(inputs);
  if (!warmed_up_) {
    std::vector<Tensor> out = run_(inputs);  // a warm-up that raised is tried again
    for (const Tensor& t : inputs) first_seen_.push_back(t.defined() ? Seen{t.storage(), t.storage_offset()} : Seen{});
    warmed_up_ = true;
    return out;
  }
  ember::cuda::DeviceGuard on_device(device_);
  if (exec_ && held_outputs_from_ && outputs_held()) {
    if (!logged_held_) {
      EMBER_LOG_ARTIFACT(cudagraphs) << "graph " << graph_name_
                                     << ": values of its last replay are still in use (saved for a backward that "
                                        "has not run, or a gradient still in a grad slot); calls run without the "
                                        "CUDA graph while they are";
      logged_held_ = true;
    }
    return run_(inputs);
  }
  size_t moved = 0;
  if (exec_ && !copy_inputs(inputs, &moved)) {
    EMBER_LOG_ARTIFACT(cudagraphs) << "re-recording the CUDA graph of graph " << graph_name_ << ": input " << moved
                                   << ", read in place, came at another address; it is copied from now on";
    in_place_[moved] = false;
    retire_graph();
  }
  if (!exec_ && !capture(inputs)) return run_(inputs);
  core::cuda_rt::graph_launch(exec_, core::cuda::current_stream_handle(device_));
  if (!held_outputs_from_) return static_outputs_;
  // A training graph's outputs go to autograd: aliases, whose release the runner can see.
  std::vector<Tensor> out;
  out.reserve(static_outputs_.size());
  for (const Tensor& o : static_outputs_) out.push_back(o.defined() ? alias_of(o) : o);
  return out;
}

}  // namespace ember::inductor
