// nn/attribute_hook.h — how a read of an nn::Attribute reaches capture. The nn library sits
// below capture, so capture installs a function here (from install_capture_hooks); see
// Note [module attributes] in docs/notes/capture.md.
#pragma once

#include "ember/nn/attribute.h"

namespace ember::nn {

/// Called on every read of an Attribute (cheap when no function is being traced).
using AttributeReadHook = void (*)(const AttributeCell& cell);

void set_attribute_read_hook(AttributeReadHook hook);

}  // namespace ember::nn
