// ops/conv.cpp — (being written)
#include "ops/families.h"

namespace ember::ops {
void register_conv_ops(Registry&) {}
}  // namespace ember::ops
