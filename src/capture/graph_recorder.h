// capture/graph_recorder.h — records the ops that code runs on fake tensors into a graph
// being built, without a user function, guards or graph breaks: the AOT stage traces the
// registry's derivative formulas with it into a joint forward-backward graph (Note [aot]).
// The Capture dispatch layer sends every op here while a recorder is current on the
// thread and no Tracer is. Fakes carry their values' symbolic geometry (TensorMeta::sym),
// so a formula's ops compute over the forward graph's size symbols.
#pragma once

#include <unordered_map>

#include "core/fake.h"
#include "core/sym_geometry.h"
#include "ember/graph.h"
#include "ops/registry.h"

namespace ember::capture {

class GraphRecorder {
 public:
  /// Becomes the thread's recorder until destroyed; ops on its fakes append calls to `g`.
  explicit GraphRecorder(Graph& g);
  ~GraphRecorder();
  GraphRecorder(const GraphRecorder&) = delete;
  GraphRecorder& operator=(const GraphRecorder&) = delete;

  /// A fake tensor (geometry, no data) standing for value `v` of the graph; the same fake
  /// for the same value. It carries no autograd state.
  Tensor fake(ValueRef v);
  /// The graph value `t` stands for: one of this recorder's fakes, or, for a real tensor
  /// (one a formula made from data), a new Constant node holding it.
  ValueRef value(const Tensor& t);
  /// The user line and grad mode the calls recorded from now on get (the forward node
  /// whose formula runs), and what runs them (`the derivative formula of aten::mm`), which
  /// the `dynamic` log names when it reads a symbolic size as an integer.
  void set_origin(SourceLoc loc, bool grad_enabled, std::string what = {}) {
    loc_ = std::move(loc);
    grad_enabled_ = grad_enabled;
    what_ = std::move(what);
  }
  /// Called by the Capture layer: appends a call of `op` and returns fakes of its outputs.
  /// An op whose output size depends on data cannot be recorded (an Error says which).
  Stack record(const ops::OpDef& op, Stack& args);

  /// Called by the symbolic-read hook (core/fake.h) when code reads the geometry of one of
  /// this recorder's fakes as integers (`sizes()`, `size(d)`, `strides()`, `numel()`): the
  /// symbols read are specialized through their shape environment (a guard of the entry
  /// being compiled, as a forward meta function's read is; Note [dynamic shapes]), so the
  /// integer the code gets holds for every call the guards admit. Logged on `dynamic`.
  void on_symbolic_read(const Tensor& t, core::SymbolicRead what);

  /// Specializes the size symbols that `what` reads of geometry `g` to their example
  /// values (guards in their shape environment) and names them, `s0 (x.size(0)) = 8, …`
  /// (empty when every one was static already). What on_symbolic_read does, for a
  /// formula that reads a value's recorded geometry as integers (aot/joint.cpp).
  static std::string specialize_read(const core::SymGeometry& g, core::SymbolicRead what);

  /// The recorder current on this thread, or null.
  static GraphRecorder* current();

 private:
  struct Known {
    std::weak_ptr<TensorImpl> object;  // detects a freed fake whose address was reused
    ValueRef ref;
  };

  Graph& g_;
  GraphRecorder* previous_;
  std::unordered_map<const TensorImpl*, Known> values_;
  std::map<std::pair<const Node*, uint32_t>, Tensor> fakes_;
  SourceLoc loc_;
  bool grad_enabled_ = false;
  std::string what_;
};

}  // namespace ember::capture
