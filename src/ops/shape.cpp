// ops/shape.cpp — (being written)
#include "ops/families.h"

namespace ember::ops {
void register_shape_ops(Registry&) {}
}  // namespace ember::ops
