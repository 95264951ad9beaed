// core/generator.cpp — see generator.h.
#include "core/generator.h"

namespace ember::core {

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = PhiloxState{seed, 0};
}

PhiloxState Generator::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

void Generator::set_state(PhiloxState s) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = s;
}

PhiloxState Generator::reserve(uint64_t counters) {
  std::lock_guard<std::mutex> lock(mutex_);
  PhiloxState s = state_;
  state_.offset += counters;
  return s;
}

Generator& default_generator() {
  static Generator g;
  return g;
}

}  // namespace ember::core
