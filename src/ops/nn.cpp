// ops/nn.cpp — (being written)
#include "ops/families.h"

namespace ember::ops {
void register_nn_ops(Registry&) {}
}  // namespace ember::ops
