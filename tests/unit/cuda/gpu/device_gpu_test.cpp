// The cuda device on a GPU: copies between host and device (pinned and non_blocking
// too) and between dtypes, factories with a device option, printing, the mixed-device
// error, streams and events, the caching allocator's statistics and OOM message, and what
// CUDA refuses (FFTs, complex tensors).
#include "gpu_helpers.h"
#include "cpu_only_op.h"
#include "support/error_of.h"

namespace ember::gpu_test {
namespace {

class CudaDeviceGpu : public Gpu {};

TEST_F(CudaDeviceGpu, CopiesRoundTripForEveryDtype) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool}) {
    const Tensor cpu = linspace(-3, 8, 24, kDouble).reshape({2, 3, 4}).to(t);
    const Tensor gpu = cpu.cuda();
    EXPECT_TRUE(gpu.is_cuda());
    EXPECT_EQ(gpu.device().str(), "cuda:0");
    EXPECT_EQ(gpu.dtype(), t);
    const Tensor back = gpu.cpu();
    EXPECT_TRUE(back.is_cpu());
    EXPECT_TRUE(mismatch(back, cpu).empty()) << t << ": " << mismatch(back, cpu);
  }
}

TEST_F(CudaDeviceGpu, NonContiguousTensorsCopyBothWays) {
  const Tensor cpu = arange(24, kFloat).reshape({4, 6});
  // A copy to another device keeps a non-dense view's dims order with dense strides, as
  // PyTorch's to() (empty_like's preserve_format): [3, 4] strides (2, 6) arrives as (1, 3).
  const Tensor view = cpu.t().slice(0, 1, 6, 2);
  const Tensor dense = view.clone();
  ASSERT_EQ(dense.strides().vec(), (std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(mismatch(view.cuda(), dense.cuda()).empty()) << mismatch(view.cuda(), dense.cuda());
  EXPECT_TRUE(mismatch(view.cuda().cpu(), dense).empty()) << mismatch(view.cuda().cpu(), dense);
  const Tensor gpu = cpu.cuda();
  const Tensor gview = gpu.t().slice(0, 1, 6, 2);
  EXPECT_TRUE(mismatch(gview.cpu(), dense).empty()) << mismatch(gview.cpu(), dense);
  // copy_ into a strided CUDA view from a CPU tensor, with a dtype change.
  Tensor target = zeros({4, 6}, TensorOptions(kDouble).device("cuda"));
  Tensor tview = target.slice(1, 0, 6, 3);
  Tensor src = ones({4, 2}, kInt32);
  tview.copy_(src);
  Tensor expected = zeros({4, 6}, kDouble);
  expected.slice(1, 0, 6, 3).copy_(src);
  EXPECT_TRUE(mismatch(target.cpu(), expected).empty()) << mismatch(target.cpu(), expected);
}

TEST_F(CudaDeviceGpu, DtypeCastsOnTheDeviceMatchTheCpu) {
  const Tensor src = Tensor(linspace(-300, 300, 41, kDouble));
  Tensor with_nan = where(eq(src, 0.0), scalar_tensor(NAN, kDouble), src);
  for (ScalarType from : {kDouble, kFloat, kHalf, kBFloat16, kInt64, kInt16, kBool}) {
    for (ScalarType to : {kDouble, kFloat, kHalf, kBFloat16, kInt64, kInt32, kInt8, kUInt8, kBool}) {
      const Tensor x = with_nan.to(from);
      const Tensor expected = x.to(to);
      const Tensor actual = x.cuda().to(to);
      EXPECT_TRUE(actual.is_cuda());
      EXPECT_TRUE(mismatch(actual, expected).empty()) << from << " -> " << to << ": " << mismatch(actual, expected);
    }
  }
}

TEST_F(CudaDeviceGpu, PinnedMemoryCopiesAsynchronouslyWhenAsked) {
  const Tensor cpu = arange(1 << 20, kFloat);
  const Tensor pinned = cpu.pin_memory();
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_FALSE(cpu.is_pinned());
  const Tensor gpu = pinned.to(Device("cuda"), /*non_blocking=*/true);
  Tensor back = empty({1 << 20}, kFloat).pin_memory();
  back.copy_(gpu, /*non_blocking=*/true);
  cuda::current_stream().synchronize();
  EXPECT_TRUE(mismatch(back, cpu).empty());
}

TEST_F(CudaDeviceGpu, DeviceToDeviceCopiesAndClones) {
  const Tensor a = arange(10, kInt64).cuda();
  const Tensor b = a.clone();
  EXPECT_NE(a.storage()->data(), b.storage()->data());
  Tensor c = empty_like(a);
  c.copy_(a);
  EXPECT_EQ(c.to_vector<int64_t>(), a.to_vector<int64_t>());
  EXPECT_EQ(a.to(Device("cuda:0")).storage(), a.storage());  // already there: no copy
}

TEST_F(CudaDeviceGpu, FactoriesTakeTheDeviceOption) {
  const TensorOptions on_gpu = TensorOptions(kFloat).device("cuda");
  EXPECT_EQ(zeros({2, 3}, on_gpu).to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(ones({2, 3}, on_gpu).to_vector<float>(), std::vector<float>(6, 1.f));
  EXPECT_EQ(full({4}, 2.5, on_gpu).to_vector<float>(), std::vector<float>(4, 2.5f));
  EXPECT_EQ(full({2}, int64_t{1} << 40, TensorOptions(kInt64).device("cuda")).to_vector<int64_t>(),
            std::vector<int64_t>(2, int64_t{1} << 40));
  const Tensor e = empty({3}, on_gpu);
  EXPECT_TRUE(e.is_cuda());
  EXPECT_EQ(e.device().str(), "cuda:0");
  const Tensor like = ones_like(e);
  EXPECT_TRUE(like.is_cuda());
  EXPECT_EQ(zeros_like(e).to_vector<float>(), std::vector<float>(3, 0.f));
  EXPECT_EQ(full_like(e, 4).to_vector<float>(), std::vector<float>(3, 4.f));
  EXPECT_EQ(arange(0, 10, 3, TensorOptions(kInt64).device("cuda")).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_TRUE(mismatch(eye(3, on_gpu), eye(3)).empty());
  Tensor f = zeros({3}, on_gpu);
  f.fill_(7);
  EXPECT_EQ(f.to_vector<float>(), std::vector<float>(3, 7.f));
  EXPECT_EQ(scalar_tensor(3, on_gpu).item().to_double(), 3.0);
}

TEST_F(CudaDeviceGpu, PrintingShowsValuesAndTheDevice) {
  const Tensor t = tensor<float>({1.5f, -2.f, 3.f}, {}, TensorOptions().device("cuda"));
  EXPECT_EQ(t.str(), "tensor([ 1.5000, -2.0000,  3.0000], device='cuda:0')");
  EXPECT_EQ(arange(3, TensorOptions(kInt32).device("cuda")).str(), "tensor([0, 1, 2], device='cuda:0', dtype=torch.int32)");
}

TEST_F(CudaDeviceGpu, MixingDevicesRaisesPyTorchsError) {
  const Tensor g = ones({2}, TensorOptions().device("cuda"));
  ember::testing::expect_error(
      [&] { add(g, ones({2})); },
      "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!");
}

TEST_F(CudaDeviceGpu, OpWithoutCudaKernelRaisesNotImplemented) {
  const Tensor g = ones({2, 2}, TensorOptions().device("cuda"));
  ember::testing::expect_error([&] { call_op(ember::testing::cpu_only_op(), {g}); },
                                "with arguments from the 'CUDA' backend", ErrorKind::NotImplementedError);
}

// What CUDA does not run yet is refused, never run wrong: the FFTs (no cuFFT path) and any
// other op on a complex tensor. (3-D convolution runs on cuDNN: conv_test.cpp.)
TEST_F(CudaDeviceGpu, FftAndComplexOpsAreRefused) {
  const Tensor real = ones({8}, TensorOptions().device("cuda"));
  ember::testing::expect_error([&] { _fft_r2c(real, {0}, 0, true); },
                                "Could not run 'aten::_fft_r2c' with arguments from the 'CUDA' backend",
                                ErrorKind::NotImplementedError);
  const Tensor z = view_as_complex(ones({4, 2})).cuda();
  EXPECT_EQ(z.dtype(), kComplexFloat);
  ember::testing::expect_error([&] { add(z, z); }, "not implemented for 'ComplexFloat'",
                                ErrorKind::NotImplementedError);
}

TEST_F(CudaDeviceGpu, AllocatorStatsFollowAllocationsAndFrees) {
  cuda::synchronize();
  cuda::empty_cache();
  const size_t base = cuda::memory_allocated();
  cuda::reset_peak_memory_stats();
  {
    Tensor a = empty({1000}, TensorOptions(kFloat).device("cuda"));  // 4000 bytes -> 4096
    EXPECT_EQ(cuda::memory_allocated() - base, 4096u);
    Tensor b = empty({1 << 20}, TensorOptions(kFloat).device("cuda"));  // 4 MiB
    EXPECT_EQ(cuda::memory_allocated() - base, 4096u + (4u << 20));
    EXPECT_GE(cuda::memory_reserved(), cuda::memory_allocated());
  }
  EXPECT_EQ(cuda::memory_allocated(), base);
  EXPECT_EQ(cuda::max_memory_allocated() - base, 4096u + (4u << 20));
  const size_t reserved = cuda::memory_reserved();
  EXPECT_GT(reserved, 0u);  // freed blocks stay cached
  cuda::empty_cache();
  EXPECT_LT(cuda::memory_reserved(), reserved);
  cuda::reset_peak_memory_stats();
  EXPECT_EQ(cuda::max_memory_allocated(), cuda::memory_allocated());
}

TEST_F(CudaDeviceGpu, AbsurdRequestRaisesCudaOutOfMemoryWithTheNumbers) {
  try {
    empty({int64_t{1} << 40}, TensorOptions(kFloat).device("cuda"));  // 4 TiB
    ADD_FAILURE() << "expected an out-of-memory error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("CUDA out of memory. Tried to allocate 4096.00 GiB. GPU 0 has a total capacity of "),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("is allocated by Ember"), std::string::npos) << msg;
    EXPECT_NE(msg.find("is reserved by Ember but unallocated"), std::string::npos) << msg;
  }
  // The device is still usable.
  EXPECT_EQ(ones({2}, TensorOptions().device("cuda")).to_vector<float>(), std::vector<float>(2, 1.f));
}

TEST_F(CudaDeviceGpu, StreamsOrderWorkAndRecordStreamDefersReuse) {
  cuda::Stream side = cuda::Stream::create();
  Tensor x = arange(1 << 16, kFloat).cuda();
  cuda::Event ready;
  ready.record();
  Tensor y;
  {
    cuda::StreamGuard guard(side);
    EXPECT_EQ(cuda::current_stream().handle(), side.handle());
    ready.wait(side);
    y = mul(x, 2.0);
    cuda::record_stream(x, side);
  }
  EXPECT_EQ(cuda::current_stream().handle(), nullptr);
  side.synchronize();
  EXPECT_TRUE(mismatch(y, mul(arange(1 << 16, kFloat), 2.0)).empty());
  cuda::Event start(true), end(true);
  start.record();
  Tensor z = add(x, x);
  end.record();
  end.synchronize();
  EXPECT_GE(start.elapsed_time(end), 0.f);
  EXPECT_TRUE(end.query());
}

TEST_F(CudaDeviceGpu, DeviceGuardRestoresTheCurrentDevice) {
  const int before = cuda::current_device();
  {
    cuda::DeviceGuard g(0);
    EXPECT_EQ(cuda::current_device(), 0);
  }
  EXPECT_EQ(cuda::current_device(), before);
  EXPECT_FALSE(cuda::get_device_name().empty());
  EXPECT_GE(cuda::get_device_capability().first, 5);
}

}  // namespace
}  // namespace ember::gpu_test
