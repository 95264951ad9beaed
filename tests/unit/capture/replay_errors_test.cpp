// replay() on damaged execution records: each problem raises a ValueError naming the
// record and the metadata key, before the function is traced — never another exception
// type, never an out-of-range read of the arguments.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "ember/ember.h"
#include "ember/serialize.h"
#include "support/error_of.h"
#include "support/log_capture.h"

namespace ember {
namespace {

using testing::error_of;

class ReplayErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::reset_diagnostics();
    stderr_was_ = logging::set_stderr_enabled(false);
    dir_ = std::filesystem::temp_directory_path() / ("ember_replay_errors_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    config().dynamo.base_dir = dir_.string();
    config().dynamo.replay_record_enabled = true;
    fn_(ones({3}), 2.5);  // capture fails, the record is written
    config().dynamo.replay_record_enabled = false;
    for (const auto& e : std::filesystem::directory_iterator(dir_ / "replay")) record_ = e.path().string();
    meta_ = load_safetensors_metadata(record_);
    tensors_ = load_safetensors(record_);
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    testing::reset_diagnostics();
    logging::set_stderr_enabled(stderr_was_);
  }

  /// replay()'s message for the record with `key` set to `value` (erased when nullopt).
  std::string replay_error(const std::string& key, std::optional<std::string> value) {
    std::map<std::string, std::string> meta = meta_;
    if (value)
      meta[key] = *value;
    else
      meta.erase(key);
    save_safetensors(tensors_, record_, meta);
    return error_of([&] { replay(record_); }, ErrorKind::ValueError);
  }

  std::function<Tensor(const Tensor&, double)> fn_ = compile(
      [](const Tensor& x, double scale) {
        EMBER_CHECK(!is_compiling()) << "capture fails on purpose";
        return x * scale;
      },
      {.name = "replayed"});
  std::filesystem::path dir_;
  std::string record_;
  std::map<std::string, std::string> meta_;
  std::map<std::string, Tensor> tensors_;
  bool stderr_was_ = true;
};

#define EXPECT_STARTS(text, prefix) EXPECT_EQ((text).rfind(prefix, 0), 0u) << (text)

TEST_F(ReplayErrorsTest, TheRecordAsWrittenReplaysTheCaptureError) {
  EXPECT_NE(error_of([&] { replay(record_); }).find("capture fails on purpose"), std::string::npos);
}

TEST_F(ReplayErrorsTest, AnArgumentOfAnotherTypeThanTheFunctionTakesNamesTheKey) {
  // Used to reach std::get<double> on an int: std::bad_variant_access.
  EXPECT_STARTS(replay_error("arg1", "int:3"),
                "replay: " + record_ +
                    ": metadata 'arg1': expected a double ('double:X'): the type of argument 1 of "
                    "replayed, found 'int:3'");
}

TEST_F(ReplayErrorsTest, FewerArgumentsThanTheFunctionTakesNameTheCount) {
  // Used to index past the end of the argument vector.
  EXPECT_STARTS(replay_error("num_args", "1"),
                "replay: " + record_ +
                    ": metadata 'num_args': expected 2 (the number of arguments replayed takes), "
                    "found '1'");
}

TEST_F(ReplayErrorsTest, NumbersThatDoNotParseNameTheKey) {
  // Used to escape as std::invalid_argument / std::out_of_range from std::stod / std::stoll.
  EXPECT_STARTS(replay_error("arg1", "double:2.5x"),
                "replay: " + record_ + ": metadata 'arg1': expected a floating-point number, found 'double:2.5x'");
  EXPECT_STARTS(replay_error("num_args", "99999999999999999999"),
                "replay: " + record_ + ": metadata 'num_args': expected an integer within 64 bits");
}

TEST_F(ReplayErrorsTest, AMissingTensorNamesTheKey) {
  // Used to escape as std::out_of_range from std::map::at.
  tensors_.erase("arg0");
  tensors_["stray"] = ones({1});
  EXPECT_STARTS(replay_error("arg0", "tensor"),
                "replay: " + record_ + ": metadata 'arg0': expected a record whose file holds tensor 'arg0'");
}

TEST_F(ReplayErrorsTest, UnknownKindsKeysAndKnobsAreRejected) {
  EXPECT_STARTS(replay_error("arg0", "tensr"),
                "replay: " + record_ + ": metadata 'arg0': expected tensor, tensors:N, bool:0|1");
  EXPECT_STARTS(replay_error("arg9", "int:1"),
                "replay: " + record_ + ": metadata 'arg9': expected only the keys an execution record holds");
  EXPECT_STARTS(replay_error("config.dynamo.no_such_knob", "1"),
                "replay: " + record_ + ": metadata 'config.dynamo.no_such_knob': expected a knob that exists");
  EXPECT_STARTS(
      replay_error("config.dynamo.cache_size_limit", "many"),
      "replay: " + record_ + ": metadata 'config.dynamo.cache_size_limit': expected a valid value for the knob");
  EXPECT_EQ(config().dynamo.cache_size_limit, 8) << "a failed replay restores the config";
}

}  // namespace
}  // namespace ember
