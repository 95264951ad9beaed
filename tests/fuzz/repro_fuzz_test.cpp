// Fuzzing read_repro, the reader of repro and launcher files (what `ember repro` and
// `ember minify` load): valid files of both kinds with their inputs files, the text
// mutated (keys, values, the graph), the inputs file's bytes mutated, or random inputs
// asked for instead. Each read either gives a repro whose inputs have the graph's
// recorded geometry or raises an ember::Error naming the repro or its inputs file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "debug/repro.h"
#include "ember/ember.h"
#include "fuzz/mutator.h"
#include "fuzz/seed_graphs.h"
#include "support/log_capture.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

constexpr char kChars[] = "%[](),.:=#\"\\ -0123456789eEinfaNTFx_{}\n\trandomkcgphe\x01";
constexpr std::string_view kAlphabet(kChars, sizeof kChars - 1);

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// The bytes of the largest storage a graph's inputs span (what read_repro allocates).
int64_t largest_input_storage(const std::string& repro_text) {
  const size_t at = repro_text.find("graph:\n");
  const size_t plain = repro_text.find("graph ");
  std::unique_ptr<Graph> g;
  try {
    g = parse_graph(at != std::string::npos ? repro_text.substr(at + 7)
                                            : repro_text.substr(plain == std::string::npos ? 0 : plain));
  } catch (const Error&) {
    return 0;  // read_repro rejects it before allocating anything
  }
  int64_t largest = 0;
  for (const auto& n : g->nodes()) {
    if (n->kind() == NodeKind::Call || n->kind() == NodeKind::Output) continue;
    const TensorMeta& m = n->meta().at(0);
    int64_t extent = m.storage_offset + 1;
    for (size_t d = 0; d < m.sizes.size(); ++d) extent += (m.sizes[d] - 1) * m.strides[d];
    largest = std::max(largest, extent * static_cast<int64_t>(element_size(m.dtype)));
  }
  return largest;
}

TEST(ReproFuzz, MutatedReprosAndLaunchersReadOrRaiseEmberErrorsNamingTheFile) {
  testing::reset_diagnostics();
  const bool stderr_was = logging::set_stderr_enabled(false);
  const fs::path dir = fs::temp_directory_path() / ("ember_repro_fuzz_" + std::to_string(getpid()));
  fs::remove_all(dir);
  struct Seed {
    std::string text, inputs;
  };
  std::vector<Seed> seeds;
  int n = 0;
  for (auto& g : fuzz::seed_graphs()) {
    for (const char* kind : {"repro", "launcher"}) {
      debug::Repro r;
      r.kind = kind;
      r.graph = g->clone();
      r.inputs = debug::random_inputs(*r.graph, 1);
      r.backend = "eager";
      r.repro_after = "dynamo";
      r.accuracy = n % 2 == 1;
      r.failure = debug::Failure{debug::Failure::Stage::Run, ErrorKind::ValueError, "something at 3 failed"};
      r.config = {{"dynamo.cache_size_limit", "4"}};
      const debug::WrittenRepro w = debug::write_repro(r, (dir / std::to_string(n++)).string(), "seed");
      seeds.push_back({read_all(w.file), read_all(w.inputs)});
    }
  }
  const std::string path = (dir / "mutant.txt").string();
  const std::string inputs = (dir / "seed.safetensors").string();
  const std::string snapshot = config_get("dynamo.cache_size_limit");

  fuzz::Mutator mut(31337);
  fuzz::Tally tally;
  int skipped = 0;
  tally.iterations = fuzz::run_loop(3000, 15.0, [&](int iter) {
    const Seed& seed = seeds[static_cast<size_t>(iter) % seeds.size()];
    std::string text = seed.text, tensors = seed.inputs;
    switch (mut.pick(4)) {
      case 0:
      case 1:
        text = mut.mutate_text(text, kAlphabet);
        break;
      case 2:
        tensors = mut.mutate_bytes(tensors, seeds[0].inputs, {0});
        break;
      case 3: {  // random inputs instead of the file
        const size_t at = text.find("inputs: seed.safetensors");
        text.replace(at, std::string("inputs: seed.safetensors").size(),
                     mut.chance(0.5) ? "inputs: random " + std::to_string(mut.pick(1000)) : "inputs: random");
        if (mut.chance(0.5)) text = mut.mutate_text(text, kAlphabet);
        break;
      }
    }
    // Inputs too large for a CI machine's memory are not the reader's concern: skip them.
    if (largest_input_storage(text) > (int64_t{1} << 26)) {
      ++skipped;
      return;
    }
    write_all(path, text);
    write_all(inputs, tensors);
    debug::Repro r;
    const fuzz::Outcome o = fuzz::outcome_of(
        [&] { r = debug::read_repro(path); },
        [&](const std::string& msg) {
          EXPECT_TRUE(msg.find(path) != std::string::npos || msg.find(inputs) != std::string::npos) << msg;
        },
        "repro mutant #" + std::to_string(iter) + ":\n" + text);
    if (o == fuzz::Outcome::Rejected) ++tally.rejected;
    if (o != fuzz::Outcome::Accepted) return;
    ++tally.accepted;
    // Accepted: one input per graph input, with its recorded geometry.
    const std::vector<Node*> ins = r.graph->inputs();
    ASSERT_EQ(ins.size(), r.inputs.size()) << text;
    for (size_t i = 0; i < ins.size(); ++i) {
      const TensorMeta& m = ins[i]->meta().at(0);
      EXPECT_EQ(r.inputs[i].sizes(), IntArrayRef(m.sizes)) << text;
      EXPECT_EQ(r.inputs[i].strides(), IntArrayRef(m.strides)) << text;
      EXPECT_EQ(r.inputs[i].storage_offset(), m.storage_offset) << text;
      EXPECT_EQ(r.inputs[i].dtype(), m.dtype) << text;
    }
  });
  EXPECT_EQ(config_get("dynamo.cache_size_limit"), snapshot) << "reading a repro sets no knob";
  EXPECT_LT(skipped, tally.iterations / 20);
  EXPECT_GT(tally.accepted, tally.iterations / 20) << tally.iterations << " iterations";
  EXPECT_GT(tally.rejected, tally.iterations / 3) << tally.iterations << " iterations";
  fs::remove_all(dir);
  testing::reset_diagnostics();
  logging::set_stderr_enabled(stderr_was);
}

}  // namespace
}  // namespace ember
