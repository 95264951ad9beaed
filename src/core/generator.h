// core/generator.h — the default random generator's state, (seed, offset) for Philox
// 4x32-10. A random op reserves the counters it will read; see Note [random] in
// docs/notes/random.md for the contract that compiled code relies on.
#pragma once

#include <cstdint>
#include <mutex>

namespace ember::core {

/// The seed the default generator starts with (PyTorch's default CPU seed).
inline constexpr uint64_t kDefaultSeed = 67280421310721ULL;

struct PhiloxState {
  uint64_t seed = kDefaultSeed;
  uint64_t offset = 0;
};

class Generator {
 public:
  /// Sets the seed and rewinds the offset to 0 (torch.manual_seed).
  void manual_seed(uint64_t seed);
  PhiloxState state() const;
  void set_state(PhiloxState s);
  /// Returns the state to draw from and advances the offset by `counters`.
  PhiloxState reserve(uint64_t counters);

 private:
  mutable std::mutex mutex_;
  PhiloxState state_;
};

Generator& default_generator();

}  // namespace ember::core
