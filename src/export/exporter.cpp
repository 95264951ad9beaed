// export/exporter.cpp — save_exported: a Graph with its state into a .pt2 archive that
// torch.export.load (PyTorch 2.11) reads: the serialized program (schema 8.17), each
// state tensor and constant as its own contiguous raw file with its config, and the
// format markers. See Note [export], "Writing".
#include <cctype>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <set>

#include "capture/entries.h"
#include "capture/record.h"
#include "ember/autograd.h"
#include "export/program_impl.h"
#include "export/pt2_format.h"
#include "graph/text.h"
#include "ops/registry.h"
#include "support/call_context.h"

namespace ember {
namespace exporting {
namespace {

using ops::BaseType;

/// The serialized name of output `k` of `n`: the node's name for its only output, else
/// "<node>_<k>" made unique against every node name.
class ValueNames {
 public:
  explicit ValueNames(const Graph& g) {
    for (const auto& n : g.nodes()) taken_.insert(n->name());
    for (const auto& n : g.nodes()) {
      if (n->num_outputs() <= 1) continue;
      for (size_t k = 0; k < n->num_outputs(); ++k) {
        std::string name = n->name() + "_" + std::to_string(k);
        while (taken_.contains(name)) name += "_";
        taken_.insert(name);
        multi_[{n.get(), k}] = name;
      }
    }
  }
  std::string operator()(const ValueRef& v) const {
    auto it = multi_.find({v.node, v.index});
    return it == multi_.end() ? v.node->name() : it->second;
  }

 private:
  std::set<std::string> taken_;
  std::map<std::pair<const Node*, size_t>, std::string> multi_;
};

json tensor_arg(const std::string& name) { return {{"as_tensor", {{"name", name}}}}; }

/// "aten::add.Tensor" → "torch.ops.aten.add.Tensor"; no overload → ".default".
std::string target_of(const ops::OpDef& op) {
  return "torch.ops.aten." + op.schema.name + "." + (op.schema.overload.empty() ? "default" : op.schema.overload);
}

/// A literal as the schema argument `a` types it.
json literal_arg(const IValue& v, const ops::Argument& a, const std::string& where) {
  if (v.is_none()) return {{"as_none", true}};
  const BaseType base = a.type.base;
  if (a.type.is_list) {
    if (v.is_int_list()) return {{"as_ints", v.to_int_list()}};
    if (std::holds_alternative<std::vector<bool>>(v.variant())) return {{"as_bools", v.to_bool_list()}};
    if (v.is_double_list()) {
      json l = json::array();
      for (double d : v.to_double_list()) l.push_back(double_to_json(d));
      return {{"as_floats", l}};
    }
  } else if (v.is_scalar() || base == BaseType::Scalar) {
    const Scalar s = v.to_scalar();
    if (s.is_bool()) return {{"as_bool", s.to_bool()}};
    if (s.is_integral()) return {{"as_int", s.to<int64_t>()}};
    return {{"as_float", double_to_json(s.to_double())}};
  } else if (v.is_bool()) {
    return {{"as_bool", v.to_bool()}};
  } else if (v.is_int()) {
    return {{"as_int", v.to_int()}};
  } else if (v.is_double()) {
    return {{"as_float", double_to_json(v.to_double())}};
  } else if (v.is_string()) {
    if (base == BaseType::MemoryFormat) return {{"as_memory_format", memory_format_code(v.to_string_ref())}};
    if (base == BaseType::Layout) {
      EMBER_CHECK_VALUE(v.to_string_ref() == "strided") << where << ": layout '" << v.to_string_ref() << "'";
      return {{"as_layout", kStridedLayout}};
    }
    return {{"as_string", v.to_string_ref()}};
  } else if (std::holds_alternative<ScalarType>(v.variant())) {
    return {{"as_scalar_type", dtype_code(v.to_scalar_type())}};
  } else if (std::holds_alternative<Device>(v.variant())) {
    return {{"as_device", device_to_json(v.to_device())}};
  }
  EMBER_FAIL_KIND(ErrorKind::TypeError) << where << ": cannot write the literal " << v << " of type " << v.type_name()
                                        << " for an argument of type " << a.type.str();
  return {};
}

json node_json(const Node& n, const ValueNames& names) {
  // One of Ember's own ops is written as the ATen op that stands for it, on its first argument.
  const ops::OpDef& op = n.op()->exported_as ? ops::registry().get(n.op()->exported_as) : *n.op();
  const size_t num_args = n.op()->exported_as ? 1 : n.args().size();
  const std::string where = "save_exported: node %" + n.name() + " (" + n.op()->name + ")";
  json inputs = json::array();
  for (size_t i = 0; i < num_args; ++i) {
    const ops::Argument& a = op.schema.arguments.at(i);
    const Arg& arg = n.args()[i];
    json value;
    if (arg.kind == Arg::Kind::Value) {
      value = tensor_arg(names(arg.value));
    } else if (arg.kind == Arg::Kind::ValueList) {
      json list = json::array();
      for (const auto& v : arg.values) {
        if (a.type.element_optional) {
          list.push_back(v ? json{{"as_tensor", {{"name", names(*v)}}}} : json{{"as_none", true}});
        } else {
          EMBER_CHECK_VALUE(v.has_value()) << where << ": argument '" << a.name << "' holds None";
          list.push_back({{"name", names(*v)}});
        }
      }
      value = {{a.type.element_optional ? "as_optional_tensors" : "as_tensors", list}};
    } else {
      value = literal_arg(arg.literal, a, where + ", argument '" + a.name + "'");
    }
    inputs.push_back({{"name", a.name}, {"arg", value}, {"kind", a.kwarg_only ? 2 : 1}});
  }
  json outputs = json::array();
  const bool list_return = op.schema.returns.size() == 1 && op.schema.returns[0].type.is_list;
  json list = json::array();
  for (uint32_t k = 0; k < n.num_outputs(); ++k) {
    EMBER_CHECK_VALUE(!n.meta()[k].undefined) << where << ": output " << k << " is not computed";
    const std::string name = names({const_cast<Node*>(&n), k});
    if (list_return) {
      list.push_back({{"name", name}});
    } else {
      outputs.push_back(tensor_arg(name));
    }
  }
  if (list_return) outputs.push_back({{"as_tensors", list}});
  json metadata = json::object();
  if (n.loc().known())
    metadata["stack_trace"] = "File \"" + n.loc().file + "\", line " + std::to_string(n.loc().line) + ", in forward";
  return {{"target", target_of(op)}, {"inputs", inputs},      {"outputs", outputs},
          {"metadata", metadata},    {"is_hop_single_tensor_return", nullptr}, {"name", n.name()}};
}

/// pytree's serialized spec: a tuple of `n` leaves (or one leaf), as treespec_dumps writes it.
std::string tuple_spec(size_t n, bool single_leaf) {
  const json leaf = {{"type", nullptr}, {"context", nullptr}, {"children_spec", json::array()}};
  if (single_leaf) return json::array({1, leaf}).dump();
  json tuple = {{"type", "builtins.tuple"}, {"context", "null"}, {"children_spec", json::array()}};
  for (size_t i = 0; i < n; ++i) tuple["children_spec"].push_back(leaf);
  return json::array({1, tuple}).dump();
}

std::string in_spec(size_t n) {
  const json args = json::parse(tuple_spec(n, false))[1];
  json root = {{"type", "builtins.tuple"},
               {"context", "null"},
               {"children_spec",
                json::array({args, {{"type", "builtins.dict"}, {"context", "[]"}, {"children_spec", json::array()}}})}};
  return json::array({1, root}).dump();
}

std::string tensor_bytes(const Tensor& t) {
  NoGradGuard no_grad;
  const Tensor c = t.cpu().contiguous();
  std::string bytes(static_cast<size_t>(c.numel()) * element_size(c.dtype()), '\0');
  if (!bytes.empty()) std::memcpy(bytes.data(), c.raw_data_ptr(), bytes.size());
  return bytes;
}

TensorMeta contiguous_meta(const Tensor& t) {
  TensorMeta m{t.sizes().vec(), {}, t.dtype(), kCPU, 0};
  m.strides.assign(m.sizes.size(), 1);
  for (size_t d = m.sizes.size(); d-- > 1;) m.strides[d - 1] = m.strides[d] * std::max<int64_t>(m.sizes[d], 1);
  return m;
}

}  // namespace

void write_archive(const Graph& g, const ExportSignature& sig, const std::map<std::string, Tensor>& state,
                   const std::string& path) {
  // Range constraints and symbolic geometry are not written: writing the example sizes
  // would specialize the symbols and give a program that is wrong at every other size.
  const std::vector<std::string> symbols = graph_text::symbol_lines(g);
  EMBER_CHECK_VALUE(symbols.empty()) << "'" << path << "': the graph's sizes are over size symbols (" << symbols.front()
                                     << (symbols.size() > 1 ? ", …" : "")
                                     << "); Ember writes programs with static shapes only";
  const ValueNames names(g);
  json tensor_values = json::object();
  json graph_inputs = json::array(), input_specs = json::array(), output_specs = json::array();
  json weights = json::object(), constants = json::object();
  std::vector<std::pair<std::string, std::string>> files;
  std::map<std::string, const ExportInputSpec*> spec_of;
  for (const auto& s : sig.inputs) spec_of[s.target] = &s;

  // Inputs as torch.export orders them: parameters and buffers, constants, user inputs.
  std::vector<const Node*> state_nodes, constant_nodes, user_nodes;
  for (const auto& n : g.nodes()) {
    if (n->kind() == NodeKind::Attribute) state_nodes.push_back(n.get());
    if (n->kind() == NodeKind::Constant) constant_nodes.push_back(n.get());
    if (n->kind() == NodeKind::Placeholder) user_nodes.push_back(n.get());
  }
  for (const Node* n : state_nodes) {
    auto it = state.find(n->target());
    EMBER_CHECK_VALUE(it != state.end()) << "save_exported: no state tensor for the attribute '" << n->target() << "'";
    const Tensor& t = it->second;
    auto spec = spec_of.find(n->target());
    const bool is_param = spec != spec_of.end() ? spec->second->kind == ExportInputKind::Parameter : t.requires_grad();
    const TensorMeta m = contiguous_meta(t);
    EMBER_CHECK_VALUE(m.sizes == n->meta().at(0).sizes && m.dtype == n->meta().at(0).dtype)
        << "save_exported: the state tensor '" << n->target() << "' does not have the graph's geometry";
    // A non-persistent buffer is no part of the state dict: PyTorch stores it with the
    // constants (its verifier refuses one among the weights).
    const bool persistent = is_param || spec == spec_of.end() || spec->second->persistent;
    const std::string file = (persistent ? "weight_" : "tensor_") + std::to_string(files.size());
    files.emplace_back(std::string(persistent ? kWeightsDir : kConstantsDir) + file, tensor_bytes(t));
    (persistent ? weights : constants)[n->target()] = {
        {"path_name", file}, {"is_param", is_param}, {"use_pickle", false}, {"tensor_meta", meta_to_json(m, is_param)}};
    tensor_values[n->name()] = meta_to_json(m, is_param);
    graph_inputs.push_back(tensor_arg(n->name()));
    if (is_param) {
      input_specs.push_back({{"parameter", {{"arg", {{"name", n->name()}}}, {"parameter_name", n->target()}}}});
    } else {
      input_specs.push_back(
          {{"buffer", {{"arg", {{"name", n->name()}}}, {"buffer_name", n->target()}, {"persistent", persistent}}}});
    }
  }
  for (const Node* n : constant_nodes) {
    auto it = g.constants().find(n->target());
    EMBER_CHECK_VALUE(it != g.constants().end() && it->second.defined())
        << "save_exported: the graph holds no value for the constant '" << n->target() << "'";
    const TensorMeta m = contiguous_meta(it->second);
    const std::string file = "tensor_" + std::to_string(files.size());
    files.emplace_back(std::string(kConstantsDir) + file, tensor_bytes(it->second));
    constants[n->target()] = {{"path_name", file}, {"is_param", false}, {"use_pickle", false},
                              {"tensor_meta", meta_to_json(m)}};
    tensor_values[n->name()] = meta_to_json(m);
    graph_inputs.push_back(tensor_arg(n->name()));
    input_specs.push_back({{"tensor_constant", {{"arg", {{"name", n->name()}}}, {"tensor_constant_name", n->target()}}}});
  }
  json forward_arg_names = json::array();
  for (const Node* n : user_nodes) {
    tensor_values[n->name()] = meta_to_json(n->meta().at(0));
    graph_inputs.push_back(tensor_arg(n->name()));
    input_specs.push_back({{"user_input", {{"arg", tensor_arg(n->name())}}}});
    forward_arg_names.push_back(n->target());
  }

  json nodes = json::array();
  bool writes_in_place = false;
  for (const auto& n : g.nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    writes_in_place = writes_in_place || n->op()->schema.is_mutable();
    nodes.push_back(node_json(*n, names));
    for (uint32_t k = 0; k < n->num_outputs(); ++k)
      tensor_values[names({n.get(), k})] = meta_to_json(n->meta()[k]);
  }
  json graph_outputs = json::array();
  const std::vector<ValueRef> outs = g.outputs();
  size_t user_outputs = 0;
  for (size_t k = 0; k < outs.size(); ++k) {
    const std::string name = names(outs[k]);
    graph_outputs.push_back(tensor_arg(name));
    const bool mutation = k < sig.outputs.size() && sig.outputs[k].kind == ExportOutputKind::BufferMutation;
    if (mutation) {
      output_specs.push_back({{"buffer_mutation", {{"arg", {{"name", name}}}, {"buffer_name", sig.outputs[k].target}}}});
    } else {
      output_specs.push_back({{"user_output", {{"arg", tensor_arg(name)}}}});
      ++user_outputs;
    }
  }

  json signature = {{"inputs", json::array()},
                    {"outputs", json::array()},
                    {"in_spec", in_spec(user_nodes.size())},
                    {"out_spec", tuple_spec(user_outputs, false)},
                    {"forward_arg_names", forward_arg_names}};
  json program = {
      {"graph_module",
       {{"graph",
         {{"inputs", graph_inputs},
          {"outputs", graph_outputs},
          {"nodes", nodes},
          {"tensor_values", tensor_values},
          {"sym_int_values", json::object()},
          {"sym_bool_values", json::object()},
          {"is_single_tensor_return", false},
          {"custom_obj_values", json::object()},
          {"sym_float_values", json::object()}}},
        {"signature", {{"input_specs", input_specs}, {"output_specs", output_specs}}},
        {"module_call_graph", json::array({{{"fqn", ""}, {"signature", signature}}})},
        {"metadata", json::object()},
        {"treespec_namedtuple_fields", json::object()}}},
      {"opset_version", {{"aten", 10}}},
      {"range_constraints", json::object()},
      {"schema_version", {{"major", kSchemaMajor}, {"minor", kSchemaMinor}}},
      // ATen's verifier requires functional calls; a graph that writes in place (a
      // training-IR program's buffer updates) is what PyTorch's training IR holds.
      {"verifiers", json::array({writes_in_place ? "TRAINING" : "ATEN"})},
      {"torch_version", "2.11.0"},
      {"guards_code", json::array()}};

  // The root folder is the archive's file name without .pt2, as PyTorch names it.
  std::string root = std::filesystem::path(path).stem().string();
  for (char& c : root)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
  if (root.empty()) root = "archive";
  std::vector<std::pair<std::string, std::string>> entries;
  for (auto& [name, bytes] : files) entries.emplace_back(root + "/" + name, std::move(bytes));
  entries.emplace_back(root + "/" + std::string(kWeightsConfigPath), json{{"config", weights}}.dump());
  entries.emplace_back(root + "/" + std::string(kConstantsConfigPath), json{{"config", constants}}.dump());
  entries.emplace_back(root + "/" + std::string(kModelJsonPath), program.dump());
  entries.emplace_back(root + "/" + std::string(kSampleInputsPath), "");
  entries.emplace_back(root + "/" + std::string(kArchiveFormatPath), "pt2");
  entries.emplace_back(root + "/" + std::string(kArchiveVersionPath), "0");
  entries.emplace_back(root + "/.data/version", "6\n");
  entries.emplace_back(root + "/byteorder", "little");
  write_zip(path, entries);
}

}  // namespace exporting

void save_exported(const ExportedProgram& program, const std::string& path, Loc loc) {
  support::UserLocScope scope(loc);
  exporting::write_archive(program.graph(), program.signature(), program.state(), path);
}

void save_exported(const Graph& graph, const std::map<std::string, Tensor>& state, const std::string& path, Loc loc) {
  support::UserLocScope scope(loc);
  EMBER_CHECK_VALUE(graph.output_node() != nullptr) << "save_exported: the graph has no outputs";
  exporting::write_archive(graph, ExportSignature{}, state, path);
}

// Note [export], "A compiled function": the graph a compiled function's one cache entry
// replays is the program; what feeds its inputs (the entry's sources) says which are
// state — module tensors, Attribute nodes named by their qualified names — and which the
// user passes.
void save_exported(capture::CompiledFunctionState& fn, const std::string& path, Loc loc) {
  support::UserLocScope scope(loc);
  const std::string where =
      "save_exported('" + path + "') of the compiled function '" + capture::function_name(fn) + "'";
  // CallArg's alternatives, by variant index (compile.h's call_arg_index).
  static const char* const kArgTypes[] = {
      "Tensor",     "std::vector<Tensor>", "int64_t", "double", "bool", "std::vector<int64_t>", "std::vector<double>",
      "nn::Module", "optim::Optimizer"};
  const std::vector<size_t>& kinds = capture::param_kinds(fn);
  for (size_t i = 0; i < kinds.size(); ++i) {
    const bool tensors_or_module = kinds[i] == 0 || kinds[i] == 1 || kinds[i] == 7;
    EMBER_CHECK_VALUE(tensors_or_module)
        << where << ": argument " << i << " ('" << capture::argument_name(fn, i) << "') is a "
        << (kinds[i] < std::size(kArgTypes) ? kArgTypes[kinds[i]] : "non-tensor")
        << "; an exported program's inputs are tensors (and the graph holds the value this argument had when "
           "it was traced): pass it as a tensor, or fix it inside the function";
  }
  const std::vector<capture::EntryView> entries = capture::entries(fn);
  EMBER_CHECK_VALUE(!entries.empty())
      << where
      << ": nothing is captured yet: call the function (with the inputs the program is for) before "
         "saving it (a function whose trace makes tensors that outlive the call, Note [escaping tensors], is "
         "traced on every call and keeps no graph)";
  EMBER_CHECK_VALUE(entries.size() == 1)
      << where << ": it has " << entries.size()
      << " cache entries (one per input signature its calls had: sizes, dtypes, devices, guarded values), and "
         "an archive holds one graph: save a function called with one input signature (reset() drops its "
         "entries)";
  const capture::EntryView& e = entries.front();
  EMBER_CHECK_VALUE(e.mode != capture::EntryView::Mode::Eager)
      << where << ": its capture failed and its calls run eagerly: there is no graph to save";
  EMBER_CHECK_VALUE(e.break_count == 0)
      << where << ": its calls run as " << e.graph_count << " graphs split by " << e.break_count << " graph break"
      << (e.break_count == 1 ? "" : "s")
      << ", and an archive holds one graph: remove the breaks (CompileOptions::fullgraph = true raises at the "
         "first one, naming it)";
  EMBER_CHECK_VALUE(e.mode == capture::EntryView::Mode::Replay && e.graph)
      << where << ": it reads " << (e.outside_state.empty() ? "state" : e.outside_state)
      << " outside any graph, so it is traced on every call and no one graph computes it";
  const Graph& g = *e.graph;
  const std::vector<Node*> inputs = g.inputs();
  EMBER_INTERNAL_ASSERT(inputs.size() == e.sources.size())
      << "the entry of '" << capture::function_name(fn) << "' has " << e.sources.size() << " input sources for "
      << inputs.size() << " graph inputs";
  std::map<std::string, Tensor> state;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Node* n = inputs[i];
    const capture::InputSource& s = e.sources[i];
    using Kind = capture::InputSource::Kind;
    if (n->kind() == NodeKind::Attribute) {
      EMBER_INTERNAL_ASSERT(s.kind == Kind::Bound && s.bound.defined())
          << "the attribute input %" << n->name() << " is not bound to a module tensor";
      state[n->target()] = s.bound;
      continue;
    }
    EMBER_CHECK_VALUE(s.kind != Kind::Grad)
        << where << ": the graph input %" << n->name() << " is the gradient of " << n->target()
        << ", read from its slot on each call; an exported program's inputs are its arguments and its "
           "modules' parameters and buffers";
    EMBER_CHECK_VALUE(s.kind != Kind::Bound)
        << where << ": the graph input %" << n->name()
        << " is a tensor the function reads from outside its arguments (a global or a captured variable); "
           "pass it as an argument, or register it as a module's buffer";
  }
  save_exported(g, state, path, loc);
}

}  // namespace ember
