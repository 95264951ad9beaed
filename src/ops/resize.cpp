// ops/resize.cpp — resize_: the one op that changes its argument's sizes and may grow
// the storage under it (Note [resize_], docs/notes/registry.md).
#include "ops/resize.h"

#include <optional>
#include <string>
#include <vector>

#include "core/shape.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"

namespace ember::ops {

void check_resize_arguments(IntArrayRef sizes, const IValue& memory_format) {
  for (size_t d = 0; d < sizes.size(); ++d) {
    EMBER_CHECK(sizes[d] >= 0) << "resize_: Trying to create tensor with negative dimension " << sizes[d] << ": "
                               << sizes << " (dim " << d << ")";
  }
  int64_t numel = 1;
  for (int64_t s : sizes) {
    EMBER_CHECK(!__builtin_mul_overflow(numel, s, &numel))
        << "resize_: the size " << sizes << " has more elements than fit in memory";
  }
  if (memory_format.is_none()) return;
  const std::string& f = memory_format.to_string_ref();
  const size_t dim = sizes.size();
  EMBER_CHECK(f != "preserve_format") << "resize_: Unsupported memory format Preserve (resize_ takes "
                                      << "contiguous_format, channels_last or channels_last_3d)";
  EMBER_CHECK(f != "channels_last" || dim == 4)
      << "resize_: required rank 4 tensor to use channels_last format, got size of rank " << dim;
  EMBER_CHECK(f != "channels_last_3d" || dim == 5)
      << "resize_: required rank 5 tensor to use channels_last_3d format, got size of rank " << dim;
}

std::vector<int64_t> resize_strides(IntArrayRef sizes, const IValue& memory_format) {
  const bool channels_last = !memory_format.is_none() && memory_format.to_string_ref() != "contiguous_format";
  return channels_last ? core::channels_last_strides(sizes) : core::contiguous_strides(sizes);
}

namespace {

/// The bytes `self` needs from its storage at `sizes` with contiguous strides: (offset +
/// numel) elements, as PyTorch's computeStorageNbytesContiguous. `sizes` passed
/// check_resize_arguments (its product fits); raises when the bytes do not.
size_t resize_nbytes(const Tensor& self, const std::vector<int64_t>& sizes) {
  uint64_t bytes = 0;
  EMBER_CHECK(!__builtin_add_overflow(static_cast<uint64_t>(core::numel_of(sizes)),
                                      static_cast<uint64_t>(self.impl()->storage_offset), &bytes) &&
              !__builtin_mul_overflow(bytes, static_cast<uint64_t>(self.element_size()), &bytes))
      << "resize_: the size " << IntArrayRef(sizes) << " at storage offset " << self.impl()->storage_offset
      << " needs more bytes than fit in memory";
  return static_cast<size_t>(bytes);
}

/// Everything resize_ checks before it changes anything: a failed call leaves the tensor
/// as it was (PyTorch sets the new sizes before it finds a storage it cannot grow).
void check_resize(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const std::vector<int64_t>& sizes = a[1].to_int_list();
  check_resize_arguments(sizes, a[2]);
  const size_t needed = resize_nbytes(self, sizes);
  const bool grows = core::numel_of(sizes) > 0 && needed > self.storage()->nbytes();
  EMBER_CHECK(!grows || self.storage()->resizable())
      << "resize_: Trying to resize storage that is not resizable: the tensor's memory was not allocated by Ember "
      << "(from_blob), and " << IntArrayRef(sizes) << " needs " << needed << " bytes of its "
      << self.storage()->nbytes();
}

/// The geometry change itself, the same on every device (a meta tensor's storage only
/// records its size): PyTorch's resize_impl_cpu_ with its restride by memory format.
void resize_in_place(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const std::vector<int64_t>& sizes = a[1].to_int_list();
  TensorImpl& impl = *self.impl();
  // Equal sizes and no memory format: nothing changes, not even the strides.
  if (impl.sizes == sizes && a[2].is_none()) return;
  impl.strides = resize_strides(sizes, a[2]);
  impl.sizes = sizes;
  impl.refresh();
  // A resize to no elements leaves the storage alone (offset and all), as PyTorch.
  if (impl.numel == 0) return;
  const size_t needed = resize_nbytes(self, sizes);
  if (needed > impl.storage->nbytes()) impl.storage->resize_bytes(needed);
}

}  // namespace

// Note [resize_]: resize_ is registered as a functional op with no outputs, so it passes
// the layers: capture ends the graph before it (GB0011), autograd refuses a tensor that
// requires grad, and the backend calls run_resize (its kernel works on geometry and the
// Storage, on every device). An exported program's resize_ is functionalized on import
// (export/node_import.cpp), as PyTorch's run_decompositions does.
void register_resize_ops(Registry& r) {
  r.def("resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor(a!)")
      .set_meta([](const Stack& a) {
        check_resize(a);
        return std::vector<TensorMeta>{};
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>&) { resize_in_place(a); })
      .set_resizes()
      .set_not_differentiable()
      .set_complex();
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {

const char* memory_format_name(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous:
      return "contiguous_format";
    case MemoryFormat::ChannelsLast:
      return "channels_last";
    case MemoryFormat::ChannelsLast3d:
      return "channels_last_3d";
    case MemoryFormat::Preserve:
      return "preserve_format";
  }
  return "contiguous_format";
}

Tensor& Tensor::resize_(IntArrayRef size, std::optional<MemoryFormat> memory_format, Loc loc) {
  IValue format = memory_format ? IValue(std::string(memory_format_name(*memory_format))) : IValue();
  return ops::call_inplace(EMBER_OP("aten::resize_"), *this, {*this, size.vec(), std::move(format)}, loc);
}

}  // namespace ember
