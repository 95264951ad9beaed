// `ember run-exported` and `ember inspect` on programs exported by PyTorch 2.11: outputs'
// geometry, --out, --check against PyTorch's values (and failing against wrong ones), the
// ops a program lacks, exit statuses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "ember/ember.h"
#include "ember/export.h"
#include "ember/serialize.h"
#include "export/zip_archive.h"
#include "unit/debug/debug_helpers.h"

namespace ember {
namespace {

using testing::run_ember;

std::string program_path(const std::string& name) { return std::string(EMBER_EXPORT_PROGRAMS_DIR) + "/" + name; }
std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ember_cli_export_" + std::to_string(getpid()) + "_" + name)).string();
}

TEST(RunExportedCommand, PrintsOutputsAndPassesTheCheckAgainstPyTorchUnderTheInductor) {
  const auto r = run_ember("", "run-exported " + program_path("block.pt2") + " --inputs " +
                                   program_path("block_io.safetensors") + " --backend inductor --check " +
                                   program_path("block_io.safetensors"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("1 outputs (inductor)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("output.0 (%add_1): f32[2, 8, 32]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("output.0: max abs error"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("PASS: 2 results compared"), std::string::npos) << r.output;  // output.0, state.mask
}

TEST(RunExportedCommand, WritesOutputsAndUpdatedBuffers) {
  const std::string out = temp_path("out.safetensors");
  const auto r = run_ember("", "run-exported " + program_path("stateful.pt2") + " --inputs " +
                                   program_path("stateful_io.safetensors") + " --out " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("state.steps (updated buffer): i64[]"), std::string::npos) << r.output;
  const auto written = load_safetensors(out);
  const auto expected = load_safetensors(program_path("stateful_io.safetensors"));
  for (const char* key : {"output.0", "output.1", "output.2", "output.3", "state.running", "state.steps"}) {
    ASSERT_TRUE(written.contains(key)) << key;
    EXPECT_TRUE(check_close(written.at(key), expected.at(key)).ok) << key;
  }
  std::filesystem::remove(out);
}

TEST(RunExportedCommand, CheckFailsWhenAnOutputIsOffByMoreThanTheTolerance) {
  auto expected = load_safetensors(program_path("mlp_io.safetensors"));
  expected["output.0"] = expected["output.0"] + 1e-3;
  const std::string path = temp_path("wrong.safetensors");
  save_safetensors(expected, path);
  const auto r = run_ember("", "run-exported " + program_path("mlp.pt2") + " --inputs " +
                                   program_path("mlp_io.safetensors") + " --check " + path);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("output.0: max abs error 0.001"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("FAIL: element 0 is"), std::string::npos) << r.output;
  std::filesystem::remove(path);
}

TEST(RunExportedCommand, MissingInputIsNamed) {
  const std::string path = temp_path("empty_inputs.safetensors");
  save_safetensors({{"y", zeros({1})}}, path);
  const auto r = run_ember("", "run-exported " + program_path("mlp.pt2") + " --inputs " + path);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("has no tensor 'x' (or 'input.x') for the program's input 'x'; it has: y"),
            std::string::npos)
      << r.output;
  std::filesystem::remove(path);
}

TEST(RunExportedCommand, UsageErrorsExitWithTwo) {
  EXPECT_EQ(run_ember("", "run-exported " + program_path("mlp.pt2")).status, 2);
  EXPECT_EQ(run_ember("", "run-exported").status, 2);
}

TEST(InspectCommand, ShowsSignatureAndGraph) {
  const auto r = run_ember("", "inspect " + program_path("cnn.pt2"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("all of them in Ember"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("schema 8.17"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("input  buffer bn1.running_mean"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("aten::native_batch_norm(%convolution, %bn1_weight, %bn1_bias, %bn1_running_mean, %bn1_running_var, False"), std::string::npos) << r.output;
}

TEST(InspectCommand, ShowsTheDynamicDimsWithTheirRangesAndTheGraphsSymbols) {
  const auto r = run_ember("", "inspect " + program_path("size_arith.pt2"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("dynamic dims:\n  s0 = s17 in [2, inf], read from x.size(0)\n"
                          "  s1 = s27 in [3, 100], read from x.size(1)\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("symbol s1 = 5 for x.size(1) [3, 100]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("torch.ops.aten.sym_size.int  folded into sizes and checks"), std::string::npos) << r.output;
}

TEST(RunExportedCommand, DynamicProgramPassesTheCheckAtAnotherSize) {
  const auto r = run_ember("", "run-exported " + program_path("causal_block.pt2") + " --inputs " +
                                   program_path("causal_block_io2.safetensors") + " --backend inductor --check " +
                                   program_path("causal_block_io2.safetensors"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("f32[2, 13, 32]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("PASS: 1 results compared"), std::string::npos) << r.output;
}

TEST(InspectCommand, ListsEveryOpEmberLacks) {
  auto zip = exporting::read_zip(program_path("mlp.pt2"));
  std::string& json = zip.entries.at("mlp/models/model.json");
  for (const std::string from : {"torch.ops.aten.gelu.default", "torch.ops.aten.permute.default"}) {
    for (size_t at = json.find(from); at != std::string::npos; at = json.find(from))
      json.replace(at, from.size(), from == "torch.ops.aten.gelu.default" ? "torch.ops.aten.frobnicate.default"
                                                                          : "torch.ops.my_ns.twiddle.default");
  }
  const std::string path = temp_path("missing_ops.pt2");
  exporting::write_zip(path, {zip.entries.begin(), zip.entries.end()});
  const auto r = run_ember("", "inspect " + path);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("ops Ember lacks (2):"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("aten::frobnicate  called by %gelu"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("torch.ops.my_ns.twiddle.default  called by %permute, %permute_1"), std::string::npos)
      << r.output;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ember
