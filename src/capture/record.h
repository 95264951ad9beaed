// capture/record.h — execution records (config().dynamo.replay_record_enabled): when the
// capture of a frame fails, its inputs and the config in force are written to one
// safetensors file under config().dynamo.base_dir, with the program that wrote it (path,
// working directory, arguments); ember::replay(path) finds the compiled function by name
// and traces that frame again, raising the same error, and `ember replay FILE` runs the
// program again with EMBER_REPLAY=FILE so that its call of that function does so.
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

/// When config().dynamo.replay_record (EMBER_REPLAY) names a record of `function`: replays
/// that frame (with `live`'s module arguments), prints what it raised to stderr and ends
/// the program, with status 1 when it raised an error and 0 when not (`ember replay`).
/// Returns when the record is of another function; ends with status 2 when it is unreadable.
void replay_if_recorded(const std::string& function, const std::vector<CallArg>& live);

/// Traces `args` once with the function's options, caching nothing (compiled_function.cpp).
std::vector<IValue> trace_once(CompiledFunctionState& state, std::vector<CallArg>& args);

}  // namespace ember::capture
