// ops/linalg.cpp — (being written)
#include "ops/families.h"

namespace ember::ops {
void register_linalg_ops(Registry&) {}
}  // namespace ember::ops
