// ember/export.h — programs exported by PyTorch (`torch.export.save`'s .pt2 archives):
// load_exported reads one into an ExportedProgram, a Graph of Core ATen calls with its
// signature and its parameters, buffers and constants, which runs with the interpreter or
// any backend; save_exported writes one that `torch.export.load` reads. See Note [export]
// (docs/notes/export.md).
//
//   ember::ExportedProgram p = ember::load_exported("model.pt2");
//   std::vector<ember::Tensor> out = p({x});                // the interpreter
//   auto fast = p.compile("inductor");                      // any registered backend
//   std::vector<ember::Tensor> again = fast({x});
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/graph.h"

namespace ember {

template <typename F, typename Sig, typename Args>
class Compiled;
namespace capture {
class CompiledFunctionState;
}

/// What one input of an exported program's graph is bound to.
enum class ExportInputKind { UserInput, Parameter, Buffer, TensorConstant };
/// What one output of an exported program's graph is.
enum class ExportOutputKind { UserOutput, BufferMutation };

struct ExportInputSpec {
  ExportInputKind kind = ExportInputKind::UserInput;
  /// The graph value's name ("x", "p_fc1_weight").
  std::string name;
  /// Parameters, buffers, constants: the state-dict name ("fc1.weight"); user inputs: the name.
  std::string target;
  bool persistent = true;  // buffers only
};

struct ExportOutputSpec {
  ExportOutputKind kind = ExportOutputKind::UserOutput;
  std::string name;    // the graph value's name
  std::string target;  // buffer mutations: the buffer written
};

/// The graph signature: one entry per graph input and output, in the program's order.
struct ExportSignature {
  std::vector<ExportInputSpec> inputs;
  std::vector<ExportOutputSpec> outputs;
  std::vector<std::string> user_inputs() const;
  std::vector<std::string> user_outputs() const;
};

/// A callable made from an exported program by a backend: user inputs in, user outputs out
/// (mutated buffers are written back into the program's state).
using ExportedCallable = std::function<std::vector<Tensor>(const std::vector<Tensor>& user_inputs)>;

/// An exported program: a graph whose Attribute inputs are the parameters and buffers of
/// `state()` (by state-dict name), whose Constant nodes hold the tensor constants, and whose
/// Placeholder inputs are the user inputs. Copies share the graph and the state.
class ExportedProgram {
 public:
  ExportedProgram();
  /// Takes a graph whose inputs are Placeholders (user inputs) and Attributes (named by
  /// `state`'s keys) and whose outputs are all user outputs.
  ExportedProgram(std::shared_ptr<Graph> graph, std::map<std::string, Tensor> state);
  ExportedProgram(std::shared_ptr<Graph> graph, ExportSignature signature, std::map<std::string, Tensor> state);

  const Graph& graph() const;
  const ExportSignature& signature() const;
  /// Parameters and buffers by state-dict name (buffers hold their values after the last run).
  std::map<std::string, Tensor>& state();
  const std::map<std::string, Tensor>& state() const;
  /// The archive's schema version ("8.17") and the PyTorch that wrote it; empty when built here.
  const std::string& schema_version() const;
  const std::string& torch_version() const;
  /// A program exported with dynamic_shapes: one line per size symbol, Ember's name, the
  /// program's, its range and the input dim it is read from (`s0 = s17 in [2, 64], read from
  /// x.size(0)`); empty for a static program.
  std::vector<std::string> dynamic_dims() const;

  /// Runs the graph with the interpreter on the user inputs (in signature order), writes
  /// mutated buffers back into state(), returns the user outputs. Raises an ember::Error
  /// naming the input when their number, dtypes, sizes or devices differ from the program's.
  std::vector<Tensor> operator()(const std::vector<Tensor>& user_inputs, Loc loc = Loc::current()) const;
  /// The same with inputs and outputs by their signature names.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& named_inputs, Loc loc = Loc::current()) const;
  /// Compiles the graph with a registered backend ("eager", "aot_eager", "inductor", …) on
  /// the first call, with that call's inputs as example inputs.
  ExportedCallable compile(const std::string& backend = "inductor") const;
  /// Checks user inputs against the program's (count, dtype, sizes, device).
  void check_user_inputs(const std::vector<Tensor>& user_inputs) const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
  friend ExportedProgram load_exported(const std::string& path, Loc loc);
};

/// Reads a .pt2 archive written by torch.export.save (PyTorch 2.11; schema major 8). Raises
/// an ember::Error naming the archive, the problem and the caller's line for a corrupt or truncated archive,
/// an unknown schema major version, an op Ember lacks (naming the node), a dynamic size, or
/// anything else it cannot represent.
ExportedProgram load_exported(const std::string& path, Loc loc = Loc::current());

/// One op an archive's graph calls, for `ember inspect`: what Ember makes of its target.
struct ExportedOpUse {
  std::string target;               // "torch.ops.aten.gelu.default"
  std::string op;                   // "aten::gelu", or "" outside torch.ops.aten
  enum class Status { Registered, Folded, Missing } status = Status::Missing;
  std::vector<std::string> nodes;   // the nodes calling it, in graph order
};
/// Every target the archive's graph calls, in order of first use, without building the
/// graph (so that a program with ops Ember lacks still lists them all). Raises like
/// load_exported for an unreadable archive or an unknown schema major.
std::vector<ExportedOpUse> list_exported_ops(const std::string& path, Loc loc = Loc::current());

/// torch.testing.assert_close's default tolerances (rtol, atol) for a dtype: a complex
/// dtype's are its real value type's; (0, 0) for integers and bool, which must be equal.
std::pair<double, double> default_tolerances(ScalarType dtype);
/// How a result compares with the expected tensor under assert_close's rule
/// (|got - want| <= atol + rtol * |want|, on the modulus for complex values; NaN equal to
/// NaN; dtypes and sizes equal).
struct CloseCheck {
  bool ok = false;
  double max_abs_error = 0;  // over the elements (inf when a NaN or inf differs)
  double rtol = 0, atol = 0;
  std::string mismatch;  // why not, when dtypes or sizes differ or an element is off
};
CloseCheck check_close(const Tensor& got, const Tensor& want);

/// Writes `program` as a .pt2 archive that torch.export.load (PyTorch 2.11) reads.
void save_exported(const ExportedProgram& program, const std::string& path, Loc loc = Loc::current());
/// Writes a graph (captured, or built by hand) with the values of its Attribute inputs
/// from `state` (by qualified name); its Placeholders become user inputs, its outputs user outputs.
void save_exported(const Graph& graph, const std::map<std::string, Tensor>& state, const std::string& path,
                   Loc loc = Loc::current());
/// Writes the graph a compiled function captured on its calls (before AOT): its module
/// arguments' parameters and buffers become the archive's state under their qualified
/// names ("fc.weight", as torch.export names them), its tensor arguments the user inputs,
/// its tensor results the user outputs. Raises an ember::Error when the function has not
/// been called (nothing is captured), has several cache entries, graph breaks or state
/// read outside the graph (several graphs, or none replayable), a symbolic graph (as the
/// Graph overload), or an input that is not a tensor of its arguments or a module's.
/// Note [export], "Writing".
void save_exported(capture::CompiledFunctionState& fn, const std::string& path, Loc loc = Loc::current());
template <typename F, typename Sig, typename Args>
void save_exported(const Compiled<F, Sig, Args>& fn, const std::string& path, Loc loc = Loc::current()) {
  save_exported(fn.state(), path, loc);
}

}  // namespace ember
