// ops/resize.h — the rules of resize_ shared by its kernel and by the importer, which
// functionalizes an exported program's resize_ (Note [resize_], docs/notes/registry.md).
#pragma once

#include <vector>

#include "ember/ivalue.h"

namespace ember::ops {

/// Checks resize_'s sizes (none negative, their product within int64) and memory format (None, contiguous_format, or a
/// channels_last format of its rank; never preserve_format) as PyTorch does.
void check_resize_arguments(IntArrayRef sizes, const IValue& memory_format);
/// The strides resize_ gives a tensor of `sizes`: channels_last's for that memory format,
/// contiguous ones otherwise.
std::vector<int64_t> resize_strides(IntArrayRef sizes, const IValue& memory_format);

}  // namespace ember::ops
