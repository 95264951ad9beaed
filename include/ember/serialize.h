// ember/serialize.h — tensors on disk, as safetensors files (no pickle: loading a file
// never runs code). Names, dtypes and shapes round-trip with PyTorch's
// safetensors.torch.save_file / load_file.
#pragma once

#include <map>
#include <string>

#include "ember/tensor.h"

namespace ember {

/// Writes `tensors` (CPU; non-contiguous ones are written as their contiguous values)
/// and string `metadata` to `path`.
void save_safetensors(const std::map<std::string, Tensor>& tensors, const std::string& path,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads every tensor of a safetensors file as a contiguous CPU tensor. A malformed file
/// raises ember::Error naming the file and the problem.
std::map<std::string, Tensor> load_safetensors(const std::string& path);

/// The "__metadata__" of a safetensors file (empty when it has none).
std::map<std::string, std::string> load_safetensors_metadata(const std::string& path);

}  // namespace ember
