// inductor/trace.cpp — the TORCH_COMPILE_DEBUG files of one compiled graph, the stage
// timings, config().inductor.debug's stderr output, and the ir_pre/post_fusion dumps.
// See Note [inductor] (docs/notes/inductor.md), "The trace directory".
#include "inductor/trace.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "aot/aot.h"
#include "ember/config.h"
#include "ember/graph.h"
#include "support/compile_debug.h"
#include "support/logging.h"

namespace ember::inductor {
namespace {

namespace fs = std::filesystem;

// PyTorch's per-process counters: n numbers the graphs handed to AOT/inductor, k the
// forward graphs (from 1), m the debug directories.
std::atomic<int> g_aot_id{0};
std::atomic<int> g_forward_id{1};
std::atomic<int> g_debug_id{0};

std::string file_name_part(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') ? c : '_';
  return out.empty() ? "model" : out;
}

/// Names buffers as PyTorch does (buf0, buf1, … for computed nodes) and graph inputs by name.
class BufferNames {
 public:
  BufferNames(const Graph& g, const LoweredGraph& lowered) : lowered_(lowered) {
    int next = 0;
    for (const auto& n : g.nodes()) {
      auto r = lowered.roles.find(n.get());
      if (r != lowered.roles.end() && r->second != NodeRole::View) names_[n.get()] = "buf" + std::to_string(next++);
    }
  }
  /// The buffer a value lives in: views are followed to their base.
  const Node* base(const Node* n) const {
    while (true) {
      auto r = lowered_.roles.find(n);
      if (r == lowered_.roles.end() || r->second != NodeRole::View || n->args().empty() ||
          n->args()[0].kind != Arg::Kind::Value)
        return n;
      n = n->args()[0].value.node;
    }
  }
  std::string name(const Node* n) const {
    n = base(n);
    auto it = names_.find(n);
    return it != names_.end() ? it->second : n->name();
  }
  bool computed(const Node* n) const { return names_.count(base(n)) > 0; }

 private:
  const LoweredGraph& lowered_;
  std::map<const Node*, std::string> names_;
};

std::string tuple_text(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += std::to_string(v[i]) + (v.size() == 1 ? "," : i + 1 < v.size() ? ", " : "");
  return s + ")";
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string index_text(const std::vector<int64_t>& strides) {
  std::string s;
  for (size_t d = 0; d < strides.size(); ++d) {
    if (strides[d] == 0) continue;
    if (!s.empty()) s += " + ";
    s += (strides[d] == 1 ? "" : std::to_string(strides[d]) + "*") + "c" + std::to_string(d);
  }
  return s.empty() ? "0" : s;
}

std::string ranges_text(const std::vector<int64_t>& sizes) {
  std::string s = "{";
  for (size_t d = 0; d < sizes.size(); ++d) s += (d ? ", c" : "c") + std::to_string(d) + ": " + std::to_string(sizes[d]);
  return s + "}";
}

std::string memory_dep(const std::string& name, const std::vector<int64_t>& strides, const std::vector<int64_t>& sizes) {
  return "MemoryDep('" + name + "', " + index_text(strides) + ", " + ranges_text(sizes) + ")";
}

std::string join(const std::set<std::string>& items) {
  std::string s = "[";
  bool first = true;
  for (const std::string& i : items) {
    s += (first ? "" : ", ") + i;
    first = false;
  }
  return s + "]";
}

std::string device_text(const Node& n) {
  return n.meta().empty() ? "cpu" : n.meta()[0].device.type == DeviceType::CPU ? "cpu" : "other";
}

/// Loads of `nodes` from outside `members`, split into met (graph inputs) and unmet
/// (buffers other scheduler nodes compute).
void pointwise_deps(const BufferNames& names, const std::vector<const PointwiseNode*>& nodes,
                    const std::set<const Node*>& members, std::set<std::string>& met, std::set<std::string>& unmet) {
  for (const PointwiseNode* p : nodes) {
    for (const PwOp& op : p->body) {
      if (op.kind != PwOp::Kind::Load || members.count(op.value.node)) continue;
      (names.computed(op.value.node) ? unmet : met).insert(memory_dep(names.name(op.value.node), op.strides, p->sizes));
    }
  }
}

std::string loop_body(const std::string& buf, const PointwiseNode& p) {
  std::ostringstream os;
  os << "class " << buf << "_loop_body:\n    var_ranges = " << ranges_text(p.sizes) << "\n";
  std::istringstream body(to_string(p));
  std::string line;
  while (std::getline(body, line)) os << "    " << line << "\n";
  return os.str();
}

std::string write_dep(const std::string& buf, const PointwiseNode& p) {
  const TensorMeta& m = p.node->meta()[0];
  std::vector<int64_t> strides(p.sizes.size(), 0);
  for (size_t d = 0; d < p.sizes.size() && d < m.strides.size(); ++d)
    if (p.sizes[d] != 1) strides[d] = m.strides[d];
  return memory_dep(buf, strides, p.sizes);
}

void write_scheduler_node(std::ostream& os, const BufferNames& names, const PointwiseNode& p) {
  const std::string buf = names.name(p.node);
  std::set<std::string> met, unmet;
  pointwise_deps(names, {&p}, {p.node}, met, unmet);
  os << buf << ": SchedulerNode(ComputedBuffer)  # %" << p.node->name() << " = " << p.node->target() << "\n"
     << buf << ".writes = [" << write_dep(buf, p) << "]\n"
     << buf << ".unmet_dependencies = " << join(unmet) << "\n"
     << buf << ".met_dependencies = " << join(met) << "\n"
     << buf << ".group.device = " << device_text(*p.node) << "\n"
     << buf << ".group.iteration = (" << tuple_text(p.sizes) << ", ())\n"
     << buf << ".sizes = (" << list_text(p.sizes) << ", [])\n"
     << buf << ".dtype = " << scalar_type_name(p.dtype) << "\n"
     << loop_body(buf, p) << "\n\n";
}

void write_extern_node(std::ostream& os, const BufferNames& names, const Node& n) {
  const std::string buf = names.name(&n);
  std::set<std::string> met, unmet;
  auto add = [&](const Node* v) { (names.computed(v) ? unmet : met).insert("StarDep(name='" + names.name(v) + "')"); };
  for (const Arg& a : n.args()) {
    if (a.kind == Arg::Kind::Value) add(a.value.node);
    if (a.kind == Arg::Kind::ValueList)
      for (const auto& v : a.values)
        if (v) add(v->node);
  }
  os << buf << ": ExternKernelSchedulerNode(FallbackKernel)  # %" << n.name() << " = " << n.target() << "\n"
     << buf << ".writes = [StarDep(name='" << buf << "')]\n"
     << buf << ".unmet_dependencies = " << join(unmet) << "\n"
     << buf << ".met_dependencies = " << join(met) << "\n"
     << buf << ".node.kernel = " << n.target() << "\n\n\n";
}

int64_t numel_of(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

/// A reduction row node: its buffer, dependencies (its node's tensor arguments), the
/// iteration group (the kept dims) and the reduction range (the reduced dims), and its body.
void write_row_node(std::ostream& os, const BufferNames& names, const RowNode& r, const std::string& kernel) {
  const std::string buf = names.name(r.node);
  std::set<std::string> met, unmet;
  for (const Arg& a : r.node->args()) {
    if (a.kind != Arg::Kind::Value) continue;
    const Node* v = a.value.node;
    (names.computed(v) ? unmet : met).insert("StarDep(name='" + names.name(v) + "')");
  }
  // The kept dims are the iteration group, the reduced dims the reduction range.
  std::vector<int64_t> rows, range;
  for (size_t d = 0; d < r.in_sizes.size(); ++d) (r.reduced[d] ? range : rows).push_back(r.in_sizes[d]);
  os << (kernel.empty() ? "" : "# kernel " + kernel + "\n") << buf << ": SchedulerNode(ComputedBuffer)  # %"
     << r.node->name() << " = " << r.node->target() << " (" << row_kind_name(r.kind) << " " << row_dims_text(r) << ")\n"
     << buf << ".writes = [MemoryDep('" << buf << "', c0, {c0: " << numel_of(r.out_sizes) << "})]\n"
     << buf << ".unmet_dependencies = " << join(unmet) << "\n"
     << buf << ".met_dependencies = " << join(met) << "\n"
     << buf << ".group.device = " << device_text(*r.node) << "\n"
     << buf << ".group.iteration = (" << tuple_text(rows) << ", " << tuple_text(range) << ")\n"
     << buf << ".sizes = (" << list_text(rows) << ", " << list_text(range) << ")\n"
     << buf << ".dtype = " << scalar_type_name(r.dtype) << "\n"
     << "class " << buf << "_loop_body:\n" << to_string(r) << "\n\n";
}

const char* kIrHeader =
    "# Scheduler nodes (buffer, writes, unmet dependencies on other nodes' buffers, met\n"
    "# dependencies on graph inputs, device, iteration group, sizes, loop body).\n"
    "# Indices are element offsets over the iteration variables c0, c1, ...\n\n";

}  // namespace

std::string ir_pre_fusion_text(const Graph& g, const LoweredGraph& lowered) {
  const BufferNames names(g, lowered);
  std::ostringstream os;
  os << kIrHeader;
  for (const auto& n : g.nodes()) {
    auto r = lowered.roles.find(n.get());
    if (r == lowered.roles.end()) continue;
    if (r->second == NodeRole::Pointwise) write_scheduler_node(os, names, lowered.pointwise.at(n.get()));
    if (r->second == NodeRole::Row) write_row_node(os, names, lowered.rows.at(n.get()), "");
    if (r->second == NodeRole::Extern) write_extern_node(os, names, *n);
  }
  return os.str();
}

std::string ir_post_fusion_text(const Graph& g, const LoweredGraph& lowered, const std::vector<Kernel>& kernels) {
  const BufferNames names(g, lowered);
  std::map<const Node*, const Kernel*> kernel_of_root;
  for (const Kernel& k : kernels) kernel_of_root[k.root_node()] = &k;
  std::ostringstream os;
  os << kIrHeader;
  for (const auto& n : g.nodes()) {
    auto r = lowered.roles.find(n.get());
    if (r == lowered.roles.end()) continue;
    if (r->second == NodeRole::Extern) write_extern_node(os, names, *n);
    auto k = kernel_of_root.find(n.get());
    if (k == kernel_of_root.end()) continue;
    const Kernel& kernel = *k->second;
    if (kernel.row) {  // a row kernel: the reduction, then its fused prologue/epilogue bodies
      write_row_node(os, names, *kernel.row, kernel.name);
      for (const RowNode* more : kernel.more_rows) write_row_node(os, names, *more, kernel.name);
      for (const PointwiseNode* p : kernel.nodes) os << loop_body(names.name(p->node), *p);
      os << "\n";
      continue;
    }
    if (kernel.nodes.size() == 1) {
      os << "# kernel " << kernel.name << "\n";
      write_scheduler_node(os, names, *kernel.root);
      continue;
    }
    const std::string buf = names.name(kernel.root->node);
    std::set<const Node*> members;
    std::string snodes;
    for (const PointwiseNode* p : kernel.nodes) {
      members.insert(p->node);
      snodes += (snodes.empty() ? "" : ", ") + names.name(p->node);
    }
    std::set<std::string> met, unmet;
    pointwise_deps(names, kernel.nodes, members, met, unmet);
    const PointwiseNode& root = *kernel.root;
    std::string writes;
    for (const PointwiseNode* p : kernel.outputs.empty() ? std::vector<const PointwiseNode*>{&root} : kernel.outputs)
      writes += (writes.empty() ? "" : ", ") + write_dep(names.name(p->node), *p);
    os << buf << ": FusedSchedulerNode(NoneType)  # kernel " << kernel.name
       << (kernel.outputs.size() > 1 ? " (" + std::to_string(kernel.outputs.size()) + " outputs)" : "") << "\n"
       << buf << ".writes = [" << writes << "]\n"
       << buf << ".unmet_dependencies = " << join(unmet) << "\n"
       << buf << ".met_dependencies = " << join(met) << "\n"
       << buf << ".snodes = [" << snodes << "]\n"
       << buf << ".group.device = " << device_text(*root.node) << "\n"
       << buf << ".group.iteration = (" << tuple_text(root.sizes) << ", ())\n"
       << buf << ".sizes = (" << list_text(root.sizes) << ", [])\n";
    for (const PointwiseNode* p : kernel.nodes) os << loop_body(names.name(p->node), *p);
    os << "\n\n";
  }
  return os.str();
}

GraphTrace::GraphTrace(const Graph& g) : start_(std::chrono::steady_clock::now()), last_(start_) {
  const Config::Inductor& cfg = config().inductor;
  if (cfg.debug) {
    // Lines stderr already shows (TORCH_LOGS naming inductor) are not printed twice.
    const bool shown = logging::current_spec().find("inductor") != std::string::npos ||
                       logging::current_spec().find("all") != std::string::npos;
    stderr_debug_ = std::make_unique<logging::ScopedSink>(
        [shown](const logging::Record& r) {
          if (r.level >= logging::Level::kWarning || (shown && r.channel == "inductor")) return;
          std::cerr << r.text;
        },
        "+inductor,schedule,output_code");
  }
  const std::optional<fs::path> run = compile_debug::run_dir();
  if (!run) return;
  std::string model = file_name_part(g.name());
  // The AOT stage numbers its compiled functions and says whether this graph is a
  // training graph's backward (aot/aot.h).
  const aot::GraphRole& role = aot::current_graph_role();
  const int n = role.aot_id >= 0 ? role.aot_id : g_aot_id++;
  const bool backward = role.kind == aot::GraphRole::Kind::Backward;
  // The backward graph is named after its forward ("<name>_backward"): one model name.
  if (const std::string suffix = "_backward"; backward && model.size() > suffix.size() &&
                                              model.compare(model.size() - suffix.size(), suffix.size(), suffix) == 0)
    model.resize(model.size() - suffix.size());
  const int k = g_forward_id++;
  const int m = g_debug_id++;
  const fs::path inductor_dir = *run / "torchinductor";
  dir_ = inductor_dir / (model + "__" + std::to_string(n) + (backward ? "_backward_" : "_forward_") +
                         std::to_string(k) + "." + std::to_string(m));
  std::error_code ec;
  fs::create_directories(*dir_, ec);
  EMBER_CHECK(!ec) << "TORCH_COMPILE_DEBUG: cannot create " << dir_->string() << ": " << ec.message();

  // The AOT stage ran before this compile (aot/aot.h): its log holds the forward graph it
  // produced (functionalized and decomposed; inference graphs have no backward) and any
  // `aot` lines of the compile.
  // A training graph's backward is compiled after its forward: its lines follow the forward's.
  auto aot = std::make_shared<std::ofstream>(inductor_dir / ("aot_" + model + "_" + std::to_string(n) + "_debug.log"),
                                             backward ? std::ios::app : std::ios::out);
  *aot << (backward ? "AOT backward graph " : "AOT forward graph ") << model << " " << n
       << " (functionalized and decomposed; compiled in " << dir_->filename().string() << "):\n"
       << to_string(g) << "\n";
  aot->flush();
  aot_log_ = std::make_unique<logging::ScopedSink>(
      [aot](const logging::Record& r) {
        *aot << r.text;
        aot->flush();
      },
      "+aot");
  const Config::Inductor::Trace& t = cfg.trace;
  if (t.debug_log) {
    auto log = std::make_shared<std::ofstream>(*dir_ / "debug.log");
    debug_log_ = std::make_unique<logging::ScopedSink>(
        [log](const logging::Record& r) {
          *log << r.text;
          log->flush();
        },
        "+inductor,schedule,fusion,perf_hints");
  }
  if (t.fx_graph) {
    write("fx_graph_readable.txt", to_string(g));
    write("fx_graph_runnable.cpp", to_runnable_cpp(g));
  }
}

void GraphTrace::transformed(const Graph& g) {
  if (!dir_ || !config().inductor.trace.fx_graph_transformed) return;
  write("fx_graph_transformed.txt",
        "# The graph as inductor lowers it: fx_graph_readable.txt after inductor's graph passes\n"
        "# (src/inductor/graph_passes.cpp).\n" +
            to_string(g));
}

GraphTrace::~GraphTrace() = default;

void GraphTrace::write(const std::string& file, const std::string& text) {
  if (!dir_) return;
  compile_debug::write_text(*dir_ / file, text);
  EMBER_LOG(inductor, DEBUG) << "TORCH_COMPILE_DEBUG: wrote " << (*dir_ / file).string();
}

void GraphTrace::stage_done(const std::string& stage) {
  const auto now = std::chrono::steady_clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
  last_ = now;
  stages_.emplace_back(stage, ms);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  EMBER_LOG(inductor, DEBUG) << "stage " << stage << ": " << buf << " ms";
}

void GraphTrace::lowered(const Graph& g, const LoweredGraph& lowered) {
  if (dir_ && config().inductor.trace.ir_pre_fusion) write("ir_pre_fusion.txt", ir_pre_fusion_text(g, lowered));
}

void GraphTrace::scheduled(const Graph& g, const LoweredGraph& lowered, const std::vector<Kernel>& kernels) {
  if (dir_ && config().inductor.trace.ir_post_fusion)
    write("ir_post_fusion.txt", ir_post_fusion_text(g, lowered, kernels));
}

void GraphTrace::generated(const std::string& source) {
  if (dir_ && config().inductor.trace.output_code) write("output_code.cpp", source);
}

void GraphTrace::generated_cuda(const std::string& source) {
  if (dir_ && config().inductor.trace.output_code) write("output_code.cu", source);
}

void GraphTrace::finished(const Graph& g, const LoweredGraph& lowered, const std::vector<Kernel>& kernels,
                          bool cache_hit) {
  const double total = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  std::ostringstream timings;
  for (const auto& [stage, ms] : stages_) timings << "  " << stage << ": " << ms << " ms\n";
  EMBER_LOG(inductor, DEBUG) << "compiled graph " << g.name() << " in " << total << " ms (" << kernels.size()
                             << " kernels, " << (cache_hit ? "cache hit" : "built") << ")\n"
                             << timings.str();
  if (!dir_) return;
  const Config::Inductor::Trace& t = config().inductor.trace;
  if (t.compile_profile) {
    std::ostringstream os;
    os << "# compile profile of graph " << g.name() << "\nstage,ms\n";
    for (const auto& [stage, ms] : stages_) os << stage << "," << ms << "\n";
    os << "total," << total << "\n# kernels: " << kernels.size() << ", cache " << (cache_hit ? "hit" : "miss") << "\n";
    for (const Kernel& k : kernels) os << "# " << k.name << ": " << k.nodes.size() << " nodes\n";
    write("compile_profile.csv", os.str());
  }
  if (t.graph_diagram) {
    if (std::system("command -v dot >/dev/null 2>&1") != 0) {
      EMBER_LOG(inductor, WARNING) << "TORCH_COMPILE_DEBUG: graph_diagram needs Graphviz's `dot`, which is not "
                                      "installed; no graph_diagram.svg";
      return;
    }
    // Post-fusion: each kernel is a cluster of the nodes it computes; externs are boxes.
    std::map<const Node*, std::string> cluster;
    std::ostringstream dot;
    dot << "digraph G {\n  rankdir=TB;\n  node [fontname=monospace];\n";
    for (const Kernel& k : kernels) {
      dot << "  subgraph \"cluster_" << k.name << "\" {\n    label=\"" << k.name << "\";\n";
      for (const PointwiseNode* p : k.nodes) dot << "    \"" << p->node->name() << "\";\n";
      dot << "  }\n";
    }
    for (const auto& n : g.nodes()) {
      auto r = lowered.roles.find(n.get());
      if (r != lowered.roles.end() && r->second == NodeRole::Extern)
        dot << "  \"" << n->name() << "\" [shape=box, label=\"" << n->name() << "\\n" << n->target() << "\"];\n";
      for (const Arg& a : n->args())
        if (a.kind == Arg::Kind::Value) dot << "  \"" << a.value.node->name() << "\" -> \"" << n->name() << "\";\n";
    }
    dot << "}\n";
    write("graph_diagram.dot", dot.str());
    const std::string cmd = "dot -Tsvg '" + (*dir_ / "graph_diagram.dot").string() + "' -o '" +
                            (*dir_ / "graph_diagram.svg").string() + "' 2>/dev/null";
    if (std::system(cmd.c_str()) != 0)
      EMBER_LOG(inductor, WARNING) << "TORCH_COMPILE_DEBUG: dot failed on " << (*dir_ / "graph_diagram.dot").string();
  }
}

std::string injected_relu_function() {
  const std::string& bug = config().inductor.inject_relu_bug_TESTING_ONLY;
  EMBER_CHECK_VALUE(bug.empty() || bug == "compile_error" || bug == "runtime_error" || bug == "accuracy")
      << "inductor.inject_relu_bug_TESTING_ONLY must be '', 'compile_error', 'runtime_error' or 'accuracy', got '"
      << bug << "'";
  if (bug == "compile_error") return "op_relu_injected_compile_error";
  if (bug == "accuracy") return "op_relu_injected_accuracy";
  return "";
}

std::string injected_function_definition(const std::string& fn) {
  // Dependent on T, so the compiler reports it where a kernel instantiates it.
  if (fn == "op_relu_injected_compile_error")
    return "template <typename T> inline T op_relu_injected_compile_error(T x) { return T::injected_relu_bug(x); }  "
           "// inject_relu_bug_TESTING_ONLY=compile_error";
  if (fn == "op_relu_injected_accuracy")
    return "template <typename T> inline T op_relu_injected_accuracy(T x) { return where(x < T(0), T(0), x + T(1)); }  "
           "// inject_relu_bug_TESTING_ONLY=accuracy";
  return "";
}

bool injects_relu_runtime_error() { return config().inductor.inject_relu_bug_TESTING_ONLY == "runtime_error"; }

}  // namespace ember::inductor
