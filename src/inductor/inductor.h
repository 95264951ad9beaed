// inductor/inductor.h — the inductor CPU backend's entry point (registered as the
// "inductor" backend) and what it reports about its last compile, for tests and tools.
// See Note [inductor] (docs/notes/inductor.md).
#pragma once

#include <string>
#include <vector>

#include "ember/compile.h"

namespace ember::inductor {

/// The "inductor" backend: the AOT stage (aot/aot.h: functionalize, decompose), then
/// compile_fx_inner on its result. `g` is not kept; the caller may drop it afterwards.
CompiledGraph compile_graph(Graph& g, const std::vector<Tensor>& example_inputs);

/// The code generator proper, on a graph the AOT stage prepared: graph passes, lowering,
/// fusion, C++ generation, build (or cache lookup) and load; returns the wrapper that runs
/// it. Where TORCHDYNAMO_REPRO_AFTER=aot cuts. `g` is copied.
CompiledGraph compile_fx_inner(Graph& g, const std::vector<Tensor>& example_inputs);

/// Starts compile_fx_inner's slowest step for `g` ahead: its source generated as
/// compile_fx_inner would (quietly: no logs, no trace files) and the C++ compiler started
/// on it in the background (start_build), so that a later compile_fx_inner of `g` finds
/// the library built or being built. The "inductor" backend calls it on a training graph's
/// backward graph before compiling its forward (aot_compile's `ahead`), so the two compile
/// at once. Does nothing while the compiler bisector counts; never raises.
void compile_fx_ahead(Graph& g);

/// Registers "inductor", "inductor_inner" (compile_fx_inner alone) and "aot_eager"; safe to
/// call any number of times. register_builtin_backends() (ember_debug) calls it.
void register_inductor_backends();

/// What one compile_graph call produced.
struct CompileReport {
  std::string graph_name;
  /// Kernel names, in run order, each with the graph nodes it computes.
  std::vector<std::pair<std::string, std::vector<std::string>>> kernels;
  /// Calls run with their eager kernels ("aten::mm"), in graph order.
  std::vector<std::string> extern_calls;
  std::string source;
  /// Calls computed once at compile time from host constants and kept on the graph's
  /// device as graph constants ("%_to_copy (aten::_to_copy)"): fold_host_constants.
  std::vector<std::string> host_constants;
  /// Freezing: the GEMMs run on a packed weight with their epilogue inside
  /// ("%mm: 8x32x64 +bias +gelu_erf, weight BA16a64b"), in graph order (Note [freezing]).
  std::vector<std::string> frozen_linears;
  std::string so_path;
  bool cache_hit = false;
};

/// The report of this process's most recent compile_graph.
CompileReport last_compile_report();

/// How many kernel outputs have reused the buffer of a dead intermediate of the same size
/// (the memory plan), in this process.
int64_t buffers_reused();

/// How many kernel outputs were written over the buffer of an input that died at that
/// kernel (in place: an epilogue over an extern GEMM's or convolution's result), in this process.
int64_t outputs_in_place();
/// How many kernel outputs were written straight into a graph input the graph writes
/// (an input write AOT autograd lifted out of the graph), in this process.
int64_t outputs_into_inputs();

/// How many times this process has run the C++ compiler for generated code.
int64_t compiler_invocations();

}  // namespace ember::inductor
