// export/importer.cpp — a .pt2 archive's entries into an ExportedProgram: the root folder
// and format marker, the schema version (unknown majors refused), the weights and
// constants by their stored dtype/sizes/strides/offset (aliases kept), the size symbols
// of a program exported with dynamic shapes (sym_import.cpp), the signature, and the graph
// node by node (node_import.cpp). See Note [export].
#include <algorithm>
#include <cstring>

#include "ember/ops/creation.h"
#include "export/node_import.h"
#include "export/program_impl.h"
#include "ops/registry.h"
#include "support/call_context.h"

namespace ember::exporting {
namespace {

/// The folder every entry lives under ("model/" for model.pt2), found from the format marker.
std::string find_root(const ZipContents& zip, const std::string& path) {
  std::string root;
  bool found = false;
  for (const auto& [name, data] : zip.entries) {
    const size_t slash = name.find('/');
    if (slash == std::string::npos || name.substr(slash + 1) != kArchiveFormatPath) continue;
    root = name.substr(0, slash + 1);
    found = true;
    EMBER_CHECK_VALUE(data == "pt2") << "'" << path << "': " << name << " says '" << data.substr(0, 16)
                                     << "', not 'pt2': this is not a torch.export archive";
  }
  EMBER_CHECK_VALUE(found) << "'" << path << "': no <root>/" << kArchiveFormatPath
                           << " entry: this zip is not an archive written by torch.export.save";
  return root;
}

const std::string& entry(const ZipContents& zip, const std::string& root, std::string_view rel,
                         const std::string& path) {
  auto it = zip.entries.find(root + std::string(rel));
  EMBER_CHECK_VALUE(it != zip.entries.end()) << "'" << path << "': the archive has no " << root << rel;
  return it->second;
}

json parse_json(const std::string& text, const std::string& what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  EMBER_CHECK_VALUE(!j.is_discarded() && j.is_object()) << what << " is not a JSON object (truncated or corrupt)";
  return j;
}

/// The tensors of one payload folder (weights or constants) by name; entries naming the
/// same file share its storage, as PyTorch's loader keeps them.
std::map<std::string, Tensor> load_payload(const ZipContents& zip, const std::string& root, std::string_view dir,
                                           std::string_view config_path, const std::string& path) {
  std::map<std::string, Tensor> out;
  auto cfg_it = zip.entries.find(root + std::string(config_path));
  if (cfg_it == zip.entries.end()) return out;
  const std::string where = "'" + path + "': " + std::string(config_path);
  const json cfg = parse_json(cfg_it->second, where);
  std::map<std::string, Tensor> files;  // path_name -> flat tensor
  for (const auto& [fqn, meta_json] : cfg.at("config").items()) {
    const std::string w = where + ": '" + fqn + "'";
    EMBER_CHECK_VALUE(!meta_json.value("use_pickle", false))
        << w << " is pickled (a tensor subclass or custom object); Ember reads raw tensors only";
    const TensorMeta m = json_to_meta(meta_json.at("tensor_meta"), w);
    const std::string file = meta_json.at("path_name").get<std::string>();
    auto f = files.find(file);
    if (f == files.end()) {
      const std::string& bytes = entry(zip, root, std::string(dir) + file, path);
      const size_t es = element_size(m.dtype);
      EMBER_CHECK_VALUE(bytes.size() % es == 0) << w << ": " << dir << file << " holds " << bytes.size()
                                                << " bytes, not a whole number of " << m.dtype << " elements";
      Tensor flat = empty({static_cast<int64_t>(bytes.size() / es)}, TensorOptions(m.dtype));
      if (!bytes.empty()) std::memcpy(flat.raw_data_ptr(), bytes.data(), bytes.size());
      f = files.emplace(file, flat).first;
    }
    const Tensor& flat = f->second;
    EMBER_CHECK_VALUE(flat.dtype() == m.dtype) << w << ": shares " << file << " with a tensor of another dtype";
    const bool empty_tensor = std::find(m.sizes.begin(), m.sizes.end(), 0) != m.sizes.end();
    EMBER_CHECK_VALUE(empty_tensor || storage_extent(m) <= flat.numel())
        << w << ": its sizes, strides and offset reach element " << storage_extent(m) - 1 << " but " << file
        << " holds " << flat.numel();
    Tensor t = empty_tensor ? empty(m.sizes, TensorOptions(m.dtype)) : flat.as_strided(m.sizes, m.strides, m.storage_offset);
    out.emplace(fqn, t);
  }
  return out;
}

void check_versions(const json& program, const std::string& path, ExportedProgram::Impl& impl) {
  const json& v = program.at("schema_version");
  const int64_t major = v.at("major").get<int64_t>(), minor = v.at("minor").get<int64_t>();
  impl.schema_version = std::to_string(major) + "." + std::to_string(minor);
  impl.torch_version = program.value("torch_version", std::string());
  EMBER_CHECK_VALUE(major == kSchemaMajor)
      << "'" << path << "': schema version " << impl.schema_version << " (written by PyTorch "
      << (impl.torch_version.empty() ? "?" : impl.torch_version) << "); Ember reads schema major version "
      << kSchemaMajor << " (PyTorch 2.11 writes " << kSchemaMajor << "." << kSchemaMinor
      << "): re-export the program with a PyTorch whose schema major is " << kSchemaMajor;
}

/// An input spec of the signature, into the graph and the signature.
void import_input(ImportScope& s, const json& spec, const std::map<std::string, Tensor>& weights,
                  const std::map<std::string, Tensor>& constants, ExportedProgram::Impl& impl) {
  const std::string kind = spec.begin().key();
  const json& v = spec.begin().value();
  ExportInputSpec in;
  auto bind_state = [&](const std::string& fqn, bool is_constant) -> Tensor {
    // Non-persistent buffers are stored with the constants.
    const auto& table = is_constant || !weights.contains(fqn) ? constants : weights;
    auto it = table.find(fqn);
    EMBER_CHECK_VALUE(it != table.end())
        << s.where << ": the archive stores no tensor for '" << fqn << "'";
    const TensorMeta m = recorded_meta(s, in.name);
    EMBER_CHECK_VALUE(it->second.sizes().vec() == m.sizes && it->second.dtype() == m.dtype)
        << s.where << ": the stored '" << fqn << "' is " << it->second.dtype() << it->second.sizes()
        << " but the graph's %" << in.name << " is " << m.dtype << IntArrayRef(m.sizes);
    return it->second;
  };
  if (kind == "user_input") {
    const json& arg = v.at("arg");
    EMBER_CHECK_VALUE(arg.contains("as_tensor")) << s.where << ": the user input " << arg.dump().substr(0, 80)
                                                 << " is not a tensor; Ember imports tensor inputs only";
    in.kind = ExportInputKind::UserInput;
    in.name = in.target = arg.at("as_tensor").at("name").get<std::string>();
    const TensorMeta m = recorded_meta(s, in.name);
    s.values[in.name] = s.graph->add_placeholder(in.name, m)->out();
    impl.input_state_keys.emplace_back();
    impl.user_input_meta.push_back(m);
  } else if (kind == "parameter" || kind == "buffer") {
    in.kind = kind == "parameter" ? ExportInputKind::Parameter : ExportInputKind::Buffer;
    in.name = v.at("arg").at("name").get<std::string>();
    in.target = v.at(kind == "parameter" ? "parameter_name" : "buffer_name").get<std::string>();
    in.persistent = v.value("persistent", true);
    Tensor t = bind_state(in.target, false);
    TensorMeta m{t.sizes().vec(), t.strides().vec(), t.dtype(), t.device(), t.storage_offset()};
    s.values[in.name] = s.graph->add_attribute(in.target, m)->out();
    impl.state[in.target] = t;
    impl.input_state_keys.push_back(in.target);
  } else if (kind == "tensor_constant") {
    in.kind = ExportInputKind::TensorConstant;
    in.name = v.at("arg").at("name").get<std::string>();
    in.target = v.at("tensor_constant_name").get<std::string>();
    s.values[in.name] = s.graph->add_constant(in.target, bind_state(in.target, true))->out();
  } else {
    EMBER_FAIL_KIND(ErrorKind::ValueError) << s.where << ": inputs of kind '" << kind
                                           << "' (custom objects, tokens, constant inputs) cannot be imported";
  }
  impl.signature.inputs.push_back(std::move(in));
}

void import_output(const ImportScope& s, const json& spec, std::vector<ValueRef>& outs, ExportSignature& sig) {
  const std::string kind = spec.begin().key();
  const json& v = spec.begin().value();
  ExportOutputSpec out;
  if (kind == "user_output") {
    const json& arg = v.at("arg");
    EMBER_CHECK_VALUE(arg.contains("as_tensor")) << s.where << ": the user output " << arg.dump().substr(0, 80)
                                                 << " is not a tensor; Ember imports tensor outputs only";
    out.name = arg.at("as_tensor").at("name").get<std::string>();
  } else if (kind == "buffer_mutation") {
    out.kind = ExportOutputKind::BufferMutation;
    out.name = v.at("arg").at("name").get<std::string>();
    out.target = v.at("buffer_name").get<std::string>();
  } else {
    EMBER_FAIL_KIND(ErrorKind::ValueError)
        << s.where << ": outputs of kind '" << kind
        << "' (user-input or parameter mutations, gradients, losses, tokens) cannot be imported";
  }
  auto it = s.values.find(out.name);
  EMBER_CHECK_VALUE(it != s.values.end()) << s.where << ": the output %" << out.name << " is not defined";
  outs.push_back(it->second);
  sig.outputs.push_back(std::move(out));
}

/// The archive's root folder, after checking its format and version markers.
std::string checked_root(const ZipContents& zip, const std::string& path) {
  const std::string root = find_root(zip, path);
  auto version = zip.entries.find(root + std::string(kArchiveVersionPath));
  EMBER_CHECK_VALUE(version == zip.entries.end() || version->second == "0")
      << "'" << path << "': archive version '" << version->second.substr(0, 16)
      << "'; Ember reads version 0 (PyTorch 2.11's)";
  return root;
}

}  // namespace

std::shared_ptr<ExportedProgram::Impl> import_archive(const ZipContents& zip, const std::string& path) {
  auto impl = std::make_shared<ExportedProgram::Impl>();
  const std::string root = checked_root(zip, path);
  const std::string where = "'" + path + "': " + std::string(kModelJsonPath);
  try {
    const json program = parse_json(entry(zip, root, kModelJsonPath, path), where);
    check_versions(program, path, *impl);
    const json& gm = program.at("graph_module");
    const json& graph = gm.at("graph");
    refuse_data_dependent_nodes(graph, where);
    impl->symbols = declare_symbols(program, graph, gm.at("signature"), where);
    const auto weights = load_payload(zip, root, kWeightsDir, kWeightsConfigPath, path);
    const auto constants = load_payload(zip, root, kConstantsDir, kConstantsConfigPath, path);

    impl->graph = std::make_shared<Graph>("exported");
    ImportScope scope;
    scope.graph = impl->graph.get();
    scope.tensor_values = &graph.at("tensor_values");
    scope.where = where;
    scope.symbols = impl->symbols.get();
    for (const json& node : graph.at("nodes")) collect_tensor_names(node.at("inputs"), scope.used);
    collect_tensor_names(gm.at("signature").at("output_specs"), scope.used);
    for (const json& spec : gm.at("signature").at("input_specs")) import_input(scope, spec, weights, constants, *impl);
    for (const json& node : graph.at("nodes")) import_node(scope, node);
    std::vector<ValueRef> outs;
    for (const json& spec : gm.at("signature").at("output_specs")) import_output(scope, spec, outs, impl->signature);
    impl->graph->set_output(std::move(outs));
  } catch (const json::exception& e) {
    // A field missing or of the wrong type: the JSON does not follow the schema.
    EMBER_FAIL_KIND(ErrorKind::ValueError) << where << " does not follow torch.export's schema: " << e.what();
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    // Errors of the pieces below (a meta function, a schema check) learn which archive.
    if (e.message().find("'" + path + "'") != std::string::npos) throw;
    throw Error(e.kind(), where + ": " + e.message(), e.context());
  }
  return impl;
}

}  // namespace ember::exporting

namespace ember {

std::vector<ExportedOpUse> list_exported_ops(const std::string& path, Loc loc) {
  support::UserLocScope scope(loc);
  using namespace exporting;
  const ZipContents zip = read_zip(path);
  const std::string root = checked_root(zip, path);
  const std::string where = "'" + path + "': " + std::string(kModelJsonPath);
  std::vector<ExportedOpUse> uses;
  try {
    const json program = parse_json(entry(zip, root, kModelJsonPath, path), where);
    ExportedProgram::Impl versions;
    check_versions(program, path, versions);
    for (const json& node : program.at("graph_module").at("graph").at("nodes")) {
      const std::string target = node.at("target").get<std::string>();
      auto it = std::find_if(uses.begin(), uses.end(), [&](const ExportedOpUse& u) { return u.target == target; });
      if (it == uses.end()) {
        ExportedOpUse u;
        u.target = target;
        u.op = aten_name_of_target(target).value_or("");
        u.status = is_folded_target(target)                                     ? ExportedOpUse::Status::Folded
                   : !u.op.empty() && ops::registry().find(u.op) != nullptr ? ExportedOpUse::Status::Registered
                                                                             : ExportedOpUse::Status::Missing;
        uses.push_back(std::move(u));
        it = uses.end() - 1;
      }
      it->nodes.push_back(node.value("name", std::string("?")));
    }
  } catch (const json::exception& e) {
    EMBER_FAIL_KIND(ErrorKind::ValueError) << where << " does not follow torch.export's schema: " << e.what();
  }
  return uses;
}

}  // namespace ember
