// kernels/cuda/cublaslt.cpp — see cublaslt.h. Built only with EMBER_CUDA.
#include "kernels/cuda/cublaslt.h"

#include <cublasLt.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/cuda.h"
#include "ember/cuda.h"
#include "ember/error.h"
#include "kernels/cuda/dynlib.h"
#include "kernels/cuda/plan_cache.h"

namespace ember::kernels::cuda {
namespace {

/// The cuBLASLt functions Ember calls, from the library opened at run time.
struct Lt {
  decltype(&::cublasLtGetVersion) version = nullptr;
  decltype(&::cublasLtGetStatusString) status_string = nullptr;
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
  std::string error;  // why it cannot be used
};

const Lt& lt() {
  static const Lt lib = [] {
    Lt l;
    SymbolLoader load({.what = "cuBLASLt, which runs Ember's CUDA matrix products",
                       .env = "EMBER_CUBLASLT_LIBRARY",
                       .soname = EMBER_CUBLASLT_SONAME,
                       .dirs = {EMBER_CUDA_LIBRARY_DIR, "/usr/local/cuda/lib64"}},
                      "cuBLASLt");
    load.get(l.version, "cublasLtGetVersion");
    load.get(l.status_string, "cublasLtGetStatusString");
    load.get(l.create, "cublasLtCreate");
    load.get(l.desc_create, "cublasLtMatmulDescCreate");
    load.get(l.desc_destroy, "cublasLtMatmulDescDestroy");
    load.get(l.desc_set, "cublasLtMatmulDescSetAttribute");
    load.get(l.layout_create, "cublasLtMatrixLayoutCreate");
    load.get(l.layout_destroy, "cublasLtMatrixLayoutDestroy");
    load.get(l.layout_set, "cublasLtMatrixLayoutSetAttribute");
    load.get(l.pref_create, "cublasLtMatmulPreferenceCreate");
    load.get(l.pref_destroy, "cublasLtMatmulPreferenceDestroy");
    load.get(l.pref_set, "cublasLtMatmulPreferenceSetAttribute");
    load.get(l.heuristic, "cublasLtMatmulAlgoGetHeuristic");
    load.get(l.matmul, "cublasLtMatmul");
    l.error = load.error();
    return l;
  }();
  EMBER_CHECK(lib.error.empty()) << lib.error;
  return lib;
}

void check(cublasStatus_t s, const char* what) {
  EMBER_CHECK(s == CUBLAS_STATUS_SUCCESS) << "cuBLASLt error in " << what << ": " << lt().status_string(s);
}

/// One handle per device, made on first use and kept for the process (a handle is not
/// tied to a stream; destroying it at exit could race the driver's shutdown).
cublasLtHandle_t handle_for(int device) {
  static std::mutex mu;
  static std::map<int, cublasLtHandle_t> handles;
  std::lock_guard<std::mutex> lock(mu);
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  ember::cuda::DeviceGuard guard(device);
  cublasLtHandle_t h = nullptr;
  check(lt().create(&h), "cublasLtCreate");
  return handles.emplace(device, h).first->second;
}

cudaDataType_t data_type(ScalarType t) {
  switch (t) {
    case kFloat: return CUDA_R_32F;
    case kDouble: return CUDA_R_64F;
    case kHalf: return CUDA_R_16F;
    case kBFloat16: return CUDA_R_16BF;
    default: break;
  }
  EMBER_INTERNAL_ASSERT(false) << "cuBLASLt matrix product of dtype " << t;
}

/// The largest power of two (at most 256) dividing the address: cuBLASLt's heuristics
/// otherwise assume 256-byte-aligned matrices, which a view at an offset is not.
uint32_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 1;
  while (a < 256 && address % (2 * a) == 0) a *= 2;
  return a;
}

/// Owns the descriptors of one geometry.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    const Lt& l = lt();
    if (pref) l.pref_destroy(pref);
    for (cublasLtMatrixLayout_t x : {a, b, d})
      if (x) l.layout_destroy(x);
    if (op) l.desc_destroy(op);
  }
};

cublasLtMatrixLayout_t make_layout(ScalarType t, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                   int64_t stride) {
  const Lt& l = lt();
  cublasLtMatrixLayout_t layout = nullptr;
  check(l.layout_create(&layout, data_type(t), static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
        "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    check(l.layout_set(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
          "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
    check(l.layout_set(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
          "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  }
  return layout;
}

/// The workspace cuBLASLt may use: 32 MiB, PyTorch's size on Hopper.
constexpr uint64_t kMaxWorkspace = uint64_t{32} << 20;

}  // namespace

bool cublaslt_available(std::string* reason) {
  return library_available([] { lt(); }, reason);
}

int64_t cublaslt_version() { return static_cast<int64_t>(lt().version()); }

namespace {

/// A product's descriptors and the algorithm cuBLASLt's heuristics gave for them: made on
/// the first call of a geometry (dtypes, transposes, sizes, leading dimensions, batch
/// strides, the operands' alignments, the device) and reused by later calls, so a call
/// after the first makes no descriptors and asks no heuristics.
struct Plan {
  Descriptors desc;
  cublasLtMatmulHeuristicResult_t result{};
};

std::vector<int64_t> plan_key(const LtMatmul& c) {
  return {static_cast<int64_t>(c.dtype), c.allow_tf32, c.trans_a, c.trans_b, c.m, c.n, c.k, c.batch, c.ld_a,
          c.stride_a, c.ld_b, c.stride_b, c.ld_d, c.stride_d, alignment_of(c.a), alignment_of(c.b),
          alignment_of(c.d), c.device, c.bias != nullptr};
}

void make_plan(Plan& plan, const LtMatmul& c) {
  const Lt& l = lt();
  const bool is_double = c.dtype == kDouble;
  const cublasComputeType_t compute = is_double                          ? CUBLAS_COMPUTE_64F
                                      : c.dtype == kFloat && c.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                          : CUBLAS_COMPUTE_32F;
  const cudaDataType_t scale = is_double ? CUDA_R_64F : CUDA_R_32F;
  Descriptors& desc = plan.desc;
  check(l.desc_create(&desc.op, compute, scale), "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(l.desc_set(desc.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "cublasLtMatmulDescSetAttribute(TRANSA)");
  check(l.desc_set(desc.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "cublasLtMatmulDescSetAttribute(TRANSB)");
  if (c.bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    check(l.desc_set(desc.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
          "cublasLtMatmulDescSetAttribute(EPILOGUE)");
    // The heuristics see a bias pointer; each call sets its own (lt_matmul).
    check(l.desc_set(desc.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias, sizeof(c.bias)),
          "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  }
  desc.a = make_layout(c.dtype, c.trans_a ? c.k : c.m, c.trans_a ? c.m : c.k, c.ld_a, c.batch, c.stride_a);
  desc.b = make_layout(c.dtype, c.trans_b ? c.n : c.k, c.trans_b ? c.k : c.n, c.ld_b, c.batch, c.stride_b);
  desc.d = make_layout(c.dtype, c.m, c.n, c.ld_d, c.batch, c.stride_d);

  check(l.pref_create(&desc.pref), "cublasLtMatmulPreferenceCreate");
  check(l.pref_set(desc.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kMaxWorkspace, sizeof(kMaxWorkspace)),
        "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const void*> aligned[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, c.a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, c.b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, c.d},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, c.d}};
  for (const auto& [attr, ptr] : aligned) {
    const uint32_t bytes = alignment_of(ptr);
    check(l.pref_set(desc.pref, attr, &bytes, sizeof(bytes)), "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
  }

  int found = 0;
  check(l.heuristic(handle_for(c.device), desc.op, desc.a, desc.b, desc.d, desc.d, desc.pref, 1, &plan.result, &found),
        "cublasLtMatmulAlgoGetHeuristic");
  EMBER_CHECK(found > 0) << "cuBLASLt has no algorithm for a " << c.dtype << " matrix product of " << c.m << "x" << c.k
                         << " by " << c.k << "x" << c.n << " (batch " << c.batch << ", leading dimensions " << c.ld_a
                         << ", " << c.ld_b << ", " << c.ld_d << ")";
}

/// The plan of `c`'s geometry on this thread (handles are per thread).
const Plan& plan_for(const LtMatmul& c) {
  return cached_plan<Plan>(plan_key(c), [&](Plan& plan) { make_plan(plan, c); });
}

}  // namespace

void lt_matmul(const LtMatmul& c) {
  EMBER_INTERNAL_ASSERT(c.m > 0 && c.n > 0 && c.k > 0 && c.batch > 0) << "empty cuBLASLt matrix product";
  EMBER_CHECK_KIND(ErrorKind::NotImplementedError, c.batch <= INT32_MAX)
      << "CUDA batched matrix products take at most " << INT32_MAX << " matrices, got " << c.batch;
  const Lt& l = lt();
  ember::cuda::DeviceGuard guard(c.device);  // the heuristics ask the current device
  EMBER_INTERNAL_ASSERT(!c.bias || c.beta == 0) << "cuBLASLt's bias epilogue with beta " << c.beta;
  const Plan& plan = plan_for(c);
  const Descriptors& desc = plan.desc;
  if (c.bias) {
    check(l.desc_set(desc.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias, sizeof(c.bias)),
          "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  }
  const cublasLtMatmulHeuristicResult_t& result = plan.result;
  const bool is_double = c.dtype == kDouble;

  void* stream = core::cuda::current_stream_handle(c.device);
  // Stream-ordered: the block returns to the allocator at once but is reused only by work
  // queued after this product on the same stream.
  void* workspace = result.workspaceSize ? core::cuda::device_alloc(result.workspaceSize, c.device) : nullptr;
  const float alpha_f = static_cast<float>(c.alpha), beta_f = static_cast<float>(c.beta);
  const void* alpha = is_double ? static_cast<const void*>(&c.alpha) : &alpha_f;
  const void* beta = is_double ? static_cast<const void*>(&c.beta) : &beta_f;
  const cublasStatus_t s =
      l.matmul(handle_for(c.device), desc.op, alpha, c.a, desc.a, c.b, desc.b, beta, c.d, desc.d, c.d, desc.d,
               &result.algo, workspace, result.workspaceSize, static_cast<cudaStream_t>(stream));
  if (workspace) core::cuda::device_free(workspace);
  check(s, "cublasLtMatmul");
}

}  // namespace ember::kernels::cuda
