// Fuzzing the .pt2 importer: the JSON of exported programs (the program, its weights'
// config) mutated as text, the symbolic shapes of programs exported with dynamic_shapes
// (range constraints, size expressions, their hints, SymInt arguments) mutated field by
// field and the imported programs called at random sizes, and whole archives mutated as
// bytes on disk, either import (and run) or raise an ember::Error — never crash, never an
// internal error.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ember/ember.h"
#include "ember/export.h"
#include "export/program_impl.h"
#include "fuzz/mutator.h"

namespace ember {
namespace {

std::string program_path(const std::string& name) { return std::string(EMBER_EXPORT_PROGRAMS_DIR) + "/" + name; }

const char* kJsonAlphabet = "{}[]\":, 0123456789.-eEabcdefghijklmnopqrstuvwxyz_AINfinity";

TEST(Pt2Fuzz, MutatedProgramJsonImportsOrRaisesEmberErrorsNamingTheArchive) {
  // resizes_training_ir: mutated sizes and targets of resize_ reach the importer's
  // functionalization (Note [resize_]).
  const std::vector<std::string> names = {"mlp",          "stateful",          "block",    "size_arith",
                                          "causal_block", "buffers_constants", "kv_cache", "reads_item",
                                          "resizes_training_ir"};
  std::vector<exporting::ZipContents> seeds;
  for (const auto& n : names) seeds.push_back(exporting::read_zip(program_path(n + ".pt2")));
  fuzz::Mutator m(20261127);
  fuzz::Tally tally;
  tally.iterations = fuzz::run_loop(3000, 10.0, [&](int iter) {
    const size_t which = m.pick(seeds.size());
    exporting::ZipContents zip = seeds[which];
    const std::string root = names[which] + "/";
    const std::string entry = m.chance(0.8)   ? "models/model.json"
                              : m.chance(0.5) ? "data/weights/model_weights_config.json"
                                              : "data/constants/model_constants_config.json";
    zip.entries[root + entry] = m.mutate_text(zip.entries[root + entry], kJsonAlphabet);
    const fuzz::Outcome o = fuzz::outcome_of(
        [&] { exporting::import_archive(zip, "fuzz.pt2"); },
        [&](const std::string& msg) { EXPECT_NE(msg.find("'fuzz.pt2'"), std::string::npos) << msg; },
        "mutation #" + std::to_string(iter) + " of " + root + entry);
    tally.accepted += o == fuzz::Outcome::Accepted;
    tally.rejected += o == fuzz::Outcome::Rejected;
  });
  // Some mutations (in names, metadata) leave a valid program; most do not.
  EXPECT_GT(tally.accepted, 0) << tally.iterations << " iterations";
  EXPECT_GT(tally.rejected, tally.iterations / 4) << tally.iterations << " iterations";
}

/// Every JSON value under `j` whose key is one of the symbolic-shape fields.
void symbolic_fields(nlohmann::json& j, std::vector<nlohmann::json*>& out) {
  if (j.is_array()) {
    for (auto& e : j) symbolic_fields(e, out);
  } else if (j.is_object()) {
    for (auto& [k, v] : j.items()) {
      if (k == "expr_str" || k == "hint" || k == "min_val" || k == "max_val" || k == "as_sym_int" ||
          k == "as_sym_ints" || k == "as_expr")
        out.push_back(&v);
      symbolic_fields(v, out);
    }
  }
}

TEST(Pt2Fuzz, MutatedSymbolicShapesImportAndRunOrRaiseEmberErrors) {
  const std::vector<std::string> names = {"size_arith", "ranged", "mlp_batch"};
  std::vector<exporting::ZipContents> seeds;
  for (const auto& n : names) seeds.push_back(exporting::read_zip(program_path(n + ".pt2")));
  const std::vector<nlohmann::json> replacements = {
      nullptr, -1, 0, 1, 2, 65, int64_t{1} << 62, "s17", "Symbol('s99')", "Mul(Integer(2), Symbol('s17'))",
      "FloorDiv(Symbol('s17'), Integer(0))", "Pow(Symbol('s17'), Integer(40))", "Add(", "Symbol('u0')",
      "Integer(99999999999999999999)", 1.5, nlohmann::json::object(), nlohmann::json::array(), {{"as_int", 3}},
      {{"as_name", "nowhere"}}, {{"as_int", "x"}}};
  const char* srepr_alphabet = "()',= 0123456789-sSymbolIntegerMulAddFloorDivModPowMaxMin_";
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ember_fuzz_pt2_sym_" + std::to_string(getpid()) + ".pt2")).string();
  fuzz::Mutator m(20261128);
  fuzz::Tally tally;
  tally.iterations = fuzz::run_loop(1500, 10.0, [&](int iter) {
    const size_t which = m.pick(seeds.size());
    exporting::ZipContents zip = seeds[which];
    const std::string entry = names[which] + "/models/model.json";
    nlohmann::json program = nlohmann::json::parse(zip.entries[entry]);
    std::vector<nlohmann::json*> fields;
    symbolic_fields(program, fields);
    for (int e = 0, edits = 1 + static_cast<int>(m.pick(3)); e < edits && !fields.empty(); ++e) {
      nlohmann::json& f = *fields[m.pick(fields.size())];
      if (f.is_string() && m.chance(0.5)) {
        f = m.mutate_text(f.get<std::string>(), srepr_alphabet);
      } else {
        f = replacements[m.pick(replacements.size())];
      }
      // A replaced container frees the fields inside it: collect them again.
      fields.clear();
      symbolic_fields(program, fields);
    }
    zip.entries[entry] = program.dump();
    exporting::write_zip(path, {zip.entries.begin(), zip.entries.end()});
    const fuzz::Outcome o = fuzz::outcome_of(
        [&] {
          ExportedProgram p = load_exported(path);
          // Calls at random sizes (some outside the ranges or breaking a relation): each
          // runs or raises an ember::Error.
          for (int call = 0; call < 2; ++call) {
            std::vector<Tensor> inputs;
            for (const Node* in : p.graph().inputs()) {
              if (in->kind() != NodeKind::Placeholder) continue;
              std::vector<int64_t> sizes = in->meta().at(0).sizes;
              for (int64_t& d : sizes) d = m.chance(0.5) ? d : static_cast<int64_t>(m.pick(9));
              inputs.push_back(zeros(sizes, TensorOptions(in->meta().at(0).dtype)));
            }
            try {
              p(inputs);
            } catch (const InternalError&) {
              throw;
            } catch (const Error&) {
            }
          }
        },
        [&](const std::string& msg) { EXPECT_NE(msg.find(path), std::string::npos) << msg; },
        "symbolic mutation #" + std::to_string(iter) + " of " + entry);
    tally.accepted += o == fuzz::Outcome::Accepted;
    tally.rejected += o == fuzz::Outcome::Rejected;
  });
  EXPECT_GT(tally.accepted, 0) << tally.iterations << " iterations";
  EXPECT_GT(tally.rejected, tally.iterations / 4) << tally.iterations << " iterations";
  std::filesystem::remove(path);
}

TEST(Pt2Fuzz, MutatedArchiveBytesLoadOrRaiseEmberErrors) {
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string mlp = read(program_path("mlp.pt2")), cnn = read(program_path("cnn.pt2"));
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ember_fuzz_pt2_" + std::to_string(getpid()) + ".pt2")).string();
  fuzz::Mutator m(7);
  fuzz::run_loop(500, 10.0, [&](int iter) {
    {
      std::ofstream out(path, std::ios::binary);
      out << m.mutate_bytes(iter % 2 ? mlp : cnn, iter % 2 ? cnn : mlp);
    }
    fuzz::outcome_of([&] { load_exported(path); },
                     [&](const std::string& msg) { EXPECT_NE(msg.find(path), std::string::npos) << msg; },
                     "byte mutation #" + std::to_string(iter));
  });
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ember
