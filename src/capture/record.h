// capture/record.h — execution records (config().dynamo.replay_record_enabled): when the
// capture of a frame fails, its inputs and the config in force are written to one
// safetensors file under config().dynamo.base_dir; ember::replay(path) finds the compiled
// function by name and traces that frame again, raising the same error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/compile.h"

namespace ember::capture {

/// Makes a compiled function findable by name for replay (the newest of a name wins).
void register_function(const std::string& name, const std::shared_ptr<CompiledFunctionState>& state);

/// Writes the record of a failed frame; returns its path.
std::string write_record(const std::string& function, const SourceLoc& where, const std::vector<std::string>& arg_names,
                         const std::vector<CallArg>& args, const Error& error);

/// Each parameter's CallArg alternative (variant index), as make_state was given them.
const std::vector<size_t>& param_kinds(const CompiledFunctionState& state);

/// Traces `args` once with the function's options, caching nothing (compiled_function.cpp).
std::vector<IValue> trace_once(CompiledFunctionState& state, std::vector<CallArg>& args);

}  // namespace ember::capture
