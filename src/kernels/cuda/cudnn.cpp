// kernels/cuda/cudnn.cpp — see cudnn.h. Built only with EMBER_CUDA and cuDNN's headers.
#include "kernels/cuda/cudnn.h"

#include <cudnn.h>

#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
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
  // The graph ("backend") API: descriptors made once per geometry, an execution plan, and
  // per call only a variant pack of pointers.
  decltype(&::cudnnBackendCreateDescriptor) backend_create = nullptr;
  decltype(&::cudnnBackendDestroyDescriptor) backend_destroy = nullptr;
  decltype(&::cudnnBackendSetAttribute) backend_set = nullptr;
  decltype(&::cudnnBackendGetAttribute) backend_get = nullptr;
  decltype(&::cudnnBackendFinalize) backend_finalize = nullptr;
  decltype(&::cudnnBackendExecute) backend_execute = nullptr;
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
    load.get(l.backend_create, "cudnnBackendCreateDescriptor");
    load.get(l.backend_destroy, "cudnnBackendDestroyDescriptor");
    load.get(l.backend_set, "cudnnBackendSetAttribute");
    load.get(l.backend_get, "cudnnBackendGetAttribute");
    load.get(l.backend_finalize, "cudnnBackendFinalize");
    load.get(l.backend_execute, "cudnnBackendExecute");
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

/// The rank of `c`'s tensors: NCHW (or NCDHW) for 2 (or 3) spatial dims.
int rank_of(const CudnnConv& c) { return c.spatial + 2; }

/// The `n` values `v` as ints (the v7 API's sizes, padding, strides and dilations).
std::vector<int> narrow(const int64_t* v, int n) {
  std::vector<int> r;
  for (int i = 0; i < n; ++i) r.push_back(static_cast<int>(v[i]));
  return r;
}

/// cuDNN takes int sizes: every size and element count of the `rank` sizes `v` must fit.
std::vector<int> ints(const int64_t* v, int rank) {
  int64_t numel = 1;
  for (int i = 0; i < rank; ++i) numel *= v[i];
  EMBER_CHECK_KIND(ErrorKind::NotImplementedError, numel <= INT_MAX)
      << "CUDA convolutions take tensors of at most " << INT_MAX << " elements, got one of " << numel;
  return narrow(v, rank);
}

/// The strides of a contiguous tensor of the `rank` sizes `sizes`.
std::vector<int64_t> contiguous_strides(const int64_t* sizes, int rank) {
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
  for (int i = rank - 2; i >= 0; --i) strides[static_cast<size_t>(i)] = strides[static_cast<size_t>(i) + 1] * sizes[i + 1];
  return strides;
}

/// "[a, b, ...]": the `rank` sizes `v`, for messages.
std::string sizes_str(const int64_t* v, int rank) {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
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

/// A contiguous tensor of the `rank` sizes `sizes` in the v7 API.
cudnnTensorDescriptor_t tensor_descriptor(cudnnDataType_t t, const int64_t* sizes, int rank) {
  const std::vector<int> dims = ints(sizes, rank);
  const std::vector<int64_t> wide = contiguous_strides(sizes, rank);
  const std::vector<int> strides = narrow(wide.data(), rank);  // below INT_MAX: ints checked the count
  cudnnTensorDescriptor_t d = nullptr;
  check(dnn().tensor_create(&d), "cudnnCreateTensorDescriptor");
  check(dnn().tensor_set(d, t, rank, dims.data(), strides.data()), "cudnnSetTensorNdDescriptor");
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
                         c.device, c.spatial};
  for (int i = 0; i < rank_of(c); ++i) k.insert(k.end(), {c.x[i], c.w[i], c.y[i]});
  for (int i = 0; i < c.spatial; ++i) k.insert(k.end(), {c.pad[i], c.stride[i], c.dilation[i]});
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
  const int rank = rank_of(c);
  d.x = tensor_descriptor(type, c.x, rank);
  d.y = tensor_descriptor(type, c.y, rank);
  const std::vector<int> wdims = ints(c.w, rank);
  check(l.filter_create(&d.w), "cudnnCreateFilterDescriptor");
  // CUDNN_TENSOR_NCHW stands for NCDHW too: the filter's dims in their order, contiguous.
  check(l.filter_set(d.w, type, CUDNN_TENSOR_NCHW, rank, wdims.data()), "cudnnSetFilterNdDescriptor");
  const std::vector<int> pad = narrow(c.pad, c.spatial), stride = narrow(c.stride, c.spatial),
                         dilation = narrow(c.dilation, c.spatial);
  check(l.conv_create(&d.conv), "cudnnCreateConvolutionDescriptor");
  check(l.conv_set(d.conv, c.spatial, pad.data(), stride.data(), dilation.data(), CUDNN_CROSS_CORRELATION,
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

/// One descriptor of cuDNN's graph API, destroyed with its owner.
class BackendDescriptor {
 public:
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type) {
    check(dnn().backend_create(type, &d_), "cudnnBackendCreateDescriptor");
  }
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;
  ~BackendDescriptor() {
    if (d_) dnn().backend_destroy(d_);
  }
  cudnnBackendDescriptor_t get() const { return d_; }
  template <typename T>
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n, const T* values) {
    check(dnn().backend_set(d_, name, type, n, values), "cudnnBackendSetAttribute");
  }
  void set(cudnnBackendAttributeName_t name, const BackendDescriptor& other) {
    const cudnnBackendDescriptor_t d = other.get();
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
  }
  cudnnStatus_t finalize() { return dnn().backend_finalize(d_); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};
using Backend = std::unique_ptr<BackendDescriptor>;

/// The variant pack's ids of x, w and y (dx, dw, dy in the backward passes).
constexpr int64_t kX = 1, kW = 2, kY = 3;

/// The largest power of two up to 16 dividing `p`: a tensor descriptor's byte alignment,
/// part of a graph plan's key (an engine chosen for aligned pointers may need them).
int64_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int64_t align = 16;
  while (align > 1 && a % static_cast<uintptr_t>(align) != 0) align /= 2;
  return align;
}

/// A contiguous tensor of the `rank` sizes `sizes` in the graph API, with `ptr`'s alignment.
Backend graph_tensor(int64_t id, const int64_t* sizes, int rank, cudnnDataType_t type, const void* ptr) {
  const std::vector<int64_t> strides = contiguous_strides(sizes, rank);
  const int64_t align = alignment_of(ptr);
  auto t = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  t->set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, sizes);
  t->set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank, strides.data());
  t->set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id);
  t->set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  check(t->finalize(), "cudnnBackendFinalize (tensor)");
  return t;
}

/// A geometry's execution plan in cuDNN's graph API: the descriptors it was built from and
/// the plan, or no plan when none of cuDNN's engines fits (the v7 API then runs the call).
struct GraphPlan {
  std::vector<Backend> parts;  // tensors, convolution, operation, graph, engine configs
  Backend plan;
  int64_t workspace = 0;
};

/// Whether an engine's numerical notes rule it out, as PyTorch's filter does: never an
/// engine that converts its inputs down; for float32 without TF32, none using tensor cores.
bool engine_ruled_out(const BackendDescriptor& config, const CudnnConv& c) {
  BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  check(dnn().backend_get(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e),
        "cudnnBackendGetAttribute (engine)");
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  check(dnn().backend_get(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                          CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes),
        "cudnnBackendGetAttribute (numerical notes)");
  for (int64_t i = 0; i < n; ++i) {
    if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return true;
    if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && c.dtype == kFloat && !c.allow_tf32) return true;
  }
  return false;
}

/// The operation of `c`'s pass over the tensors x, w, y (as dx/dw/dy where written).
Backend graph_operation(const CudnnConv& c, const BackendDescriptor& conv, const BackendDescriptor& x,
                        const BackendDescriptor& w, const BackendDescriptor& y) {
  struct Names {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  static const Names forward{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  static const Names data{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
  static const Names filter{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  const Names& n = c.pass == ConvPass::Forward ? forward : c.pass == ConvPass::BackwardData ? data : filter;
  auto op = std::make_unique<BackendDescriptor>(n.type);
  op->set(n.x, x);
  op->set(n.w, w);
  op->set(n.y, y);
  op->set(n.conv, conv);
  if (c.dtype == kDouble) {
    const double one = 1, zero = 0;
    op->set(n.alpha, CUDNN_TYPE_DOUBLE, 1, &one);
    op->set(n.beta, CUDNN_TYPE_DOUBLE, 1, &zero);
  } else {
    const float one = 1, zero = 0;
    op->set(n.alpha, CUDNN_TYPE_FLOAT, 1, &one);
    op->set(n.beta, CUDNN_TYPE_FLOAT, 1, &zero);
  }
  check(op->finalize(), "cudnnBackendFinalize (convolution operation)");
  return op;
}

/// Builds `c`'s operation graph and keeps the execution plans of cuDNN's heuristic
/// engine configurations (instant mode, best first) that pass engine_ruled_out and
/// finalize, for the first call to try in turn.
std::vector<GraphPlan> graph_candidates(const CudnnConv& c, cudnnHandle_t handle) {
  const cudnnDataType_t type = data_type(c.dtype);
  const cudnnDataType_t compute = c.dtype == kDouble ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  const int rank = rank_of(c);
  (void)ints(c.x, rank), (void)ints(c.w, rank), (void)ints(c.y, rank);  // sizes cuDNN takes
  auto x = graph_tensor(kX, c.x, rank, type, c.x_ptr);
  auto w = graph_tensor(kW, c.w, rank, type, c.w_ptr);
  auto y = graph_tensor(kY, c.y, rank, type, c.y_ptr);
  auto conv = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const int64_t spatial = c.spatial;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  conv->set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  conv->set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  conv->set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  conv->set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial, c.dilation);
  conv->set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial, c.stride);
  conv->set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial, c.pad);
  conv->set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial, c.pad);
  check(conv->finalize(), "cudnnBackendFinalize (convolution)");
  auto op = graph_operation(c, *conv, *x, *w, *y);
  auto graph = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  const cudnnBackendDescriptor_t ops = op->get();
  graph->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ops);
  graph->set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  std::vector<GraphPlan> out;
  if (graph->finalize() != CUDNN_STATUS_SUCCESS) return out;  // no graph for it: the v7 API runs it
  BackendDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t heur_mode = CUDNN_HEUR_MODE_INSTANT;
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, *graph);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heur_mode);
  if (heuristics.finalize() != CUDNN_STATUS_SUCCESS) return out;
  int64_t n = 0;
  check(dnn().backend_get(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n,
                          nullptr),
        "cudnnBackendGetAttribute (heuristic results)");
  std::vector<Backend> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < n; ++i) {
    configs.push_back(std::make_unique<BackendDescriptor>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back()->get());
  }
  check(dnn().backend_get(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &n,
                          raw.data()),
        "cudnnBackendGetAttribute (heuristic results)");
  for (int64_t i = 0; i < n; ++i) {
    if (engine_ruled_out(*configs[i], c)) continue;
    auto plan = std::make_unique<BackendDescriptor>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    plan->set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *configs[i]);
    if (plan->finalize() != CUDNN_STATUS_SUCCESS) continue;
    GraphPlan g;
    int64_t count = 0;
    check(dnn().backend_get(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count,
                            &g.workspace),
          "cudnnBackendGetAttribute (workspace size)");
    g.plan = std::move(plan);
    out.push_back(std::move(g));
  }
  // The plans keep what they were built from alive with the first candidate.
  if (!out.empty()) {
    for (Backend* b : {&x, &w, &y, &conv, &op, &graph}) out.front().parts.push_back(std::move(*b));
    for (Backend& b : configs) out.front().parts.push_back(std::move(b));
  }
  return out;
}

/// Runs one execution plan on `c`'s pointers: a variant pack per call, the workspace from
/// the caching allocator on the current stream.
cudnnStatus_t execute(const GraphPlan& g, const CudnnConv& c, cudnnHandle_t handle) {
  void* ws = g.workspace ? core::cuda::device_alloc(static_cast<size_t>(g.workspace), c.device) : nullptr;
  BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  void* pointers[3] = {c.x_ptr, c.w_ptr, c.y_ptr};
  const int64_t ids[3] = {kX, kW, kY};
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids);
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  check(pack.finalize(), "cudnnBackendFinalize (variant pack)");
  const cudnnStatus_t status = dnn().backend_execute(handle, g.plan->get(), pack.get());
  if (ws) core::cuda::device_free(ws);
  return status;
}

/// The graph plan cached for a geometry and its pointers' alignments: made on its first
/// call (the first candidate that runs), or none when no candidate does.
struct CachedGraphPlan {
  bool tried = false;
  std::unique_ptr<GraphPlan> plan;
};

/// Runs `c` through the graph API; false when cuDNN offers no plan for it there.
bool run_graph(const CudnnConv& c, cudnnHandle_t handle) {
  std::vector<int64_t> key = plan_key(c);
  for (const void* p : {c.x_ptr, c.w_ptr, c.y_ptr}) key.push_back(alignment_of(p));
  CachedGraphPlan& cached = cached_plan<CachedGraphPlan>(std::move(key), [](CachedGraphPlan&) {});
  if (cached.plan) {
    check(execute(*cached.plan, c, handle), pass_name(c.pass));
    return true;
  }
  if (cached.tried) return false;
  cached.tried = true;
  std::vector<GraphPlan> candidates = graph_candidates(c, handle);
  std::vector<Backend> parts = candidates.empty() ? std::vector<Backend>{} : std::move(candidates.front().parts);
  for (GraphPlan& g : candidates) {
    const cudnnStatus_t status = execute(g, c, handle);
    if (status == CUDNN_STATUS_SUCCESS) {
      cached.plan = std::make_unique<GraphPlan>(std::move(g));
      cached.plan->parts = std::move(parts);
      return true;
    }
    if (!not_supported(status)) check(status, pass_name(c.pass));
  }
  return false;
}

}  // namespace

void cudnn_convolution(const CudnnConv& c) {
  const Dnn& l = dnn();
  ember::cuda::DeviceGuard guard(c.device);
  const cudnnHandle_t handle = handle_for(c.device);
  check(l.set_stream(handle, static_cast<cudaStream_t>(core::cuda::current_stream_handle(c.device))),
        "cudnnSetStream");
  // The graph API first: its host work per call is a variant pack (about 10 µs on an H100's
  // host for a 3x3 convolution, where cudnnConvolutionForward takes 72 µs); the v7 API for
  // a geometry it has no plan for.
  if (run_graph(c, handle)) return;
  const bool is_double = c.dtype == kDouble;
  const bool fma_only = c.dtype == kFloat && !c.allow_tf32;
  Plan& plan = plan_for(c);
  const Descriptors& d = plan.d;
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
                                     << pass_name(c.pass) << ", input " << sizes_str(c.x, rank_of(c)) << ", weight "
                                     << sizes_str(c.w, rank_of(c)) << ", groups " << c.groups << ")";
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
