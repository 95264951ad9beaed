// kernels/cpu/gemm.cpp — see gemm.h. BLAS reads a row-major matrix whose rows or whose
// columns are unit-stride; anything else (broadcast, sliced both ways) is packed first.
// float: which of dnnl_sgemm, oneDNN's matmul primitive and OpenBLAS is fastest depends on
// the CPU (Debian's OpenBLAS runs SSE3 kernels on CPUs newer than it knows; the matmul
// primitive wins some shapes and loses others), so each large product shape is timed once
// on all three and keeps the fastest (Note [sgemm autotuning] below); a right operand
// seen before (a weight) adds a fourth, the matmul primitive on a kept pack of it (Note
// [packed right operands]). OpenBLAS keeps to one thread of its own, split here over
// OpenMP's threads, so its pthreads never spin against OpenMP's. Measurements:
// bench/results/README.md.
#include "kernels/cpu/gemm.h"

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kernels/cpu/autotune.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/onednn.h"
#include "support/logging.h"

namespace ember::kernels::cpu {
namespace {

/// Multiply-adds below which handing a product (or a share of one) to another thread
/// costs more than it saves.
constexpr double kTaskMacs = 1 << 18;

/// One operand of a batched product: element strides of batch, row and column.
template <typename T>
struct Operand {
  const T* data;
  int64_t bs, rs, cs;
  const T* batch(int64_t b) const { return data + b * bs; }
};

template <typename T>
Operand<T> operand(const Tensor& t) {
  return {static_cast<const T*>(t.raw_data_ptr()), t.stride(0), t.stride(1), t.stride(2)};
}

/// How BLAS can read a rows x cols matrix with element strides (rs, cs), if it can with a
/// leading dimension of at most max_ld.
struct BlasLayout {
  bool ok = false;
  bool trans = false;
  int64_t ld = 0;
};

BlasLayout blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int64_t max_ld) {
  // A size-1 dim's stride is meaningless; the leading dimension only has to be large enough.
  BlasLayout l;
  if ((cs == 1 || cols <= 1) && (rows <= 1 || rs >= std::max<int64_t>(cols, 1)))
    l = {true, false, rows <= 1 ? std::max<int64_t>(cols, 1) : rs};
  else if ((rs == 1 || rows <= 1) && (cols <= 1 || cs >= std::max<int64_t>(rows, 1)))
    l = {true, true, cols <= 1 ? std::max<int64_t>(rows, 1) : cs};
  if (l.ld > max_ld) return {};
  return l;
}

/// A rows x cols strided matrix as a dense row-major buffer of type D.
template <typename D, typename S>
void pack(const S* src, int64_t rows, int64_t cols, int64_t rs, int64_t cs, D* dst) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      dst[i * cols + j] = static_cast<D>(static_cast<opmath_t<S>>(src[i * rs + j * cs]));
}

/// c = beta * c over an m x n block: what a product with k == 0 leaves.
template <typename T>
void scale_only(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
}

// --- OpenBLAS on OpenMP's threads ----------------------------------------------------

/// Keeps OpenBLAS on the calling thread: with more, its own pthreads would wake for every
/// call and spin against OpenMP's. Set before the first call, which may come from several
/// threads of a parallel region at once (the static's guard holds the others back).
void hold_openblas_to_one_thread() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)done;
}

void blas_on_this_thread(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                         const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}
void blas_on_this_thread(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                         const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

/// OpenBLAS with c split into a grid of blocks, one one-thread call per OpenMP thread. Each
/// call packs its own blocks of a and b, k * (tn * m + tm * n) elements in all: the grid is
/// the factor pair of the thread count that packs least. Column blocks start at multiples
/// of one AVX-512 register. Needs m, n, k > 0 and dims that fit BLAS's int.
template <typename T>
void openblas_split(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
                    int64_t ldb, T beta, T* c, int64_t ldc) {
  EMBER_CHECK(std::max({m, n, k, lda, ldb, ldc}) <= INT_MAX) << "matrix dimensions too large for BLAS";
  hold_openblas_to_one_thread();
  const int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int64_t parts = std::min<int64_t>(threads, static_cast<int64_t>(macs / kTaskMacs));
  if (parts < 2) return blas_on_this_thread(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  int64_t tm = parts, tn = 1;  // on a tie, rows: their blocks of a are contiguous
  for (int64_t r = parts - 1; r >= 1; --r) {
    if (parts % r == 0 && (parts / r) * m + r * n < tn * m + tm * n) {
      tm = r;
      tn = parts / r;
    }
  }
  constexpr int64_t kLanes = 64 / sizeof(T);
  const int64_t mb = (m + tm - 1) / tm, nb = ((n + tn - 1) / tn + kLanes - 1) / kLanes * kLanes;
  const int64_t rows = (m + mb - 1) / mb, cols = (n + nb - 1) / nb;
  // One block per part on the full team: Note [full OpenMP teams] (loops.h).
  for_parts(rows * cols, [&](int64_t t, int64_t) {
    const int64_t i = t / cols * mb, j = t % cols * nb;
    blas_on_this_thread(ta, tb, std::min(mb, m - i), std::min(nb, n - j), k, alpha, ta ? a + i : a + i * lda, lda,
                        tb ? b + j * ldb : b + j, ldb, beta, c + i * ldc + j, ldc);
  });
}

// --- float: three implementations (four with a kept pack), the fastest per shape ---------
//
// Note [sgemm autotuning]
// A float product of at least kTuneMacs multiply-adds, outside a parallel region, runs on
// the implementation that was fastest for its shape (transposes, m, n, k, leading
// dimensions, whether beta is 0, thread count): the first product of a shape times each
// candidate (autotune.h's fastest(): rounds of every candidate in turn into a scratch
// output, each one's best round counting; at one thread in the thread's CPU time, so that
// time descheduled on a shared machine does not decide) and keeps the fastest for the
// process (logged on the `autotuning` artifact). The timing runs stop early for large
// products (kTuneBudgetMs, the warm-up round counted): they are the first call's cost, and
// compile_times() counts them as "autotuning (timing runs)", a part of the compiled
// function's first run. A round of W5's four products at two threads takes 100 ms or more,
// so each is timed by its warm-up alone (three runs, not six): the warm-up's one-time costs
// are kept out of it (the matmul primitive is created before) or small beside a product of
// tens of milliseconds, and they can only make a candidate look slower.
// A product of a few milliseconds gets its rounds even when one run of its warm-up lost the
// budget's time to other programs (fastest() counts such rounds at the fastest time
// seen): at two threads on the shared development VM a warm-up run of 91 ms against a
// product of 1.3 ms used to end the timing there.
// A candidate over twice the fastest after the warm-up and one round is not timed again
// (fastest()'s kDropRatio): on the GPU machine's Xeon, OpenBLAS took 11–14 ms for M=128
// products that the others ran in 2.3–2.5 ms (bench/results/dynamic_2026-11-29), and its
// runs were most of a new sequence length's timing in W10.
// Candidates: dnnl_sgemm; oneDNN's matmul primitive (created once per shape, alpha and
// beta as its output scale and sum post-op); OpenBLAS split over OpenMP; and, for a right
// operand gemm_batched has seen before at the same version, the matmul primitive on its
// kept pack (Note [packed right operands]; such a product is a shape of its own, timed
// once more: the packed primitive against the winner of the same shape unpacked, when
// that shape was timed, which it is at a weight's first sight; against all three when not.
// Two candidates instead of four halve the timing a compiled graph's first run pays for
// the weights eager had already multiplied: W7's cold compile on the development VM spent
// 0.58 of its 0.99 s there, four packed shapes at 130-500 ms each). Smaller products and
// products inside a parallel region (one per thread) take dnnl_sgemm. The choice follows timings, so two processes may pick
// differently and round differently (as PyTorch's oneDNN and MKL dispatch do);
// EMBER_SGEMM=dnnl|matmul|openblas|packed fixes it.

constexpr double kTuneMacs = 1 << 22;
/// The timed rounds of one shape stop once they have taken this long, warm-up included
/// (fastest()): small products get all four rounds after the warm-up, one of about 35 ms
/// or more (W5's projections at two threads) the warm-up alone.
constexpr double kTuneBudgetMs = 100;

/// dnnl_sgemm with gemm()'s k == 0 rule (oneDNN leaves c unscaled there). oneDNN runs on
/// OpenMP's threads, and on the calling thread alone inside a parallel region.
dnnl_status_t dnnl_sgemm_call(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return dnnl_success;
  if (k <= 0) {
    scale_only(m, n, beta, c, ldc);
    return dnnl_success;
  }
  return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

using ShapeKey = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, int>;

/// The f32 desc of a row-major rows x cols operand with leading dimension ld, or of the
/// transpose of one stored cols x rows.
dnnl::memory::desc plain_desc(int64_t rows, int64_t cols, bool transposed, int64_t ld) {
  using dnnl::memory;
  return memory::desc({rows, cols}, memory::data_type::f32, transposed ? memory::dims{1, ld} : memory::dims{ld, 1});
}

/// A matmul's attributes for c = alpha * a @ b + beta * c: an output scale and a sum post-op.
dnnl::primitive_attr scale_and_sum(float alpha, float beta) {
  dnnl::primitive_attr attr;
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  return attr;
}

/// oneDNN's matmul primitive for one product shape (strided plain layouts: no reorders);
/// alpha is its output scale and beta a sum post-op (c read and added, scaled).
std::shared_ptr<dnnl::matmul> matmul_primitive(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                               int64_t lda, int64_t ldb, float beta, int64_t ldc) {
  static std::mutex mu;
  static std::map<std::tuple<bool, bool, int64_t, int64_t, int64_t, float, int64_t, int64_t, float, int64_t>,
                  std::shared_ptr<dnnl::matmul>>
      cache;
  const auto key = std::make_tuple(ta, tb, m, n, k, alpha, lda, ldb, beta, ldc);
  std::lock_guard lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const dnnl::matmul::primitive_desc pd(
      dnnl::matmul::desc(plain_desc(m, k, ta, lda), plain_desc(k, n, tb, ldb), plain_desc(m, n, false, ldc)),
      scale_and_sum(alpha, beta), onednn::engine());
  if (cache.size() >= 256) cache.clear();  // bound memory when shapes keep changing
  return cache[key] = std::make_shared<dnnl::matmul>(pd);
}

void matmul_primitive_call(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const std::shared_ptr<dnnl::matmul> prim = matmul_primitive(ta, tb, m, n, k, alpha, lda, ldb, beta, ldc);
  using dnnl::memory;
  dnnl::engine& eng = onednn::engine();
  memory am(plain_desc(m, k, ta, lda), eng, const_cast<float*>(a));
  memory bm(plain_desc(k, n, tb, ldb), eng, const_cast<float*>(b)), cm(plain_desc(m, n, false, ldc), eng, c);
  dnnl::stream stream(eng);
  prim->execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  stream.wait();
}

// --- float: right operands packed once per version ----------------------------------
//
// Note [packed right operands]
// oneDNN's matmul primitive with its weight layout left to it (format_tag::any) asks for b
// in blocks that stream through its microkernel; given a plain b it packs panels of it on
// every call, which at a hundred or so rows of a costs 7-11% of the product (the GPT-2
// block's linear layers at M = 128 on the development VM, bench_block_kernels' "packed
// weight" rows; docs/notes/inductor.md has the table). Freezing packs constant weights
// once (packed_linear.cpp); without it a module's parameters are graph inputs, the same
// storage call after call. So gemm_batched tells sgemm which storage its right operand
// lives in (RightOperand; the operand's pointer, transpose and leading dimension key its
// entry), and a right operand seen a second time at the same storage version (a weight,
// not a fresh activation: those are new storages) is reordered once into the layout the
// primitive asks for and kept, and the product's shape is timed again with PackedMatmul
// among the candidates (Note [sgemm autotuning]; `packable` is part of the shape's key).
// The pack is kept while the storage lives (held weakly, so a storage freed and another
// allocated at the same address is not taken for it) and holds the version seen: every
// in-place op bumps the version (the dispatcher; a compiled graph's input writes too), so
// a parameter an optimizer or copy_ changes is packed again on its second sight after the
// change. Writes that bypass ops (through a raw data pointer) are not seen, as they are
// not by autograd's version checks. PyTorch does not do this outside freezing (its mkldnn
// weight cache is freezing's); it costs a second copy of each packed operand, at most
// kMaxPackedBytes in all (past it, products run unpacked), dropped with its storage.
// EMBER_SGEMM=packed takes PackedMatmul for every tuned-size product (reordering per call
// what is not kept).

/// A product's right operand as gemm_batched sees it: the storage b is read from.
struct RightOperand {
  const std::shared_ptr<Storage>& storage;
};

/// The most bytes of packed right operands kept at once.
constexpr size_t kMaxPackedBytes = size_t{512} << 20;

/// A matmul primitive whose b layout is its own choice, with the descs of a, of the packed
/// b it reads (b_md) and of c.
struct PackedPrimitive {
  dnnl::matmul prim;
  dnnl::memory::desc a_md, b_md, c_md;
};

/// oneDNN's matmul primitive for one product shape with b's layout its own choice, made
/// once per shape and calling thread count; alpha its output scale, beta a sum post-op.
std::shared_ptr<const PackedPrimitive> packed_primitive(bool ta, int64_t m, int64_t n, int64_t k, float alpha,
                                                        int64_t lda, float beta, int64_t ldc) {
  static std::mutex mu;
  static std::map<std::tuple<bool, int64_t, int64_t, int64_t, float, int64_t, float, int64_t, int>,
                  std::shared_ptr<const PackedPrimitive>>
      cache;
  const auto key = std::make_tuple(ta, m, n, k, alpha, lda, beta, ldc, omp_get_max_threads());
  std::lock_guard lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  using dnnl::memory;
  auto p = std::make_shared<PackedPrimitive>();
  p->a_md = plain_desc(m, k, ta, lda);
  p->c_md = plain_desc(m, n, false, ldc);
  const memory::desc any_b({k, n}, memory::data_type::f32, memory::format_tag::any);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p->a_md, any_b, p->c_md), scale_and_sum(alpha, beta),
                                        onednn::engine());
  p->prim = dnnl::matmul(pd);
  p->b_md = pd.weights_desc();
  if (cache.size() >= 256) cache.clear();  // bound memory when shapes keep changing
  return cache[key] = std::move(p);
}

/// b (k x n, row-major with leading dimension ldb, or its transpose) reordered into `layout`.
dnnl::memory pack_right(const dnnl::memory::desc& layout, bool tb, int64_t k, int64_t n, const float* b,
                        int64_t ldb) {
  using dnnl::memory;
  dnnl::engine& eng = onednn::engine();
  memory user(plain_desc(k, n, tb, ldb), eng, const_cast<float*>(b)), packed(layout, eng);
  dnnl::stream s(eng);
  dnnl::reorder(user, packed).execute(s, user, packed);
  s.wait();
  return packed;
}

/// c = alpha a @ b + beta c on `p`, b already in p's layout.
void packed_primitive_call(const PackedPrimitive& p, const float* a, const dnnl::memory& b, float* c) {
  using dnnl::memory;
  dnnl::engine& eng = onednn::engine();
  memory am(p.a_md, eng, const_cast<float*>(a)), cm(p.c_md, eng, c);
  dnnl::stream stream(eng);
  p.prim.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, cm}});
  stream.wait();
}

/// The kept packs of right operands, by data, transposition, k, n and ldb.
using PackedOperands = onednn::KeptLayouts<std::tuple<const void*, bool, int64_t, int64_t, int64_t>>;

/// The process's kept packs.
PackedOperands& packed_operands() {
  static PackedOperands* p = new PackedOperands(kMaxPackedBytes);  // never destroyed: products may run at exit
  return *p;
}

/// The kept pack of the right operand `key` (at `b`) in `layout`, made now if there is
/// none and room for it. Only after packed_operands().sighted() returned true for it.
std::optional<dnnl::memory> kept_pack(const PackedOperands::key_type& key, const dnnl::memory::desc& layout,
                                      const float* b) {
  return packed_operands().get(key, layout, [&] {
    return pack_right(layout, std::get<1>(key), std::get<2>(key), std::get<3>(key), b, std::get<4>(key));
  });
}

/// c = alpha op(a) op(b) + beta c on the packed primitive: with b's kept pack when `key`
/// names one (made now if need be), else b reordered for this call alone.
void packed_matmul_call(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                        const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                        const PackedOperands::key_type* key) {
  const std::shared_ptr<const PackedPrimitive> p = packed_primitive(ta, m, n, k, alpha, lda, beta, ldc);
  std::optional<dnnl::memory> packed;
  if (key) packed = kept_pack(*key, p->b_md, b);
  if (!packed) packed = pack_right(p->b_md, tb, k, n, b, ldb);
  packed_primitive_call(*p, a, *packed, c);
}

/// EMBER_SGEMM, read once: the implementation every tuned-size product takes, or none.
std::optional<SgemmImpl> forced_sgemm() {
  static const std::optional<SgemmImpl> forced = []() -> std::optional<SgemmImpl> {
    const char* v = std::getenv("EMBER_SGEMM");
    if (!v || !*v || std::string(v) == "auto") return std::nullopt;
    for (SgemmImpl impl : {SgemmImpl::Dnnl, SgemmImpl::MatmulPrimitive, SgemmImpl::OpenBlas, SgemmImpl::PackedMatmul})
      if (std::string(v) == sgemm_impl_name(impl)) return impl;
    EMBER_FAIL_KIND(ErrorKind::ValueError) << "EMBER_SGEMM: expected auto, dnnl, matmul, openblas or packed, got '" << v
                                           << "'";
  }();
  return forced;
}

std::atomic<int64_t> g_sgemm_tunings{0};

/// The fastest candidate for this product, timed on first sight of its shape; `packed`,
/// when given, names b's kept pack and adds PackedMatmul to the candidates (a shape of its
/// own: Note [packed right operands]).
SgemmImpl tuned_choice(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                       int64_t ldb, int64_t ldc, bool accumulate, const PackedOperands::key_type* packed) {
  static std::mutex mu;
  static std::map<std::pair<ShapeKey, bool>, SgemmImpl> chosen;
  const std::pair<ShapeKey, bool> key{ShapeKey{ta, tb, m, n, k, lda, ldb, ldc, accumulate, omp_get_max_threads()},
                                      packed != nullptr};
  std::lock_guard lock(mu);
  if (auto it = chosen.find(key); it != chosen.end()) return it->second;
  std::vector<float> scratch(static_cast<size_t>(m * ldc), 0.0f);
  std::vector<SgemmImpl> candidates = {SgemmImpl::Dnnl, SgemmImpl::MatmulPrimitive};
  if (std::max({m, n, k, lda, ldb, ldc}) <= INT_MAX) candidates.push_back(SgemmImpl::OpenBlas);
  if (packed) {
    // The same product without a kept pack was timed already (a weight's first sight): its
    // winner, timed again beside the packed primitive, is all that can still win.
    if (auto unpacked = chosen.find({key.first, false}); unpacked != chosen.end()) candidates = {unpacked->second};
    candidates.push_back(SgemmImpl::PackedMatmul);
  }
  const float beta = accumulate ? 1.0f : 0.0f;
  std::vector<std::function<void()>> runs;
  for (SgemmImpl impl : candidates)
    runs.push_back([&, impl] {
      if (impl == SgemmImpl::PackedMatmul)
        packed_matmul_call(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, scratch.data(), ldc, packed);
      else
        sgemm_on(impl, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, scratch.data(), ldc);
    });
  // The primitives' creation (oneDNN generates their code) and the pack are one-time
  // costs: made here, they stay out of the candidates' warm-up, which may be their only
  // timed run.
  if (std::find(candidates.begin(), candidates.end(), SgemmImpl::MatmulPrimitive) != candidates.end())
    matmul_primitive(ta, tb, m, n, k, 1.0f, lda, ldb, beta, ldc);
  if (packed) kept_pack(*packed, packed_primitive(ta, m, n, k, 1.0f, lda, beta, ldc)->b_md, b);
  std::vector<double> ms;
  const SgemmImpl best = candidates[fastest(runs, ms, 4, kTuneBudgetMs)];
  std::string timings;
  for (size_t i = 0; i < candidates.size(); ++i)
    timings += std::string(i ? ", " : "") + sgemm_impl_name(candidates[i]) + " " + std::to_string(ms[i]) + " ms";
  chosen[key] = best;
  g_sgemm_tunings.fetch_add(1, std::memory_order_relaxed);
  EMBER_LOG_ARTIFACT(autotuning) << "sgemm " << m << "x" << k << "x" << n << (ta ? " A^T" : "") << (tb ? " B^T" : "")
                                 << " (lda " << lda << ", ldb " << ldb << ", ldc " << ldc << ", "
                                 << omp_get_max_threads() << " threads" << (packed ? ", b seen before" : "")
                                 << "): " << timings << " -> " << sgemm_impl_name(best);
  return best;
}

/// c = alpha op(a) op(b) + beta c on the implementation chosen for the product. `right`,
/// when given, is where b lives (gemm_batched's operand): a right operand read before at
/// the same version may run packed (Note [packed right operands]).
dnnl_status_t sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                    const RightOperand* right = nullptr) {
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (macs < kTuneMacs || omp_in_parallel() || k <= 0)
    return dnnl_sgemm_call(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  const std::optional<SgemmImpl> forced = forced_sgemm();
  const PackedOperands::key_type key{b, tb, k, n, ldb};
  const bool packable = right && (!forced || *forced == SgemmImpl::PackedMatmul) &&
                        packed_operands().sighted(key, right->storage);
  const PackedOperands::key_type* packed = packable ? &key : nullptr;
  SgemmImpl impl = forced ? *forced : tuned_choice(ta, tb, m, n, k, a, lda, b, ldb, ldc, beta != 0.0f, packed);
  if (impl == SgemmImpl::OpenBlas && std::max({m, n, k, lda, ldb, ldc}) > INT_MAX) impl = SgemmImpl::Dnnl;
  if (impl == SgemmImpl::Dnnl) return dnnl_sgemm_call(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (impl == SgemmImpl::PackedMatmul) {
    packed_matmul_call(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, packed);
    return dnnl_success;
  }
  sgemm_on(impl, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return dnnl_success;
}

/// The largest value Operand's leading dimensions may take for T's BLAS.
template <typename T>
constexpr int64_t max_ld() {
  return std::is_same_v<T, double> ? INT_MAX : INT64_MAX;
}

dnnl_status_t blas_call(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                        const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const RightOperand* right) {
  return sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, right);
}
dnnl_status_t blas_call(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                        const double* b, int64_t ldb, double beta, double* c, int64_t ldc, const RightOperand*) {
  gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return dnnl_success;
}

/// C (m x n, dense) = alpha * A @ B + beta * C for float/double, one matrix. `right`, when
/// given, is the storage B is read from (float may keep a pack of it: Note [packed right
/// operands]); a B copied here first is not that storage's.
template <typename T>
dnnl_status_t blas_matrix(const T* a, int64_t ars, int64_t acs, const T* b, int64_t brs, int64_t bcs, T* c, int64_t m,
                          int64_t n, int64_t k, T alpha, T beta, std::vector<T>& abuf, std::vector<T>& bbuf,
                          const RightOperand* right = nullptr) {
  BlasLayout la = blas_layout(m, k, ars, acs, max_ld<T>());
  BlasLayout lb = blas_layout(k, n, brs, bcs, max_ld<T>());
  if (!la.ok) {
    abuf.resize(static_cast<size_t>(m * k));
    pack(a, m, k, ars, acs, abuf.data());
    a = abuf.data();
    la = {true, false, std::max<int64_t>(k, 1)};
  }
  if (!lb.ok) {
    bbuf.resize(static_cast<size_t>(k * n));
    pack(b, k, n, brs, bcs, bbuf.data());
    b = bbuf.data();
    lb = {true, false, std::max<int64_t>(n, 1)};
    right = nullptr;
  }
  return blas_call(la.trans, lb.trans, m, n, k, alpha, a, la.ld, b, lb.ld, beta, c, std::max<int64_t>(n, 1), right);
}

/// Whether a batch runs one product per thread (each on one thread) rather than one
/// product after another, each threaded inside. On the workloads' CPU one product per
/// thread won for every attention shape measured, 12 products of 512x512x64 on 16 threads
/// too (bench/results/README.md), so it is taken when the products are too small to share
/// out across the pool, or when it keeps at least half the threads busy and the products
/// are not so large (2^24 multiply-adds a thread) that threading inside each is as good.
bool split_batch(int64_t batch, int64_t m, int64_t n, int64_t k) {
  if (batch < 2 || omp_in_parallel()) return false;
  const int64_t threads = omp_get_max_threads();
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (threads < 2 || macs * static_cast<double>(batch) <= kTaskMacs) return false;
  if (macs < static_cast<double>(threads) * kTaskMacs) return true;
  const int64_t rounds = (batch + threads - 1) / threads;
  return 2 * batch >= rounds * threads && macs < static_cast<double>(threads) * (1 << 24);
}

void check_status(dnnl_status_t status) {
  EMBER_CHECK(status == dnnl_success) << "oneDNN sgemm failed (dnnl_status_t " << static_cast<int>(status) << ")";
}

template <typename T>
void gemm_blas(const Tensor& a, const Tensor& b, Tensor& out, T alpha, T beta) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  Operand<T> A = operand<T>(a), B = operand<T>(b);
  T* C = static_cast<T*>(out.raw_data_ptr());
  if (split_batch(batch, m, n, k)) {
    // A failure inside the region is reported after it: an exception may not leave it.
    std::atomic<int> failed{static_cast<int>(dnnl_success)};
#pragma omp parallel
    {
      std::vector<T> abuf, bbuf;
#pragma omp for schedule(static)
      for (int64_t i = 0; i < batch; ++i) {
        const dnnl_status_t s = blas_matrix<T>(A.batch(i), A.rs, A.cs, B.batch(i), B.rs, B.cs, C + i * m * n, m, n, k,
                                               alpha, beta, abuf, bbuf);
        if (s != dnnl_success) failed.store(static_cast<int>(s));
      }
    }
    check_status(static_cast<dnnl_status_t>(failed.load()));
    return;
  }
  std::vector<T> abuf, bbuf;
  // One product (mm, addmm, a linear layer): sgemm learns where b lives.
  const RightOperand right{b.storage()};
  for (int64_t i = 0; i < batch; ++i)
    check_status(blas_matrix<T>(A.batch(i), A.rs, A.cs, B.batch(i), B.rs, B.cs, C + i * m * n, m, n, k, alpha, beta,
                                abuf, bbuf, batch == 1 && b.storage() ? &right : nullptr));
}

/// Half and bfloat16: each matrix converted to float, sgemm, rounded back once.
template <typename T>
void gemm_reduced(const Tensor& a, const Tensor& b, Tensor& out, float alpha, float beta) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  Operand<T> A = operand<T>(a), B = operand<T>(b);
  T* C = static_cast<T*>(out.raw_data_ptr());
  std::vector<float> af(static_cast<size_t>(m * k)), bf(static_cast<size_t>(k * n)), cf(static_cast<size_t>(m * n));
  std::vector<float> unused_a, unused_b;
  for (int64_t i = 0; i < batch; ++i) {
    pack(A.batch(i), m, k, A.rs, A.cs, af.data());
    pack(B.batch(i), k, n, B.rs, B.cs, bf.data());
    T* c = C + i * m * n;
    if (beta != 0.0f)
      for (int64_t j = 0; j < m * n; ++j) cf[j] = static_cast<float>(c[j]);
    check_status(
        blas_matrix<float>(af.data(), k, 1, bf.data(), n, 1, cf.data(), m, n, k, alpha, beta, unused_a, unused_b));
    for (int64_t j = 0; j < m * n; ++j) c[j] = T(cf[j]);
  }
}

/// Integers: wrapping arithmetic (as the C++ types of PyTorch do), computed in uint64 so
/// that overflow is defined; the result truncated to T is the same modulo 2^bits.
template <typename T>
void gemm_integer(const Tensor& a, const Tensor& b, Tensor& out, int64_t alpha, int64_t beta) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  Operand<T> A = operand<T>(a), B = operand<T>(b);
  T* C = static_cast<T*>(out.raw_data_ptr());
  const uint64_t ualpha = static_cast<uint64_t>(alpha), ubeta = static_cast<uint64_t>(beta);
  std::vector<uint64_t> bpack(static_cast<size_t>(k * n));
  constexpr int64_t kBlock = 256;  // columns per block: the accumulators stay in L1
  for (int64_t bi = 0; bi < batch; ++bi) {
    const T* ab = A.batch(bi);
    const T* bb = B.batch(bi);
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        bpack[p * n + j] = static_cast<uint64_t>(static_cast<int64_t>(bb[p * B.rs + j * B.cs]));
    T* c = C + bi * m * n;
    const bool big = m * n * k > kGrainSize && !omp_in_parallel();
#pragma omp parallel for if (big)
    for (int64_t i = 0; i < m; ++i) {
      uint64_t acc[kBlock];
      for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
        const int64_t jn = std::min(kBlock, n - j0);
        std::fill(acc, acc + jn, uint64_t{0});
        for (int64_t p = 0; p < k; ++p) {
          const uint64_t av = static_cast<uint64_t>(static_cast<int64_t>(ab[i * A.rs + p * A.cs]));
          const uint64_t* brow = bpack.data() + p * n + j0;
          for (int64_t j = 0; j < jn; ++j) acc[j] += av * brow[j];
        }
        T* crow = c + i * n + j0;
        for (int64_t j = 0; j < jn; ++j) {
          uint64_t v = ualpha * acc[j];
          if (beta != 0) v += ubeta * static_cast<uint64_t>(static_cast<int64_t>(crow[j]));
          crow[j] = static_cast<T>(v);
        }
      }
    }
  }
}

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  check_status(sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) return scale_only(m, n, beta, c, ldc);
  openblas_split(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

const char* sgemm_impl_name(SgemmImpl impl) {
  switch (impl) {
    case SgemmImpl::Dnnl:
      return "dnnl";
    case SgemmImpl::MatmulPrimitive:
      return "matmul";
    case SgemmImpl::OpenBlas:
      return "openblas";
    case SgemmImpl::PackedMatmul:
      return "packed";
  }
  return "?";
}

void sgemm_on(SgemmImpl impl, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) return scale_only(m, n, beta, c, ldc);
  switch (impl) {
    case SgemmImpl::Dnnl:
      return check_status(dnnl_sgemm_call(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
    case SgemmImpl::MatmulPrimitive:
      return matmul_primitive_call(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    case SgemmImpl::OpenBlas:
      return openblas_split(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    case SgemmImpl::PackedMatmul:
      return packed_matmul_call(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr);
  }
}

int64_t sgemm_tunings() { return g_sgemm_tunings.load(); }
int64_t sgemm_operand_packs() { return packed_operands().made(); }
int64_t sgemm_packed_bytes() { return packed_operands().bytes(); }

void gemm_batched(const Tensor& a, const Tensor& b, Tensor& out, const Scalar& alpha, const Scalar& beta) {
  EMBER_INTERNAL_ASSERT(a.dim() == 3 && b.dim() == 3 && out.dim() == 3 && out.is_contiguous());
  const int64_t m = out.size(1), n = out.size(2), k = a.size(2);
  const ScalarType dt = out.dtype();
  // OpenBLAS takes 32-bit dims; oneDNN (float, half, bfloat16) 64-bit ones.
  EMBER_CHECK(dt != kDouble || (m < INT_MAX && n < INT_MAX && k < INT_MAX)) << "matrix dimensions too large for BLAS";
  if (out.numel() == 0) return;
  if (k == 0) {
    // An empty sum: only beta * out remains.
    EMBER_DISPATCH_NUMERIC_TYPES(dt, "addmm_impl_cpu_", [&] {
      scalar_t* c = static_cast<scalar_t*>(out.raw_data_ptr());
      const auto bv = beta.to<opmath_t<scalar_t>>();
      using acc_t = opmath_t<scalar_t>;
      for (int64_t i = 0; i < out.numel(); ++i)
        c[i] = static_cast<scalar_t>(bv == 0 ? acc_t(0) : static_cast<acc_t>(bv * static_cast<acc_t>(c[i])));
    });
    return;
  }
  switch (dt) {
    case kFloat:
      return gemm_blas<float>(a, b, out, alpha.to<float>(), beta.to<float>());
    case kDouble:
      return gemm_blas<double>(a, b, out, alpha.to_double(), beta.to_double());
    case kHalf:
      return gemm_reduced<Half>(a, b, out, static_cast<float>(alpha.to_double()), static_cast<float>(beta.to_double()));
    case kBFloat16:
      return gemm_reduced<BFloat16>(a, b, out, static_cast<float>(alpha.to_double()),
                                    static_cast<float>(beta.to_double()));
    case kUInt8:
      return gemm_integer<uint8_t>(a, b, out, alpha.to_long(), beta.to_long());
    case kInt8:
      return gemm_integer<int8_t>(a, b, out, alpha.to_long(), beta.to_long());
    case kInt16:
      return gemm_integer<int16_t>(a, b, out, alpha.to_long(), beta.to_long());
    case kInt32:
      return gemm_integer<int32_t>(a, b, out, alpha.to_long(), beta.to_long());
    case kInt64:
      return gemm_integer<int64_t>(a, b, out, alpha.to_long(), beta.to_long());
    default:
      break;
  }
  EMBER_FAIL() << "\"addmm_impl_cpu_\" not implemented for '" << scalar_type_name(dt) << "'";
}

}  // namespace ember::kernels::cpu
