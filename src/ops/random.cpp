// ops/random.cpp — (being written)
#include "ops/families.h"

namespace ember::ops {
void register_random_ops(Registry&) {}
}  // namespace ember::ops
