// Every Core ATen operator (tests/ops/core_aten_ops.txt, the ops PyTorch tags `core`) is
// registered, or named with a reason in tests/ops/core_aten_missing.txt; and that file
// names no op Ember registers, so it stays the honest list of what is left. See Note
// [registry], "The Core ATen operator set".
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "ops/registry.h"

namespace ember::ops {
namespace {

/// The lines of `file` that are not blank or `#` comments: the first word, and the rest.
std::map<std::string, std::string> read_list(const std::string& file) {
  std::ifstream in(std::string(EMBER_OPS_TEST_DIR) + "/" + file);
  EXPECT_TRUE(in.good()) << "cannot read tests/ops/" << file;
  std::map<std::string, std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name, rest;
    if (!(words >> name) || name[0] == '#') continue;
    std::getline(words >> std::ws, rest);
    EXPECT_FALSE(out.count(name)) << file << " names " << name << " twice";
    out[name] = rest;
  }
  return out;
}

TEST(CoreAten, EveryCoreOpIsRegisteredOrListedAsMissing) {
  const auto core = read_list("core_aten_ops.txt");
  const auto missing = read_list("core_aten_missing.txt");
  ASSERT_GT(core.size(), 150u);
  std::string unaccounted;
  for (const auto& [name, rest] : core) {
    if (!registry().find("aten::" + name) && !missing.count(name)) unaccounted += " " + name;
  }
  EXPECT_EQ(unaccounted, "") << "Core ATen ops neither registered nor in tests/ops/core_aten_missing.txt";
}

TEST(CoreAten, MissingListNamesOnlyUnregisteredCoreOpsWithAReason) {
  const auto core = read_list("core_aten_ops.txt");
  for (const auto& [name, reason] : read_list("core_aten_missing.txt")) {
    EXPECT_TRUE(core.count(name)) << name << " is in core_aten_missing.txt but is not a Core ATen op";
    EXPECT_EQ(registry().find("aten::" + name), nullptr)
        << name << " is registered: remove it from tests/ops/core_aten_missing.txt";
    EXPECT_FALSE(reason.empty()) << name << " in core_aten_missing.txt has no reason";
  }
}

}  // namespace
}  // namespace ember::ops
