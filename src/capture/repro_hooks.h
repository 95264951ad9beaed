// capture/repro_hooks.h — where TORCHDYNAMO_REPRO_AFTER cuts: the two places a graph is
// handed to a compiler (the backend call in compiled_function.cpp, "dynamo"; the inner
// compiler after the AOT stage in aot/aot.cpp, "aot") call compile_with_repro. The repro
// and minifier machinery lives in ember_debug, a library above both, which capture and aot
// may not name: ember_debug installs its wrapper here with set_repro_wrapper, from
// register_builtin_backends() (which compile() calls, so a static link keeps it).
// See Note [minifier] (docs/notes/minifier.md).
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "ember/compile.h"

namespace ember::capture {

/// Compiles `g` with `compiler` (registered, or known to a launcher, as `compiler_name`)
/// at cut `cut` ("dynamo" or "aot"), writing repros and launchers as
/// config().dynamo.repro_level asks.
using ReproWrapper =
    std::function<CompiledGraph(Graph& g, const std::vector<Tensor>& example_inputs, const Backend& compiler,
                                const std::string& compiler_name, const std::string& cut)>;

/// Installs the wrapper (ember_debug does, once). Thread-safe.
void set_repro_wrapper(ReproWrapper wrapper);

/// The message an exception other than ember::Error from a compiler gets as an
/// ember::Error: "std::runtime_error: <what()>". The minifier's checker words it the same,
/// so a failure recorded in the program is the same failure in `ember repro`.
std::string foreign_exception_message(const std::exception& e);

/// `compiler(g, example_inputs)`, through the installed wrapper when
/// config().dynamo.repro_after == cut and one is installed. An exception other than
/// ember::Error from the compiler or from the callable it returns (a custom backend's
/// std::runtime_error) is raised as an ember::Error with the same message, so the
/// wrapper, BackendCompilerFailed and suppress_errors see every failure.
CompiledGraph compile_with_repro(Graph& g, const std::vector<Tensor>& example_inputs, const Backend& compiler,
                                 const std::string& compiler_name, const std::string& cut);

}  // namespace ember::capture
