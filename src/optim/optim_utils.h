// Helpers shared by the optimizers' sources.
#pragma once

#include <cmath>
#include <string>

#include "ember/optim.h"

namespace ember::optim {

/// `v` as Python's repr(float) writes it ("-1.0", "0.001", "1e-08"), for torch's messages.
std::string py_float(double v);

}  // namespace ember::optim
