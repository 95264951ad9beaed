// `ember replay FILE` on what is not a replayable record: a missing file, a file that is
// not a record, a record whose program ends without calling the recorded function. (The
// whole path, a program's frame replayed through the tool, is examples.guide_record_replay.)
#include "debug_helpers.h"
#include "ember/serialize.h"

namespace ember::testing {
namespace {

namespace fs = std::filesystem;

TEST_F(ReproTest, ReplayWithoutAFileIsAUsageError) {
  CommandResult r = run_ember("", "replay");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("ember replay: expected FILE, an execution record"), std::string::npos) << r.output;
}

TEST_F(ReproTest, ReplayOfAMissingFileSaysSoWithStatus2) {
  const fs::path missing = dir / "gone.record.safetensors";
  CommandResult r = run_ember("", "replay '" + missing.string() + "'");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("ember replay: " + missing.string() + ": no such file"), std::string::npos) << r.output;
}

TEST_F(ReproTest, ReplayOfAFileThatIsNotARecordSaysSoWithStatus2) {
  const fs::path text = dir / "notes.txt";
  std::ofstream(text) << "not safetensors\n";
  CommandResult r = run_ember("", "replay '" + text.string() + "'");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(text.string() + " is not an execution record"), std::string::npos) << r.output;

  const fs::path tensors = dir / "weights.safetensors";
  save_safetensors({{"w", ones({2})}}, tensors.string());
  r = run_ember("", "replay '" + tensors.string() + "'");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(tensors.string() + " is not an execution record (a safetensors file without 'ember_record'"),
            std::string::npos)
      << r.output;
}

TEST_F(ReproTest, ReplayOfAProgramThatNeverCallsTheFunctionSaysNothingWasReplayed) {
  config().dynamo.replay_record_enabled = true;
  auto f = compile(
      [](const Tensor& x) {
        if (is_compiling()) {
          EMBER_FAIL() << "capture of this frame fails";
        }
        return x * 2;
      },
      {.name = "never_called_again"});
  f(ones({3}));
  config().dynamo.replay_record_enabled = false;
  std::vector<fs::path> records;
  for (const auto& e : fs::directory_iterator(dir / "replay")) records.push_back(e.path());
  ASSERT_EQ(records.size(), 1u);
  // The same record, as if written by /bin/true: it runs, but calls no compiled function.
  std::map<std::string, std::string> meta = load_safetensors_metadata(records[0].string());
  EXPECT_EQ(meta.at("function"), "never_called_again");
  meta["program"] = "/bin/true";
  meta["argc"] = "1";
  meta["argv.0"] = "true";
  const fs::path edited = dir / "edited.record.safetensors";
  save_safetensors(load_safetensors(records[0].string()), edited.string(), meta);
  CommandResult r = run_ember("", "replay '" + edited.string() + "'");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("ember replay: running /bin/true in "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ember replay: /bin/true ended (status 0) without calling never_called_again, so nothing "
                          "was replayed"),
            std::string::npos)
      << r.output;

  meta["program"] = (dir / "deleted_program").string();
  save_safetensors(load_safetensors(records[0].string()), edited.string(), meta);
  r = run_ember("", "replay '" + edited.string() + "'");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("deleted_program, no longer exists"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ember::testing
