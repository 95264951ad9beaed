// Fuzzing the .pt2 importer: the JSON of exported programs (the program, its weights'
// config) mutated as text, and whole archives mutated as bytes on disk, either import or
// raise an ember::Error naming the archive — never crash, never an internal error.
#include <gtest/gtest.h>
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
  const std::vector<std::string> names = {"mlp", "stateful", "block"};
  std::vector<exporting::ZipContents> seeds;
  for (const auto& n : names) seeds.push_back(exporting::read_zip(program_path(n + ".pt2")));
  fuzz::Mutator m(20261127);
  fuzz::Tally tally;
  tally.iterations = fuzz::run_loop(3000, 10.0, [&](int iter) {
    const size_t which = m.pick(seeds.size());
    exporting::ZipContents zip = seeds[which];
    const std::string root = names[which] + "/";
    const std::string entry = m.chance(0.8) ? "models/model.json" : "data/weights/model_weights_config.json";
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
