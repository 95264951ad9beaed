// capture/compile_mode.h — torch.compile's `mode` (CompileOptions::mode): the modes by
// name, and the mode in force on a thread while a backend compiles one of the function's
// graphs (the inductor reads it: "reduce-overhead" and "max-autotune" ask it for CUDA
// graphs, "max-autotune*" for more launch candidates). See Note [inductor], "CUDA graphs"
// and "Launch tuning".
#pragma once

#include <string>

#include "ember/compile.h"

namespace ember::capture {

/// | name                         | what the inductor does                                   |
/// |------------------------------|----------------------------------------------------------|
/// | "default"                    | compiles the graph (light launch tuning of row kernels)  |
/// | "reduce-overhead"            | that, and replays its CUDA work as a CUDA graph          |
/// | "max-autotune"               | more launch candidates per kernel, and CUDA graphs       |
/// | "max-autotune-no-cudagraphs" | more launch candidates per kernel, no CUDA graphs        |
enum class CompileMode { Default, ReduceOverhead, MaxAutotune, MaxAutotuneNoCudagraphs };

/// The mode named `name` ("" is "default"); raises a ValueError naming the modes otherwise.
CompileMode parse_compile_mode(const std::string& name);
const char* compile_mode_name(CompileMode m);

/// The mode of the compile under way on this thread (Default outside a CompileModeScope).
CompileMode current_compile_mode();

/// Sets the mode of compiles on this thread while alive.
class CompileModeScope {
 public:
  explicit CompileModeScope(CompileMode m);
  ~CompileModeScope();
  CompileModeScope(const CompileModeScope&) = delete;
  CompileModeScope& operator=(const CompileModeScope&) = delete;

 private:
  CompileMode saved_;
};

/// `backend`, compiling each graph under a CompileModeScope of the mode `options` names.
/// Raises for an unknown mode, or a mode other than "default" with a backend other than
/// "inductor" (a mode is a setting of that backend, as in torch.compile).
Backend backend_with_mode(const CompileOptions& options, Backend backend);

}  // namespace ember::capture
