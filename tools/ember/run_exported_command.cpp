// tools/ember/run_exported_command.cpp — `ember run-exported MODEL.pt2 --inputs IN`: runs a
// program exported by PyTorch with the interpreter or a backend, prints its outputs'
// geometry, writes them, and checks them against expected values by assert_close's rule
// (Note [export]).
#include <cstdio>
#include <iostream>

#include "command.h"
#include "ember/export.h"
#include "ember/serialize.h"
#include "graph/text.h"

namespace ember::tool {
namespace {

/// A user input from the inputs file: under its name, or under "input.<name>".
Tensor input_named(const std::map<std::string, Tensor>& file, const std::string& name, const std::string& path) {
  for (const std::string& key : {name, "input." + name}) {
    auto it = file.find(key);
    if (it != file.end()) return it->second;
  }
  std::string have;
  for (const auto& [k, t] : file) have += (have.empty() ? "" : ", ") + k;
  EMBER_FAIL_KIND(ErrorKind::ValueError) << path << " has no tensor '" << name << "' (or 'input." << name
                                         << "') for the program's input '" << name << "'; it has: "
                                         << (have.empty() ? "nothing" : have);
  return {};
}

std::string geometry(const Tensor& t) {
  return std::string(graph_text::short_dtype(t.dtype())) +
         graph_text::format_sizes({t.sizes().vec(), {}, t.dtype(), t.device(), 0});
}

}  // namespace

int run_run_exported(const Args& given) {
  Args args = given;
  bool bad = false;
  const auto inputs_path = take_value(args, "--inputs", bad);
  const auto backend = take_value(args, "--backend", bad);
  const auto out_path = take_value(args, "--out", bad);
  const auto check_path = take_value(args, "--check", bad);
  if (bad || args.size() != 1 || !inputs_path) {
    std::cerr << "ember run-exported: expected MODEL.pt2 --inputs IN.safetensors [--backend NAME] "
                 "[--out OUT.safetensors] [--check EXPECTED.safetensors]\n";
    return 2;
  }
  const std::string model(args[0]);
  ExportedProgram program = load_exported(model);
  const auto file = load_safetensors(*inputs_path);
  std::vector<Tensor> inputs;
  for (const std::string& name : program.signature().user_inputs())
    inputs.push_back(input_named(file, name, *inputs_path));
  const std::vector<Tensor> outs = backend ? program.compile(*backend)(inputs) : program(inputs);

  // Results by the names --out writes and --check reads: output.<k>, state.<buffer>.
  std::map<std::string, Tensor> results;
  const std::vector<std::string> names = program.signature().user_outputs();
  std::cout << model << ": " << outs.size() << " outputs (" << (backend ? *backend : "interpreter") << ")\n";
  for (size_t k = 0; k < outs.size(); ++k) {
    std::cout << "  output." << k << " (%" << names.at(k) << "): " << geometry(outs[k]) << "\n";
    results["output." + std::to_string(k)] = outs[k];
  }
  for (const ExportOutputSpec& o : program.signature().outputs) {
    if (o.kind != ExportOutputKind::BufferMutation) continue;
    std::cout << "  state." << o.target << " (updated buffer): " << geometry(program.state().at(o.target)) << "\n";
    results["state." + o.target] = program.state().at(o.target);
  }
  if (out_path) {
    save_safetensors(results, *out_path);
    std::cout << "wrote " << *out_path << "\n";
  }
  if (!check_path) return 0;
  const auto expected = load_safetensors(*check_path);
  bool all_ok = true;
  size_t compared = 0;
  for (const auto& [key, want] : expected) {
    if (key.rfind("output.", 0) != 0 && key.rfind("state.", 0) != 0) continue;
    auto it = results.find(key);
    if (it == results.end()) {
      if (key.rfind("state.", 0) == 0 && program.state().contains(key.substr(6))) {
        it = results.emplace(key, program.state().at(key.substr(6))).first;  // a buffer the program only reads
      } else {
        std::cout << "  " << key << ": FAIL (the program gives no such result)\n";
        all_ok = false;
        continue;
      }
    }
    const CloseCheck c = check_close(it->second, want);
    char line[160];
    std::snprintf(line, sizeof line, "max abs error %.3g (rtol %.2g, atol %.2g)", c.max_abs_error, c.rtol, c.atol);
    std::cout << "  " << key << ": " << line << ": " << (c.ok ? "PASS" : "FAIL: " + c.mismatch) << "\n";
    all_ok = all_ok && c.ok;
    ++compared;
  }
  for (const auto& [key, t] : results)
    if (key.rfind("output.", 0) == 0 && !expected.contains(key)) {
      std::cout << "  " << key << ": FAIL (" << *check_path << " has no expected value)\n";
      all_ok = false;
    }
  std::cout << (all_ok ? "PASS" : "FAIL") << ": " << compared << " results compared with " << *check_path << "\n";
  return all_ok ? 0 : 1;
}

}  // namespace ember::tool
