// ember/graph.h — the graph IR that capture produces and every backend consumes: a list
// of nodes in execution order (inputs, calls of registry ops, output), each recording the
// geometry of its values and the user line that created it. The counterpart of an FX
// graph of ATen ops; see Note [graph] (docs/notes/graph.md).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <source_location>
#include <string>
#include <vector>

#include "ember/ivalue.h"

namespace ember {

namespace ops {
struct OpDef;
}

/// Where user code created a node ("" file when unknown, e.g. a parsed graph without one).
struct SourceLoc {
  std::string file;
  uint32_t line = 0;
  SourceLoc() = default;
  SourceLoc(std::string f, uint32_t l) : file(std::move(f)), line(l) {}
  explicit SourceLoc(const std::source_location& loc) : file(loc.file_name()), line(loc.line()) {}
  bool known() const { return !file.empty(); }
  /// "file.cpp:12", or "<unknown>".
  std::string str() const;
  bool operator==(const SourceLoc&) const = default;
};

enum class NodeKind : uint8_t {
  Placeholder,  // an input of the graph: a function argument or a tensor lifted into the graph
  Attribute,    // an input bound to a module's parameter or buffer, named by its qualified name
  Constant,     // a tensor stored in the graph itself (Graph::constants)
  Call,         // a call of a registry op
  Output,       // the graph's results; always last
};

class Node;

/// Output `index` of a node.
struct ValueRef {
  Node* node = nullptr;
  uint32_t index = 0;
  bool operator==(const ValueRef&) const = default;
};

/// One argument of a call, in schema order: a value of the graph, a list of them
/// (Tensor[] and Tensor?[] arguments), or a literal (every other type, and None).
struct Arg {
  enum class Kind : uint8_t { Literal, Value, ValueList };
  Kind kind = Kind::Literal;
  IValue literal;
  ValueRef value;
  std::vector<std::optional<ValueRef>> values;

  static Arg of_literal(IValue v);
  static Arg of_value(ValueRef v);
  static Arg of_values(std::vector<std::optional<ValueRef>> vs);
};

class Node {
 public:
  NodeKind kind() const { return kind_; }
  /// Unique within its graph, an identifier ("add_1"); printed as %add_1.
  const std::string& name() const { return name_; }
  /// Placeholder: the input's name; Attribute: "layer1.0.weight"; Constant: the key in
  /// Graph::constants; Call: the op's qualified name.
  const std::string& target() const { return target_; }
  /// The op of a Call node (nullptr otherwise).
  const ops::OpDef* op() const { return op_; }
  const std::vector<Arg>& args() const { return args_; }
  std::vector<Arg>& mutable_args() { return args_; }
  /// The geometry of each output value (a Call of a multi-output or list-returning op has
  /// several; inputs and constants have one; Output has none).
  const std::vector<TensorMeta>& meta() const { return meta_; }
  size_t num_outputs() const { return meta_.size(); }
  ValueRef out(uint32_t index = 0) { return {this, index}; }
  const SourceLoc& loc() const { return loc_; }
  /// False when the call was recorded under no_grad; the interpreter replays that mode.
  bool grad_enabled() const { return grad_enabled_; }
  void set_grad_enabled(bool on) { grad_enabled_ = on; }
  /// Calls that write an argument (in-place ops, copy_) or draw random numbers: never
  /// removed by dead-code elimination, never reordered across each other.
  bool is_impure() const;

 private:
  friend class Graph;
  NodeKind kind_ = NodeKind::Call;
  std::string name_, target_;
  const ops::OpDef* op_ = nullptr;
  std::vector<Arg> args_;
  std::vector<TensorMeta> meta_;
  SourceLoc loc_;
  bool grad_enabled_ = true;
};

/// A captured computation. Nodes are kept in execution order; inputs (placeholders and
/// attributes) come before the calls that use them, and the Output node is last once set.
class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // --- building (names are made unique: "x", "x_1", …) --------------------------
  Node* add_placeholder(std::string_view input_name, TensorMeta meta);
  Node* add_attribute(std::string_view qualified_name, TensorMeta meta);
  /// Stores `value` under a fresh name in constants() and adds a node reading it.
  Node* add_constant(std::string_view name_hint, Tensor value);
  /// Adds a call of `op` (its arguments normalized against the schema) whose outputs have `meta`.
  Node* add_call(const ops::OpDef& op, std::vector<Arg> args, std::vector<TensorMeta> meta, SourceLoc loc = {});
  /// Sets (or replaces) the graph's outputs.
  Node* set_output(std::vector<ValueRef> outputs);
  /// Names that generated names avoid (add_named may still take them): a pass rebuilding a
  /// graph reserves the old graph's names so that nodes it copies later keep theirs.
  void reserve_names(std::vector<std::string> names);
  /// Appends a node with an explicit name, as the parser does; raises if the name is taken.
  Node* add_named(NodeKind kind, std::string name, std::string target, const ops::OpDef* op, std::vector<Arg> args,
                  std::vector<TensorMeta> meta, SourceLoc loc, bool grad_enabled);

  // --- reading ---------------------------------------------------------------
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  /// Placeholder and Attribute nodes, in order: the values a caller passes to run a graph.
  std::vector<Node*> inputs() const;
  /// The Output node, or nullptr before set_output.
  Node* output_node() const;
  std::vector<ValueRef> outputs() const;
  /// Number of Call nodes.
  size_t op_count() const;
  Node* find(std::string_view node_name) const;
  /// For each node, the nodes using one of its values (in graph order).
  std::map<const Node*, std::vector<Node*>> users() const;
  const std::map<std::string, Tensor>& constants() const { return constants_; }
  void set_constant(const std::string& name, Tensor value) { constants_[name] = std::move(value); }

  // --- transforming ----------------------------------------------------------
  /// Removes Call nodes none of whose values is used, unless impure; repeats until none is left.
  /// Returns how many nodes were removed.
  size_t eliminate_dead_code();
  /// Removes `node`; raises if a node still uses it.
  void erase(Node* node);
  /// A deep copy (constants are shared, not cloned).
  std::unique_ptr<Graph> clone() const;

 private:
  std::string unique_name(std::string_view hint);
  Node* append(std::unique_ptr<Node> node);

  std::string name_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::map<std::string, Tensor> constants_;
  std::map<std::string, int, std::less<>> name_counts_;
  std::set<std::string, std::less<>> reserved_;
  std::map<std::string, int, std::less<>> reserved_counts_;
};

/// The readable text of a graph (the counterpart of fx_graph_readable); parse_graph reads it back.
std::string to_string(const Graph& g);
std::ostream& operator<<(std::ostream& os, const Graph& g);

/// Reads the text to_string writes. Raises ember::Error naming the line and what was
/// expected on malformed text or unknown ops. Constant values are not part of the text:
/// the parsed graph's Constant nodes have none until set_constant gives them one.
std::unique_ptr<Graph> parse_graph(std::string_view text);

/// Node by node equality: kinds, names, targets, ops, arguments, geometry, locations,
/// grad modes (not the graphs' names, nor constant values). When they differ and `why` is
/// given, it says where.
bool structurally_equal(const Graph& a, const Graph& b, std::string* why = nullptr);

/// Runs a graph with the eager kernels. `inputs` holds one tensor per Graph::inputs(), in
/// order; returns one tensor per output. Each op runs through the normal dispatch path
/// (so autograd records it when its inputs require grad) with its node's user line.
std::vector<Tensor> run_graph(const Graph& g, const std::vector<Tensor>& inputs);

/// What to_runnable_cpp writes besides the graph's forward().
struct RunnableOptions {
  /// Replaces the comment that opens the program (the graph's text still follows it).
  std::string header_comment;
  /// Replaces the generated main(): the program then also defines
  /// `std::vector<ember::Tensor> forward_list(const std::vector<ember::Tensor>&)` (the
  /// inputs in Graph::inputs() order) and the helpers make_input, restrided and
  /// print_summary, and ends with this text (a repro's main; Note [minifier]).
  std::string main_source;
};

/// A standalone C++ program that rebuilds the graph through the public API, makes inputs
/// with the recorded sizes, strides and dtypes (random values from a fixed seed), runs it
/// and prints each output's summary (the counterpart of fx_graph_runnable).
std::string to_runnable_cpp(const Graph& g, const RunnableOptions& options = {});

/// A tensor of `m`'s geometry holding what a to_runnable_cpp program's make_input draws
/// for it from the generator's current state (normal floats, random bools, integers 0–9
/// over the storage the strides reach), so that an in-process run sees the program's
/// inputs.
Tensor runnable_input(const TensorMeta& m);

}  // namespace ember
