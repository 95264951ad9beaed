// export/program_impl.h — what an ExportedProgram holds (shared by its copies), and the
// importer that fills it from an archive's entries.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/export.h"
#include "export/zip_archive.h"

namespace ember {
namespace exporting {
struct ImportSymbols;
}

struct ExportedProgram::Impl {
  std::shared_ptr<Graph> graph;
  ExportSignature signature;
  std::map<std::string, Tensor> state;
  std::string schema_version, torch_version;
  /// For each Graph::inputs() entry: the state key it reads, or "" for the next user input.
  std::vector<std::string> input_state_keys;
  /// Geometry of each user input, in signature order.
  std::vector<TensorMeta> user_input_meta;
  /// The size symbols of a program exported with dynamic shapes (null when static).
  std::shared_ptr<const exporting::ImportSymbols> symbols;
};

namespace exporting {

/// Builds a program from the entries of a .pt2 archive; `path` names it in errors.
std::shared_ptr<ExportedProgram::Impl> import_archive(const ZipContents& zip, const std::string& path);

/// Writes `g` (its Attribute inputs' values from `state`, its Constant nodes' from the
/// graph) as a .pt2 archive; `sig` says which attributes are parameters and which outputs
/// buffer mutations (empty: attributes requiring grad are parameters, all outputs user outputs).
void write_archive(const Graph& g, const ExportSignature& sig, const std::map<std::string, Tensor>& state,
                   const std::string& path);

}  // namespace exporting
}  // namespace ember
