// tools/ember/inspect_command.cpp — `ember inspect MODEL.pt2`: what Ember makes of a
// program exported by PyTorch: the archive's versions, the ops it calls and which Ember
// lacks, the signature, and the graph as Ember's graph text (Note [export]).
#include <iostream>

#include "command.h"
#include "ember/export.h"
#include "graph/text.h"

namespace ember::tool {
namespace {

const char* input_kind(ExportInputKind k) {
  switch (k) {
    case ExportInputKind::UserInput: return "user input";
    case ExportInputKind::Parameter: return "parameter";
    case ExportInputKind::Buffer: return "buffer";
    case ExportInputKind::TensorConstant: return "constant";
  }
  return "?";
}

std::string node_list(const std::vector<std::string>& nodes) {
  std::string s;
  for (size_t i = 0; i < nodes.size() && i < 4; ++i) s += (i ? ", %" : "%") + nodes[i];
  if (nodes.size() > 4) s += ", … (" + std::to_string(nodes.size()) + " nodes)";
  return s;
}

}  // namespace

int run_inspect(const Args& args) {
  if (args.size() != 1) {
    std::cerr << "ember inspect: expected MODEL.pt2\n";
    return 2;
  }
  const std::string model(args[0]);
  const std::vector<ExportedOpUse> uses = list_exported_ops(model);
  size_t missing = 0;
  for (const auto& u : uses) missing += u.status == ExportedOpUse::Status::Missing;
  std::cout << model << ": " << uses.size() << " distinct targets";
  if (missing == 0) {
    std::cout << ", all of them in Ember\n";
  } else {
    std::cout << "; ops Ember lacks (" << missing << "):\n";
    for (const auto& u : uses)
      if (u.status == ExportedOpUse::Status::Missing)
        std::cout << "  " << (u.op.empty() ? u.target : u.op) << "  called by " << node_list(u.nodes) << "\n";
  }
  for (const auto& u : uses)
    if (u.status == ExportedOpUse::Status::Folded)
      std::cout << "  " << u.target << "  folded into sizes and checks (" << node_list(u.nodes) << ")\n";
  if (missing > 0) return 1;

  ExportedProgram program = load_exported(model);
  std::cout << "schema " << program.schema_version() << ", written by PyTorch " << program.torch_version() << "\n";
  // A program exported with dynamic_shapes: its size symbols, as the graph's header names them.
  const std::vector<std::string> dims = program.dynamic_dims();
  if (!dims.empty()) std::cout << "\ndynamic dims:\n";
  for (const std::string& d : dims) std::cout << "  " << d << "\n";
  std::cout << "\nsignature:\n";
  // Inputs by their state-dict or user names; outputs by the graph values they are.
  for (const ExportInputSpec& in : program.signature().inputs)
    std::cout << "  input  " << input_kind(in.kind) << " " << in.target << "\n";
  const std::vector<ValueRef> values = program.graph().outputs();
  for (size_t k = 0; k < values.size(); ++k) {
    const ExportOutputSpec& out = program.signature().outputs.at(k);
    std::cout << "  output " << graph_text::format_ref(values[k])
              << (out.kind == ExportOutputKind::UserOutput ? " (user output)" : " -> buffer " + out.target) << "\n";
  }
  std::cout << "\n" << program.graph();
  return 0;
}

}  // namespace ember::tool
