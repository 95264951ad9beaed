// Fuzzing replay() on execution records: a record of a function taking every kind of
// argument, its metadata values mutated (characters, numbers made extreme, one argument's
// value given to another, keys dropped or added), its tensors dropped, added or reshaped,
// or its bytes mutated. Each replay either reaches the function (which fails on purpose
// while traced, so the replayed error comes back) or raises an ember::Error naming the
// record — never another exception, never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ember/ember.h"
#include "ember/serialize.h"
#include "fuzz/mutator.h"
#include "support/log_capture.h"

namespace ember {
namespace {

constexpr char kChars[] = "0123456789,:.-+eE tensorsintdoublebool\x01";
constexpr std::string_view kAlphabet(kChars, sizeof kChars - 1);

TEST(RecordFuzz, MutatedRecordsReplayOrRaiseEmberErrorsNamingTheRecord) {
  testing::reset_diagnostics();
  const bool stderr_was = logging::set_stderr_enabled(false);
  const auto dir = std::filesystem::temp_directory_path() / ("ember_record_fuzz_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  config().dynamo.base_dir = dir.string();
  config().dynamo.replay_record_enabled = true;
  auto fn = compile(
      [](const Tensor& x, const std::vector<Tensor>& xs, int64_t n, double s, bool flag,
         const std::vector<int64_t>& dims, const std::vector<double>& ws) {
        EMBER_CHECK(!is_compiling()) << "capture fails on purpose";
        return x * s + static_cast<double>(n + flag + static_cast<int64_t>(xs.size() + dims.size() + ws.size()));
      },
      {.name = "fuzzed"});
  fn(ones({3}), {ones({2}), zeros({2, 2})}, 4, 0.5, true, {0, -1}, {1e-300, -2.5});
  config().dynamo.replay_record_enabled = false;
  std::string record;
  for (const auto& e : std::filesystem::directory_iterator(dir / "replay")) record = e.path().string();
  ASSERT_FALSE(record.empty());
  const std::map<std::string, std::string> meta = load_safetensors_metadata(record);
  const std::map<std::string, Tensor> tensors = load_safetensors(record);
  std::ifstream in(record, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> keys;
  for (const auto& [k, v] : meta)
    if (!k.starts_with("config.") || k == "config.dynamo.cache_size_limit") keys.push_back(k);
  const std::string snapshot = config_get("dynamo.cache_size_limit") + config_get("dynamo.verbose");

  fuzz::Mutator mut(4242);
  const std::string path = (dir / "mutant.record.safetensors").string();
  fuzz::Tally tally;
  tally.iterations = fuzz::run_loop(3000, 10.0, [&](int iter) {
    std::map<std::string, std::string> m = meta;
    std::map<std::string, Tensor> t = tensors;
    const std::string& key = keys[mut.pick(keys.size())];
    const int edits = 1 + static_cast<int>(mut.pick(2));
    for (int e = 0; e < edits; ++e) {
      switch (mut.pick(6)) {
        case 0:
          m[key] = mut.mutate_text(m[key], kAlphabet);
          break;
        case 1:
          m[key] = meta.at(keys[mut.pick(keys.size())]);
          break;  // another key's value
        case 2:
          m.erase(key);
          break;
        case 3:
          m[key + (mut.chance(0.5) ? ".name" : "x")] = "1";
          break;
        case 4:
          if (!t.empty()) t.erase(std::next(t.begin(), static_cast<std::ptrdiff_t>(mut.pick(t.size()))));
          break;
        case 5:
          t[mut.chance(0.5) ? "arg1.2" : "arg0"] = ones({static_cast<int64_t>(mut.pick(3))});
          break;
      }
    }
    save_safetensors(t, path, m);
    if (iter % 4 == 3) {  // the bytes themselves
      std::ifstream mutated_in(path, std::ios::binary);
      std::string b((std::istreambuf_iterator<char>(mutated_in)), std::istreambuf_iterator<char>());
      std::ofstream(path, std::ios::binary | std::ios::trunc) << mut.mutate_bytes(b, bytes, {0});
    }
    const fuzz::Outcome o =
        fuzz::outcome_of([&] { replay(path); },
                         [&](const std::string& msg) {
                           if (msg.find("capture fails on purpose") != std::string::npos) {
                             ++tally.accepted;  // the reader accepted it; the replayed frame failed as recorded
                           } else {
                             EXPECT_NE(msg.find(path), std::string::npos) << msg;
                           }
                         },
                         "record mutant #" + std::to_string(iter));
    if (o == fuzz::Outcome::Rejected) ++tally.rejected;
    EXPECT_NE(o, fuzz::Outcome::Accepted) << "the function always fails while traced";
  });
  EXPECT_EQ(config_get("dynamo.cache_size_limit") + config_get("dynamo.verbose"), snapshot)
      << "replay restores the config, whatever the record held";
  EXPECT_GT(tally.accepted, tally.iterations / 50) << tally.iterations << " iterations";
  EXPECT_GT(tally.rejected - tally.accepted, tally.iterations / 2) << tally.iterations << " iterations";
  std::filesystem::remove_all(dir);
  testing::reset_diagnostics();
  logging::set_stderr_enabled(stderr_was);
}

}  // namespace
}  // namespace ember
