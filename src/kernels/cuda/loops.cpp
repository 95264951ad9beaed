// kernels/cuda/loops.cpp — see loops.h.
#include "kernels/cuda/loops.h"

#include <algorithm>
#include <cstring>

#include "core/cuda.h"
#include "core/cuda_runtime.h"
#include "core/shape.h"
#include "ember/cuda.h"
#include "kernels/cpu/copy.h"
#include "kernels/cuda/nvrtc.h"

namespace ember::kernels::cuda {
namespace {

constexpr unsigned kBlock = 256;
constexpr int64_t kMaxGrid = int64_t{1} << 20;  // the loop strides over the rest

void* stream_of(const Device& d) { return core::cuda::current_stream_handle(d.index); }

/// An uninitialized contiguous tensor on `device` (CPU or CUDA), made without dispatch.
Tensor empty_on(IntArrayRef sizes, ScalarType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = sizes.vec();
  impl->strides = core::contiguous_strides(sizes);
  impl->dtype = dtype;
  impl->device = device;
  impl->refresh();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(impl->numel) * element_size(dtype), device);
  return Tensor(std::move(impl));
}

size_t nbytes(const Tensor& contiguous) { return static_cast<size_t>(contiguous.numel()) * contiguous.element_size(); }

void host_to_device(const Tensor& dst, const Tensor& src, bool non_blocking) {
  // One memcpy of src's values as they are (contiguous, its own dtype and sizes); the
  // device converts, broadcasts and scatters them into dst unless dst already matches.
  Tensor host = src;
  if (!src.is_contiguous()) {
    host = empty_on(src.sizes(), src.dtype(), kCPU);
    kernels::cpu::copy_into(host, src);
  }
  const bool direct = dst.is_contiguous() && dst.dtype() == src.dtype() && dst.sizes() == src.sizes();
  const Tensor staged = direct ? dst : empty_on(src.sizes(), src.dtype(), dst.device());
  ember::cuda::DeviceGuard g(dst.device().index);
  void* stream = stream_of(dst.device());
  core::cuda_rt::memcpy_async(staged.raw_data_ptr(), host.raw_data_ptr(), nbytes(host),
                              core::cuda_rt::CopyKind::HostToDevice, stream);
  if (!direct) copy_into(dst, staged);
  // From pageable memory the runtime has staged the bytes before returning; from pinned
  // memory the copy runs on, so the host waits unless asked not to.
  if (core::cuda::is_pinned(*host.storage()) && !non_blocking) core::cuda_rt::stream_synchronize(stream);
}

void device_to_host(const Tensor& dst, const Tensor& src, bool non_blocking) {
  // On the device: src converted and broadcast into a contiguous tensor like dst; then one
  // memcpy, straight into dst when dst is contiguous.
  Tensor contiguous = src;
  if (!(src.is_contiguous() && src.dtype() == dst.dtype() && src.sizes() == dst.sizes())) {
    contiguous = empty_on(dst.sizes(), dst.dtype(), src.device());
    copy_into(contiguous, src);
  }
  const Tensor target = dst.is_contiguous() ? dst : empty_on(dst.sizes(), dst.dtype(), kCPU);
  ember::cuda::DeviceGuard g(src.device().index);
  void* stream = stream_of(src.device());
  core::cuda_rt::memcpy_async(target.raw_data_ptr(), contiguous.raw_data_ptr(), nbytes(contiguous),
                              core::cuda_rt::CopyKind::DeviceToHost, stream);
  const bool async = non_blocking && target.is_same(dst) && core::cuda::is_pinned(*dst.storage());
  if (!async) core::cuda_rt::stream_synchronize(stream);
  if (!target.is_same(dst)) kernels::cpu::copy_into(dst, target);
}

}  // namespace

Tensor empty_device(IntArrayRef sizes, ScalarType dtype, Device device) { return empty_on(sizes, dtype, device); }

Geometry make_geometry(const std::vector<Tensor>& operands) {
  const Tensor& out = operands[0];
  const int64_t ndim = out.dim();
  std::vector<std::vector<int64_t>> strides;
  for (const Tensor& t : operands) strides.push_back(core::broadcast_strides(t.sizes(), t.strides(), out.sizes()));
  // Inner dims first while merging; size-1 dims vanish.
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> merged(operands.size());
  for (int64_t d = ndim - 1; d >= 0; --d) {
    const int64_t size = out.size(d);
    if (size == 1) continue;
    bool can_merge = !sizes.empty();
    for (size_t k = 0; k < operands.size() && can_merge; ++k)
      can_merge = strides[k][static_cast<size_t>(d)] == merged[k].back() * sizes.back();
    if (can_merge) {
      sizes.back() *= size;
      continue;
    }
    sizes.push_back(size);
    for (size_t k = 0; k < operands.size(); ++k) merged[k].push_back(strides[k][static_cast<size_t>(d)]);
  }
  EMBER_CHECK_KIND(ErrorKind::NotImplementedError, sizes.size() <= static_cast<size_t>(kMaxDims))
      << "CUDA pointwise kernels index at most " << kMaxDims << " dims after merging contiguous ones; this call has "
      << sizes.size();
  Geometry g;
  g.numel = out.numel();
  g.ndim = static_cast<int>(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t outer_first = sizes.size() - 1 - i;
    g.sizes[outer_first] = sizes[i];
    for (size_t k = 0; k < operands.size(); ++k) g.strides[k][outer_first] = merged[k][i];
  }
  return g;
}

namespace {

/// The bits of a 0-dim CPU tensor's element in the low bytes of a 64-bit argument.
unsigned long long value_bits(const Tensor& scalar) {
  unsigned long long bits = 0;
  std::memcpy(&bits, scalar.raw_data_ptr(), scalar.element_size());
  return bits;
}

/// The widest vector access (at most 16 bytes, at most 8 elements) of the dense operands.
int vector_width(const Tensor& out, const std::vector<const Tensor*>& dense) {
  int64_t widest = out.element_size();
  for (const Tensor* t : dense) widest = std::max<int64_t>(widest, t->element_size());
  return static_cast<int>(std::clamp<int64_t>(16 / widest, 1, 8));
}

bool aligned_to(const Tensor& t, int vec) {
  return reinterpret_cast<uintptr_t>(t.raw_data_ptr()) % static_cast<uintptr_t>(vec * t.element_size()) == 0;
}

}  // namespace

void pointwise(const PointwiseKernel& k, const Tensor& out, const std::vector<Tensor>& inputs, double p0) {
  EMBER_INTERNAL_ASSERT(out.is_cuda()) << "CUDA pointwise kernel '" << k.name << "' with an output on " << out.device();
  EMBER_INTERNAL_ASSERT(inputs.size() == k.inputs.size()) << "pointwise kernel '" << k.name << "' arity";
  if (out.numel() == 0) return;
  // Device operands index the Geometry; a 0-dim CPU tensor (a wrapped number, allowed
  // beside CUDA tensors as in PyTorch) is passed by value.
  std::vector<Tensor> operands{out};
  PointwiseLayout layout{.contiguous = false, .vec = 1, .inputs = {}};
  for (const Tensor& t : inputs) {
    if (t.is_cuda()) {
      EMBER_INTERNAL_ASSERT(t.device() == out.device()) << "pointwise kernel inputs on " << t.device();
      operands.push_back(t);
      layout.inputs.push_back(Access::Strided);
    } else {
      EMBER_INTERNAL_ASSERT(t.is_cpu() && t.dim() == 0) << "pointwise kernel input on " << t.device();
      layout.inputs.push_back(Access::Value);
    }
  }
  const Geometry g = make_geometry(operands);
  // Contiguous when one linear index reaches every element: at most one dim left, the
  // output dense along it, each input dense or one broadcast element.
  bool contiguous = g.ndim == 0 || (g.ndim == 1 && g.strides[0][0] == 1);
  for (size_t op = 1; op < operands.size() && contiguous && g.ndim == 1; ++op)
    contiguous = g.strides[op][0] == 1 || g.strides[op][0] == 0;
  std::vector<const Tensor*> dense;
  if (contiguous) {
    layout.contiguous = true;
    size_t op = 1;
    for (Access& a : layout.inputs) {
      if (a == Access::Value) continue;
      const bool broadcast = g.ndim == 1 && g.strides[op][0] == 0;
      a = broadcast ? Access::Broadcast : Access::Dense;
      if (!broadcast) dense.push_back(&operands[op]);
      ++op;
    }
    layout.vec = vector_width(out, dense);
  }
  void* fn = get_kernel(kernel_symbol(k, layout), out.device().index, [&] { return render_pointwise(k, layout); });

  // The arguments point into these two, so neither may grow past its reserve.
  std::vector<void*> ptrs;
  ptrs.reserve(inputs.size() + 1);
  std::vector<unsigned long long> values;
  values.reserve(inputs.size());
  ptrs.push_back(out.raw_data_ptr());
  std::vector<void*> args{&ptrs[0]};
  for (const Tensor& t : inputs) {
    if (t.is_cuda()) {
      ptrs.push_back(t.raw_data_ptr());
      args.push_back(&ptrs.back());
    } else {
      values.push_back(value_bits(t));
      args.push_back(&values.back());
    }
  }
  args.push_back(&p0);
  long long n = out.numel();
  int aligned = 0;
  int64_t threads = n;
  Geometry geometry = g;
  if (contiguous) {
    aligned = aligned_to(out, layout.vec);
    for (const Tensor* t : dense) aligned = aligned && aligned_to(*t, layout.vec);
    if (aligned) threads = std::max<int64_t>(n / layout.vec, n % layout.vec);
    args.push_back(&n);
    args.push_back(&aligned);
  } else {
    args.push_back(&geometry);
  }
  launch_threads(fn, out.device(), threads, std::move(args));
}

void launch_threads(void* function, Device device, int64_t threads, std::vector<void*> args) {
  launch_blocks(function, device, (threads + kBlock - 1) / kBlock, kBlock, args.data());
}

void launch_blocks(void* function, Device device, int64_t blocks, unsigned threads, void** args) {
  if (blocks == 0) return;
  ember::cuda::DeviceGuard guard(device.index);
  launch_kernel(function, static_cast<unsigned>(std::min(blocks, kMaxGrid)), threads, args, stream_of(device));
}

void copy_into(const Tensor& dst, const Tensor& src, bool non_blocking) {
  if (dst.numel() == 0) return;
  if (dst.is_cuda() && src.is_cuda()) {
    if (dst.device() == src.device()) {
      PointwiseKernel k{.name = "copy", .expr = "x", .helpers = {}, .inputs = {src.dtype()}, .compute = src.dtype(),
                        .out = dst.dtype()};
      return pointwise(k, dst, {src});
    }
    // Between two GPUs: through the host (peer copies are for a later part).
    return copy_into(dst, core::cuda::host_copy(src), false);
  }
  if (dst.is_cuda()) return host_to_device(dst, src, non_blocking);
  EMBER_INTERNAL_ASSERT(src.is_cuda()) << "kernels::cuda::copy_into between " << src.device() << " and " << dst.device();
  device_to_host(dst, src, non_blocking);
}

}  // namespace ember::kernels::cuda
