// kernels/cuda/cudnn.cpp — see cudnn.h. Built only with EMBER_CUDA and cuDNN's headers.
#include "kernels/cuda/cudnn.h"

#include <cudnn.h>

#include <climits>
#include <map>
#include <memory>
#include <vector>

#include "core/cuda.h"
#include "ember/cuda.h"
#include "ember/error.h"
#include "kernels/cuda/dynlib.h"
#include "kernels/cuda/plan_cache.h"

namespace ember::kernels::cuda {
namespace {

/// The cuDNN functions Ember calls, from the library opened at run time.
struct Dnn {
  decltype(&::cudnnGetVersion) version = nullptr;
  decltype(&::cudnnGetErrorString) error_string = nullptr;
  decltype(&::cudnnCreate) create = nullptr;
  decltype(&::cudnnSetStream) set_stream = nullptr;
  decltype(&::cudnnCreateTensorDescriptor) tensor_create = nullptr;
  decltype(&::cudnnDestroyTensorDescriptor) tensor_destroy = nullptr;
  decltype(&::cudnnSetTensorNdDescriptor) tensor_set = nullptr;
  decltype(&::cudnnCreateFilterDescriptor) filter_create = nullptr;
  decltype(&::cudnnDestroyFilterDescriptor) filter_destroy = nullptr;
  decltype(&::cudnnSetFilterNdDescriptor) filter_set = nullptr;
  decltype(&::cudnnCreateConvolutionDescriptor) conv_create = nullptr;
  decltype(&::cudnnDestroyConvolutionDescriptor) conv_destroy = nullptr;
  decltype(&::cudnnSetConvolutionNdDescriptor) conv_set = nullptr;
  decltype(&::cudnnSetConvolutionGroupCount) conv_groups = nullptr;
  decltype(&::cudnnSetConvolutionMathType) conv_math = nullptr;
  decltype(&::cudnnGetConvolutionForwardAlgorithm_v7) forward_algos = nullptr;
  decltype(&::cudnnGetConvolutionBackwardDataAlgorithm_v7) data_algos = nullptr;
  decltype(&::cudnnGetConvolutionBackwardFilterAlgorithm_v7) filter_algos = nullptr;
  decltype(&::cudnnConvolutionForward) forward = nullptr;
  decltype(&::cudnnConvolutionBackwardData) backward_data = nullptr;
  decltype(&::cudnnConvolutionBackwardFilter) backward_filter = nullptr;
  std::string error;  // why it cannot be used
};

const Dnn& dnn() {
  static const Dnn lib = [] {
    Dnn l;
    SymbolLoader load({.what = "cuDNN 9, which runs Ember's CUDA convolutions",
                       .env = "EMBER_CUDNN_LIBRARY",
                       .soname = "libcudnn.so.9",
                       .dirs = {EMBER_CUDA_LIBRARY_DIR, "/usr/local/cuda/lib64"}},
                      "cuDNN");
    load.get(l.version, "cudnnGetVersion");
    load.get(l.error_string, "cudnnGetErrorString");
    load.get(l.create, "cudnnCreate");
    load.get(l.set_stream, "cudnnSetStream");
    load.get(l.tensor_create, "cudnnCreateTensorDescriptor");
    load.get(l.tensor_destroy, "cudnnDestroyTensorDescriptor");
    load.get(l.tensor_set, "cudnnSetTensorNdDescriptor");
    load.get(l.filter_create, "cudnnCreateFilterDescriptor");
    load.get(l.filter_destroy, "cudnnDestroyFilterDescriptor");
    load.get(l.filter_set, "cudnnSetFilterNdDescriptor");
    load.get(l.conv_create, "cudnnCreateConvolutionDescriptor");
    load.get(l.conv_destroy, "cudnnDestroyConvolutionDescriptor");
    load.get(l.conv_set, "cudnnSetConvolutionNdDescriptor");
    load.get(l.conv_groups, "cudnnSetConvolutionGroupCount");
    load.get(l.conv_math, "cudnnSetConvolutionMathType");
    load.get(l.forward_algos, "cudnnGetConvolutionForwardAlgorithm_v7");
    load.get(l.data_algos, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    load.get(l.filter_algos, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    load.get(l.forward, "cudnnConvolutionForward");
    load.get(l.backward_data, "cudnnConvolutionBackwardData");
    load.get(l.backward_filter, "cudnnConvolutionBackwardFilter");
    l.error = load.error();
    if (l.error.empty() && l.version() / 10000 != 9)
      l.error = "Ember's convolutions need cuDNN 9; the library opened is version " + std::to_string(l.version());
    return l;
  }();
  EMBER_CHECK(lib.error.empty()) << lib.error;
  return lib;
}

void check(cudnnStatus_t s, const char* what) {
  EMBER_CHECK(s == CUDNN_STATUS_SUCCESS) << "cuDNN error in " << what << ": " << dnn().error_string(s);
}

/// A handle per thread and device (a handle runs one stream at a time), made on first use
/// and kept for the thread's life.
cudnnHandle_t handle_for(int device) {
  thread_local std::map<int, cudnnHandle_t> handles;
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  ember::cuda::DeviceGuard guard(device);
  cudnnHandle_t h = nullptr;
  check(dnn().create(&h), "cudnnCreate");
  return handles.emplace(device, h).first->second;
}

cudnnDataType_t data_type(ScalarType t) {
  switch (t) {
    case kFloat: return CUDNN_DATA_FLOAT;
    case kDouble: return CUDNN_DATA_DOUBLE;
    case kHalf: return CUDNN_DATA_HALF;
    case kBFloat16: return CUDNN_DATA_BFLOAT16;
    default: break;
  }
  EMBER_INTERNAL_ASSERT(false) << "cuDNN convolution of dtype " << t;
}

/// cuDNN takes int sizes: every size and element count must fit.
std::vector<int> ints(const int64_t (&v)[4]) {
  int64_t numel = 1;
  for (int64_t s : v) numel *= s;
  EMBER_CHECK_KIND(ErrorKind::NotImplementedError, numel <= INT_MAX)
      << "CUDA convolutions take tensors of at most " << INT_MAX << " elements, got one of " << numel;
  return {static_cast<int>(v[0]), static_cast<int>(v[1]), static_cast<int>(v[2]), static_cast<int>(v[3])};
}

/// Owns the descriptors of one geometry.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    const Dnn& l = dnn();
    if (x) l.tensor_destroy(x);
    if (y) l.tensor_destroy(y);
    if (w) l.filter_destroy(w);
    if (conv) l.conv_destroy(conv);
  }
};

cudnnTensorDescriptor_t tensor_descriptor(cudnnDataType_t t, const int64_t (&sizes)[4]) {
  const std::vector<int> dims = ints(sizes);
  const int strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  cudnnTensorDescriptor_t d = nullptr;
  check(dnn().tensor_create(&d), "cudnnCreateTensorDescriptor");
  check(dnn().tensor_set(d, t, 4, dims.data(), strides), "cudnnSetTensorNdDescriptor");
  return d;
}

bool not_supported(cudnnStatus_t s) { return s / 1000 == CUDNN_STATUS_NOT_SUPPORTED / 1000; }

/// cuDNN's candidates for a pass, best first: those it can run, and for float32 without
/// TF32 none that uses tensor cores (each then runs with FMA math, as PyTorch's do).
template <typename Perf>
std::vector<Perf> usable(const Perf* perf, int n, bool fma_only) {
  std::vector<Perf> r;
  for (int i = 0; i < n; ++i) {
    const bool tensor_cores =
        perf[i].mathType == CUDNN_TENSOR_OP_MATH || perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    if (perf[i].status == CUDNN_STATUS_SUCCESS && !(fma_only && tensor_cores)) r.push_back(perf[i]);
  }
  return r;
}

const char* pass_name(ConvPass p) {
  switch (p) {
    case ConvPass::Forward: return "cudnnConvolutionForward";
    case ConvPass::BackwardData: return "cudnnConvolutionBackwardData";
    case ConvPass::BackwardFilter: return "cudnnConvolutionBackwardFilter";
  }
  return "";
}

}  // namespace

bool cudnn_available(std::string* reason) {
  return library_available([] { dnn(); }, reason);
}

int64_t cudnn_version() { return static_cast<int64_t>(dnn().version()); }

namespace {

/// One call's geometry without its pointers: what a plan is cached under.
std::vector<int64_t> plan_key(const CudnnConv& c) {
  std::vector<int64_t> k{static_cast<int64_t>(c.pass), static_cast<int64_t>(c.dtype), c.allow_tf32 ? 1 : 0, c.groups,
                         c.device};
  for (int i = 0; i < 4; ++i) k.insert(k.end(), {c.x[i], c.w[i], c.y[i]});
  for (int i = 0; i < 2; ++i) k.insert(k.end(), {c.pad[i], c.stride[i], c.dilation[i]});
  return k;
}

/// A geometry's descriptors and the algorithm that ran for it: made on the first call of a
/// geometry (cuDNN's heuristics, then each candidate in turn until one runs, as PyTorch
/// does without benchmark mode), reused by later calls of the same geometry, so a call
/// after the first makes no descriptors and asks no heuristics.
struct Plan {
  Descriptors d;
  bool chosen = false;
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

void set_descriptors(Plan& plan, const CudnnConv& c) {
  const Dnn& l = dnn();
  const cudnnDataType_t type = data_type(c.dtype);
  const bool is_double = c.dtype == kDouble;
  Descriptors& d = plan.d;
  d.x = tensor_descriptor(type, c.x);
  d.y = tensor_descriptor(type, c.y);
  const std::vector<int> wdims = ints(c.w);
  check(l.filter_create(&d.w), "cudnnCreateFilterDescriptor");
  check(l.filter_set(d.w, type, CUDNN_TENSOR_NCHW, 4, wdims.data()), "cudnnSetFilterNdDescriptor");
  const int pad[2] = {static_cast<int>(c.pad[0]), static_cast<int>(c.pad[1])};
  const int stride[2] = {static_cast<int>(c.stride[0]), static_cast<int>(c.stride[1])};
  const int dilation[2] = {static_cast<int>(c.dilation[0]), static_cast<int>(c.dilation[1])};
  check(l.conv_create(&d.conv), "cudnnCreateConvolutionDescriptor");
  check(l.conv_set(d.conv, 2, pad, stride, dilation, CUDNN_CROSS_CORRELATION,
                   is_double ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT),
        "cudnnSetConvolutionNdDescriptor");
  check(l.conv_groups(d.conv, static_cast<int>(c.groups)), "cudnnSetConvolutionGroupCount");
  // PyTorch's math types: tensor cores for half and bfloat16, FMA only for float32 without
  // TF32; the candidates then say which each algorithm uses.
  const bool fma_only = c.dtype == kFloat && !c.allow_tf32;
  const cudnnMathType_t math = c.dtype == kHalf || c.dtype == kBFloat16 ? CUDNN_TENSOR_OP_MATH
                               : fma_only                                 ? CUDNN_FMA_MATH
                                                                          : CUDNN_DEFAULT_MATH;
  check(l.conv_math(d.conv, math), "cudnnSetConvolutionMathType");
}

/// The plan of `c`'s geometry on this thread (handles and descriptors are per thread).
Plan& plan_for(const CudnnConv& c) {
  return cached_plan<Plan>(plan_key(c), [&](Plan& plan) { set_descriptors(plan, c); });
}

}  // namespace

void cudnn_convolution(const CudnnConv& c) {
  const Dnn& l = dnn();
  const bool is_double = c.dtype == kDouble;
  const bool fma_only = c.dtype == kFloat && !c.allow_tf32;
  Plan& plan = plan_for(c);
  const Descriptors& d = plan.d;

  ember::cuda::DeviceGuard guard(c.device);
  const cudnnHandle_t handle = handle_for(c.device);
  check(l.set_stream(handle, static_cast<cudaStream_t>(core::cuda::current_stream_handle(c.device))),
        "cudnnSetStream");
  const double one_d = 1, zero_d = 0;
  const float one_f = 1, zero_f = 0;
  const void* one = is_double ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = is_double ? static_cast<const void*>(&zero_d) : &zero_f;

  // One algorithm with its math type; the workspace it asks for comes from the caching
  // allocator (stream-ordered, so it is given back as soon as the call is queued).
  auto run = [&](auto&& launch, int algo, cudnnMathType_t math, size_t bytes) {
    check(l.conv_math(d.conv, fma_only ? CUDNN_FMA_MATH : math), "cudnnSetConvolutionMathType");
    void* ws = bytes ? core::cuda::device_alloc(bytes, c.device) : nullptr;
    const cudnnStatus_t status = launch(algo, ws, bytes);
    if (ws) core::cuda::device_free(ws);
    return status;
  };
  // The plan's algorithm when one has run for this geometry; otherwise each candidate in
  // turn until one runs, which the plan keeps.
  auto run_plan = [&](auto&& heuristics, auto&& launch) {
    if (plan.chosen) {
      check(run(launch, plan.algo, plan.math, plan.workspace), pass_name(c.pass));
      return;
    }
    const auto candidates = heuristics();
    EMBER_CHECK(!candidates.empty()) << "cuDNN has no algorithm for this " << c.dtype << " convolution ("
                                     << pass_name(c.pass) << ", input [" << c.x[0] << ", " << c.x[1] << ", " << c.x[2]
                                     << ", " << c.x[3] << "], weight [" << c.w[0] << ", " << c.w[1] << ", " << c.w[2]
                                     << ", " << c.w[3] << "], groups " << c.groups << ")";
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    for (const auto& perf : candidates) {
      last = run(launch, static_cast<int>(perf.algo), perf.mathType, perf.memory);
      if (last == CUDNN_STATUS_SUCCESS) {
        plan.chosen = true;
        plan.algo = static_cast<int>(perf.algo);
        plan.math = perf.mathType;
        plan.workspace = perf.memory;
        break;
      }
      if (!not_supported(last)) break;
    }
    check(last, pass_name(c.pass));
  };
  switch (c.pass) {
    case ConvPass::Forward:
      run_plan(
          [&] {
            cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
            int found = 0;
            check(l.forward_algos(handle, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf),
                  "cudnnGetConvolutionForwardAlgorithm_v7");
            return usable(perf, found, fma_only);
          },
          [&](int algo, void* ws, size_t bytes) {
            return l.forward(handle, one, d.x, c.x_ptr, d.w, c.w_ptr, d.conv, static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                             ws, bytes, zero, d.y, c.y_ptr);
          });
      break;
    case ConvPass::BackwardData:
      run_plan(
          [&] {
            cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
            int found = 0;
            check(l.data_algos(handle, d.w, d.y, d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, perf),
                  "cudnnGetConvolutionBackwardDataAlgorithm_v7");
            return usable(perf, found, fma_only);
          },
          [&](int algo, void* ws, size_t bytes) {
            return l.backward_data(handle, one, d.w, c.w_ptr, d.y, c.y_ptr, d.conv,
                                   static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws, bytes, zero, d.x, c.x_ptr);
          });
      break;
    case ConvPass::BackwardFilter:
      run_plan(
          [&] {
            cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
            int found = 0;
            check(l.filter_algos(handle, d.x, d.y, d.conv, d.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &found, perf),
                  "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
            return usable(perf, found, fma_only);
          },
          [&](int algo, void* ws, size_t bytes) {
            return l.backward_filter(handle, one, d.x, c.x_ptr, d.y, c.y_ptr, d.conv,
                                     static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws, bytes, zero, d.w, c.w_ptr);
          });
      break;
  }
}

}  // namespace ember::kernels::cuda
