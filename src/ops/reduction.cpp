// ops/reduction.cpp — (being written)
#include "ops/families.h"

namespace ember::ops {
void register_reduction_ops(Registry&) {}
}  // namespace ember::ops
