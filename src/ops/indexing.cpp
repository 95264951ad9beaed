// ops/indexing.cpp — (being written)
#include "ops/families.h"

namespace ember::ops {
void register_indexing_ops(Registry&) {}
}  // namespace ember::ops
