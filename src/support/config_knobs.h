// support/config_knobs.h — the shape of a row of the knob registry (config_knobs.cpp):
// how a knob is named, where its value lives, and which text it accepts.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "ember/config.h"

namespace ember::support {

/// The field a knob sets; its alternative decides how text is parsed.
using FieldRef = std::variant<bool*, int64_t*, double*, std::string*>;

struct Knob {
  const char* name;                  // C++ name: "dynamo.cache_size_limit"
  std::vector<const char*> aliases;  // other C++ names
  std::vector<const char*> env;      // environment variables, PyTorch's name first
  FieldRef (*field)(Config&);        // nullptr: TORCH_LOGS, whose value the log registry holds
  const char* meaning;
  std::vector<const char*> choices = {};  // a string knob taking only these values
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
  const char* default_note = nullptr;  // shown as the default when it depends on the machine
  void (*after_set)() = nullptr;       // run after config_set changes the knob
};

/// The registry, in the order `ember config` lists it.
const std::vector<Knob>& knob_table();

/// Config{} with the defaults that depend on the machine filled in (directories).
Config default_config();

}  // namespace ember::support
