// The fixture of the host tests that compile rendered CUDA source with NVRTC: skips when
// NVRTC cannot be opened, and points the cubin cache at a fresh directory of its own.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "ember/config.h"
#include "kernels/cuda/nvrtc.h"

namespace ember::kernels::cuda {

class Nvrtc : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (!nvrtc_available(&reason)) GTEST_SKIP() << "NVRTC not available: " << reason;
    saved_dir_ = config().inductor.cache_dir;
    dir_ = std::filesystem::temp_directory_path() / ("ember_nvrtc_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    config().inductor.cache_dir = dir_.string();
  }
  void TearDown() override {
    if (dir_.empty()) return;
    config().inductor.cache_dir = saved_dir_;
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  std::string saved_dir_;
};

}  // namespace ember::kernels::cuda
