// kernels/cpu/attention.cpp — see attention.h.
#include "kernels/cpu/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/vec.h"
#include "ember/error.h"

namespace ember::kernels::cpu {

// Note [flash attention]
// The work is split into tasks of one (batch, head, block of `q` query rows); OpenMP
// shares the tasks among its threads. A task walks the key/value blocks of `kv` rows in
// order. For each it forms the score block S = scale * Qb @ Kb^T (a GEMM on the calling
// thread into a [q, kv] buffer that stays in L2: 64 KiB for float at 128 x 128), adds
// the mask's block (a vector at a time when its rows are unit-stride), masks the causal diagonal, and folds S into the running per-row
// maximum m and sum l of the online softmax: with m' = max(m, max_j S[i, j]),
// l' = l * exp(m - m') + sum_j exp(S[i, j] - m') and the output accumulator
// O' = O * exp(m - m') + exp(S - m') @ Vb (a second GEMM). At the end O / l is the row's
// output and m + log(l) its log-sum-exp. A row whose scores so far are all -inf keeps
// m = -inf and adds nothing (exp(-inf - -inf) would be nan). Under `causal` a task stops
// at the first key block starting after its last query row: those blocks are skipped,
// not masked. A block whose mask entries are all -inf (a causal mask given as a tensor,
// as a graph whose mask is an input passes it) is skipped too, after one read of the
// mask's block. Accumulation is in the input dtype, as PyTorch's CPU kernel does for float.
// The blocks, 128 query by 128 key rows, were the fastest of 32/64/128 x 64/128/256 at
// W5's head shapes ([8, 12, 128, 64] and [1, 12, 512, 64], causal, 1 and 2 threads,
// bench_attention_probe); smaller query blocks pay more GEMM calls per score.

namespace {

FlashBlocks g_blocks;

// Note [grouped-query attention]
// Key and value may have fewer heads than the query (Hkv dividing H, PyTorch's enable_gqa):
// query head h reads key/value head h / (H / Hkv), as PyTorch 2.11's CPU flash kernel maps
// them (FlashAttentionKernel.cpp's repeat_factor), so the repeated keys and values never
// exist in memory. The forward's tasks stay (batch, query head, query block). The backward's
// tasks are (batch, key/value head): a task walks the H / Hkv query heads of its group in
// order, writes each one's grad_q and adds their contributions into one dk and dv, stored
// once at the end, so that the heads of a group sum without a race or a reduction pass.
// The price: B * Hkv backward tasks, not B * H (one, on one thread, for a single batch
// over a single key/value head); not measured against a split with a reduction.

/// Whether every entry of a rows x cols block of the mask is -inf (its keys add nothing).
template <typename T>
bool masked_whole(const T* m, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  const T ninf = -std::numeric_limits<T>::infinity();
  if (col_stride == 1) {
    // Unit-stride rows (the inductor's fused causal mask): a row's lanes compared at once.
    using V = vec::Vectorized<T>;
    constexpr int64_t W = V::size();
    const V vninf(ninf);
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = m + r * row_stride;
      int64_t c = 0;
      if (cols >= W) {
        typename V::Mask all = V::load(row) == vninf;
        for (c = W; c + W <= cols; c += W) all = all && (V::load(row + c) == vninf);
        for (int64_t i = 0; i < W; ++i)
          if (!all.m[i]) return false;
      }
      for (; c < cols; ++c)
        if (row[c] != ninf) return false;
    }
    return true;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if (m[r * row_stride + c * col_stride] != ninf) return false;
  return true;
}

/// One block of scores, as the forward and the backward both compute them: buf[r][c] =
/// scale * q_r . k_c (+ mask[r][c]) for `rows` query rows from `qp` (row stride qs) and
/// `cols` key rows from `kp` (row stride ks), into `buf` of row stride `ld`. `mp` is the
/// mask at the block's first entry (row and column strides ms2, ms3), or null.
template <typename T>
void block_scores(const T* qp, int64_t qs, const T* kp, int64_t ks, int64_t rows, int64_t cols, int64_t E, T scale,
                  const T* mp, int64_t ms2, int64_t ms3, T* buf, int64_t ld) {
  gemm(false, true, rows, cols, E, scale, qp, qs, kp, ks, T(0), buf, ld);
  if (!mp) return;
  if (ms3 == 1) {
    // A mask with unit-stride rows (the inductor's fused causal mask, any contiguous one):
    // added a vector at a time.
    using V = vec::Vectorized<T>;
    constexpr int64_t W = V::size();
    for (int64_t r = 0; r < rows; ++r) {
      T* s = buf + r * ld;
      const T* m = mp + r * ms2;
      int64_t c = 0;
      for (; c + W <= cols; c += W) (V::load(s + c) + V::load(m + c)).store(s + c);
      for (; c < cols; ++c) s[c] += m[c];
    }
    return;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) buf[r * ld + c] += mp[r * ms2 + c * ms3];
}

/// How many of a block's `cols` keys, from key j0 on, query row i sees: all, or under
/// is_causal those up to i (keys after it are masked).
inline int64_t live_keys(bool causal, int64_t i, int64_t j0, int64_t cols) {
  return causal ? std::min(cols, std::max<int64_t>(0, i - j0 + 1)) : cols;
}

/// One (batch, head, query block) task of flash_attention over dtype T.
template <typename T>
struct FlashTask {
  const Tensor &q, &k, &v;
  const Tensor* mask;
  bool causal;
  T scale;
  Tensor &out, &lse;

  void run() const {
    using V = vec::Vectorized<T>;
    constexpr int64_t W = V::size();
    const int64_t B = q.size(0), H = q.size(1), L = q.size(2), E = q.size(3), S = k.size(2), Ev = v.size(3);
    const int64_t qb = std::max<int64_t>(1, g_blocks.q), kb = std::max<int64_t>(1, g_blocks.kv);
    const int64_t nq = (L + qb - 1) / qb;
    const int64_t tasks = B * H * nq, rep = H / std::max<int64_t>(1, k.size(1));
    const T* qd = q.data_ptr<T>();
    const T* kd = k.data_ptr<T>();
    const T* vd = v.data_ptr<T>();
    const T* md = mask ? mask->data_ptr<T>() : nullptr;
    T* od = out.data_ptr<T>();
    T* ld = lse.data_ptr<T>();
    const T ninf = -std::numeric_limits<T>::infinity();
#pragma omp parallel if (tasks > 1)
    {
      std::vector<T> sbuf(qb * kb), obuf(qb * Ev), m(qb), l(qb);
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < tasks; ++t) {
        const int64_t b = t / (H * nq), h = (t / nq) % H, i0 = (t % nq) * qb;
        const int64_t rows = std::min(qb, L - i0);
        const T* qp = qd + b * q.stride(0) + h * q.stride(1) + i0 * q.stride(2);
        const int64_t kvh = h / rep;  // the key/value head of query head h (Note [grouped-query attention])
        const T* kp = kd + b * k.stride(0) + kvh * k.stride(1);
        const T* vp = vd + b * v.stride(0) + kvh * v.stride(1);
        std::fill(m.begin(), m.end(), ninf);
        std::fill(l.begin(), l.end(), T(0));
        std::fill(obuf.begin(), obuf.begin() + rows * Ev, T(0));
        for (int64_t j0 = 0; j0 < S; j0 += kb) {
          if (causal && j0 > i0 + rows - 1) break;  // every key of this block and on is in the future
          const int64_t cols = std::min(kb, S - j0);
          const int64_t ms2 = md ? mask->stride(2) : 0, ms3 = md ? mask->stride(3) : 0;
          const T* mp = md ? md + b * mask->stride(0) + h * mask->stride(1) + i0 * ms2 + j0 * ms3 : nullptr;
          if (mp && masked_whole(mp, rows, cols, ms2, ms3)) continue;
          block_scores(qp, q.stride(2), kp + j0 * k.stride(2), k.stride(2), rows, cols, E, scale, mp, ms2, ms3,
                       sbuf.data(), kb);
          for (int64_t r = 0; r < rows; ++r) {
            T* s = sbuf.data() + r * kb;
            // Keys after i in this block are masked; `live` of them take part.
            const int64_t live = live_keys(causal, i0 + r, j0, cols);
            T mx = ninf;
            int64_t c = 0;
            if (live >= W) {
              V vm = V::load(s);
              for (c = W; c + W <= live; c += W) {
                const V x = V::load(s + c);
                vm = vec::where(x > vm, x, vm);
              }
              mx = vec::lane_max(vm);
            }
            for (; c < live; ++c) mx = std::max(mx, s[c]);
            const T mnew = std::max(m[r], mx);
            T* o = obuf.data() + r * Ev;
            if (mnew == ninf) {  // nothing seen yet: the row's probabilities here are all 0
              std::fill(s, s + cols, T(0));
              continue;
            }
            const T alpha = m[r] == ninf ? T(0) : std::exp(m[r] - mnew);
            const V vmn(mnew);
            V vsum(T(0));
            T sum = 0;
            for (c = 0; c + W <= live; c += W) {
              const V e = vec::exp(V::load(s + c) - vmn);
              e.store(s + c);
              vsum = vsum + e;
            }
            for (; c < live; ++c) {
              s[c] = std::exp(s[c] - mnew);
              sum += s[c];
            }
            std::fill(s + live, s + cols, T(0));
            l[r] = l[r] * alpha + sum + vec::lane_sum(vsum);
            m[r] = mnew;
            if (alpha != T(1))
              for (int64_t e = 0; e < Ev; ++e) o[e] *= alpha;
          }
          gemm(false, false, rows, Ev, cols, T(1), sbuf.data(), kb, vp + j0 * v.stride(2), v.stride(2), T(1),
               obuf.data(), Ev);
        }
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r;
          T* op = od + b * out.stride(0) + h * out.stride(1) + i * out.stride(2);
          const T inv = T(1) / l[r];
          const T* o = obuf.data() + r * Ev;
          for (int64_t e = 0; e < Ev; ++e) op[e] = o[e] * inv;
          ld[b * lse.stride(0) + h * lse.stride(1) + i * lse.stride(2)] = m[r] + std::log(l[r]);
        }
      }
    }
  }
};

}  // namespace

// Note [flash attention backward]
// The backward recomputes what the forward did not keep. With P = exp(S - lse) the
// probabilities (S the masked scaled scores, lse the forward's log-sum-exp per row) and
// D_i = sum_e dO[i, e] * O[i, e] (= sum_j P[i, j] * dP[i, j]), the gradients are
// dV = P^T dO, dP = dO V^T, dS = P * (dP - D), dQ = scale * dS K and dK = scale * dS^T Q.
// A task is one (batch, head): it walks the query blocks and, within each, the key blocks
// the forward visited (the same causal stop and whole-masked skip), forms the score block
// with one GEMM, turns it into P in place (exp of the score less the row's lse; 0 above
// the causal diagonal, and for a row whose lse is -inf), and runs the four other GEMMs
// of the block on the calling thread: dV_j += P^T dO_i, dP = dO_i V_j^T, then dS in place
// of dP, dQ_i += scale * dS K_j, dK_j += scale * dS^T Q_i. dQ, dK and dV accumulate in the
// task's own contiguous [L, E], [S, E] and [S, Ev] buffers (every key block's dK and dV
// gathers over all query blocks, so tasks over query blocks would race on them) and are
// copied to the outputs' strides at the end. Accumulation is in the input dtype, as
// PyTorch's CPU kernel does for float. The blocks are the forward's (FlashBlocks).
// Measured on the 2-core development machine (1 thread, process CPU time, medians of 5
// alternating rounds, bench_attention_probe), causal float32: the math form's derivatives
// against this kernel at [8, 12, 128, 64] 6.50 -> 6.30 ms, at [1, 12, 512, 64] 12.44 ->
// 6.58 ms; 64 x 64 blocks gave 6.15 and 7.50 ms, 128 x 64 6.84 and 7.31 ms.

namespace {

/// One (batch, head) task of flash_attention_backward over dtype T.
template <typename T>
struct FlashBackwardTask {
  const Tensor &go, &q, &k, &v, &out, &lse;
  const Tensor* mask;
  bool causal;
  T scale;
  Tensor &gq, &gk, &gv;

  void run() const {
    using V = vec::Vectorized<T>;
    constexpr int64_t W = V::size();
    const int64_t B = q.size(0), H = q.size(1), L = q.size(2), E = q.size(3), S = k.size(2), Ev = v.size(3);
    const int64_t qb = std::max<int64_t>(1, g_blocks.q), kb = std::max<int64_t>(1, g_blocks.kv);
    const int64_t Hkv = k.size(1), rep = H / std::max<int64_t>(1, Hkv);  // Note [grouped-query attention]
    const int64_t tasks = B * Hkv;
    const int64_t qs = q.stride(2), ks = k.stride(2), vs = v.stride(2), gs = go.stride(2), os = out.stride(2);
    const T* md = mask ? mask->data_ptr<T>() : nullptr;
    const int64_t ms2 = mask ? mask->stride(2) : 0, ms3 = mask ? mask->stride(3) : 0, ls = lse.stride(2);
    const T ninf = -std::numeric_limits<T>::infinity();
#pragma omp parallel if (tasks > 1)
    {
      std::vector<T> pbuf(qb * kb), dsbuf(qb * kb), dq(L * E), dk(S * E), dv(S * Ev), drow(qb), lrow(qb);
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < tasks; ++t) {
        const int64_t b = t / Hkv, kvh = t % Hkv;
        const T* kp = k.data_ptr<T>() + b * k.stride(0) + kvh * k.stride(1);
        const T* vp = v.data_ptr<T>() + b * v.stride(0) + kvh * v.stride(1);
        std::fill(dk.begin(), dk.end(), T(0));
        std::fill(dv.begin(), dv.end(), T(0));
        auto store = [&](const std::vector<T>& src, Tensor& dst, int64_t head, int64_t n, int64_t width) {
          T* d = dst.data_ptr<T>() + b * dst.stride(0) + head * dst.stride(1);
          const int64_t rs = dst.stride(2), es = dst.stride(3);
          for (int64_t i = 0; i < n; ++i) {
            T* row = d + i * rs;
            const T* from = src.data() + i * width;
            if (es == 1) {
              std::copy(from, from + width, row);
            } else {
              for (int64_t e = 0; e < width; ++e) row[e * es] = from[e];
            }
          }
        };
        // The query heads that share key/value head kvh add their gradients into one dk, dv.
        for (int64_t h = kvh * rep; h < (kvh + 1) * rep; ++h) {
          const T* qp = q.data_ptr<T>() + b * q.stride(0) + h * q.stride(1);
          const T* gp = go.data_ptr<T>() + b * go.stride(0) + h * go.stride(1);
          const T* op = out.data_ptr<T>() + b * out.stride(0) + h * out.stride(1);
          const T* lp = lse.data_ptr<T>() + b * lse.stride(0) + h * lse.stride(1);
          const T* mp = md ? md + b * mask->stride(0) + h * mask->stride(1) : nullptr;
          std::fill(dq.begin(), dq.end(), T(0));
          for (int64_t i0 = 0; i0 < L; i0 += qb) {
            const int64_t rows = std::min(qb, L - i0);
            for (int64_t r = 0; r < rows; ++r) {
              const T* g = gp + (i0 + r) * gs;
              const T* o = op + (i0 + r) * os;
              T d = 0;
              for (int64_t e = 0; e < Ev; ++e) d += g[e] * o[e];
              lrow[r] = lp[(i0 + r) * ls];
              drow[r] = lrow[r] == ninf ? T(0) : d;  // such a row's out is nan and its P all 0
            }
            for (int64_t j0 = 0; j0 < S; j0 += kb) {
              if (causal && j0 > i0 + rows - 1) break;  // the forward skipped these blocks too
              const int64_t cols = std::min(kb, S - j0);
              const T* mb = mp ? mp + i0 * ms2 + j0 * ms3 : nullptr;
              if (mb && masked_whole(mb, rows, cols, ms2, ms3)) continue;
              block_scores(qp + i0 * qs, qs, kp + j0 * ks, ks, rows, cols, E, scale, mb, ms2, ms3, pbuf.data(), kb);
              for (int64_t r = 0; r < rows; ++r) {
                T* s = pbuf.data() + r * kb;
                int64_t live = live_keys(causal, i0 + r, j0, cols);
                if (lrow[r] == ninf) live = 0;  // every score of the row is masked: no probabilities
                const V vl(lrow[r]);
                int64_t c = 0;
                for (; c + W <= live; c += W) vec::exp(V::load(s + c) - vl).store(s + c);
                for (; c < live; ++c) s[c] = std::exp(s[c] - lrow[r]);
                std::fill(s + live, s + cols, T(0));
              }
              gemm(true, false, cols, Ev, rows, T(1), pbuf.data(), kb, gp + i0 * gs, gs, T(1), dv.data() + j0 * Ev, Ev);
              gemm(false, true, rows, cols, Ev, T(1), gp + i0 * gs, gs, vp + j0 * vs, vs, T(0), dsbuf.data(), kb);
              for (int64_t r = 0; r < rows; ++r) {
                const T* p = pbuf.data() + r * kb;
                T* ds = dsbuf.data() + r * kb;
                const V vd(drow[r]);
                int64_t c = 0;
                for (; c + W <= cols; c += W) (V::load(p + c) * (V::load(ds + c) - vd)).store(ds + c);
                for (; c < cols; ++c) ds[c] = p[c] * (ds[c] - drow[r]);
              }
              gemm(false, false, rows, E, cols, scale, dsbuf.data(), kb, kp + j0 * ks, ks, T(1), dq.data() + i0 * E, E);
              gemm(true, false, cols, E, rows, scale, dsbuf.data(), kb, qp + i0 * qs, qs, T(1), dk.data() + j0 * E, E);
            }
          }
          store(dq, gq, h, L, E);
        }
        store(dk, gk, kvh, S, E);
        store(dv, gv, kvh, S, Ev);
      }
    }
  }
};

/// Checks that key and value have one head count Hkv that divides the query's H (Note
/// [grouped-query attention]); `who` names the caller in the error.
void check_heads(const char* who, const Tensor& q, const Tensor& k, const Tensor& v) {
  EMBER_CHECK(k.size(1) == v.size(1) && (k.size(1) == q.size(1) || (k.size(1) > 0 && q.size(1) % k.size(1) == 0)))
      << who << ": expected key and value of one head count dividing the query's " << q.size(1) << ", got "
      << k.size(1) << " and " << v.size(1);
}

}  // namespace

FlashBlocks flash_blocks() { return g_blocks; }
void set_flash_blocks(FlashBlocks b) { g_blocks = b; }

void flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, bool causal, double scale,
                     Tensor& out, Tensor& lse) {
  EMBER_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4)
      << "flash_attention: expected 4-D query, key and value, got " << q.sizes() << ", " << k.sizes() << ", "
      << v.sizes();
  EMBER_CHECK(q.stride(3) == 1 && k.stride(3) == 1 && v.stride(3) == 1 && out.stride(3) == 1)
      << "flash_attention: expected unit stride in the last dim of query, key, value and output";
  check_heads("flash_attention", q, k, v);
  if (out.numel() == 0) return;
  switch (q.dtype()) {
    case kFloat:
      FlashTask<float>{q, k, v, mask, causal, static_cast<float>(scale), out, lse}.run();
      break;
    case kDouble:
      FlashTask<double>{q, k, v, mask, causal, scale, out, lse}.run();
      break;
    default:
      EMBER_FAIL() << "flash_attention: expected float or double, got " << scalar_type_name(q.dtype());
  }
}

void flash_attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, const Tensor* mask, bool causal, double scale,
                              Tensor& grad_q, Tensor& grad_k, Tensor& grad_v) {
  EMBER_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4 && grad_out.dim() == 4 && out.dim() == 4 && lse.dim() == 3)
      << "flash_attention_backward: expected 4-D grad_out, query, key, value and out and a 3-D logsumexp, got "
      << grad_out.sizes() << ", " << q.sizes() << ", " << k.sizes() << ", " << v.sizes() << ", " << out.sizes()
      << " and " << lse.sizes();
  EMBER_CHECK(q.stride(3) == 1 && k.stride(3) == 1 && v.stride(3) == 1 && grad_out.stride(3) == 1 &&
              out.stride(3) == 1)
      << "flash_attention_backward: expected unit stride in the last dim of grad_out, query, key, value and out";
  check_heads("flash_attention_backward", q, k, v);
  if (grad_q.numel() + grad_k.numel() + grad_v.numel() == 0) return;
  switch (q.dtype()) {
    case kFloat:
      FlashBackwardTask<float>{grad_out, q, k, v, out, lse, mask, causal, static_cast<float>(scale),
                               grad_q, grad_k, grad_v}
          .run();
      break;
    case kDouble:
      FlashBackwardTask<double>{grad_out, q, k, v, out, lse, mask, causal, scale, grad_q, grad_k, grad_v}.run();
      break;
    default:
      EMBER_FAIL() << "flash_attention_backward: expected float or double, got " << scalar_type_name(q.dtype());
  }
}

}  // namespace ember::kernels::cpu
