// bench/gemm_probe.cpp — the GEMM diagnosis behind kernels/cpu/gemm.cpp, on oneDNN and
// OpenBLAS directly: float products of the W4/W5 shapes on dnnl_sgemm, oneDNN's matmul
// primitive and OpenBLAS; attention-shaped batches threaded inside each product vs one
// product per thread; double on OpenBLAS's own threads vs one-thread OpenBLAS split over
// OpenMP. `gemm_probe dgemm` runs only the double part. Threads: OMP_NUM_THREADS (and
// OPENBLAS_NUM_THREADS); results in bench/results/README.md.
#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "median_ms.h"
static double med(const std::function<void()>& f, int it = 11) { return bench::median_call_ms(f, it); }
static void dgemm_only(int nt) {
  // double: OpenBLAS's own threads, then one-thread OpenBLAS over OpenMP split in rows
  // and in the 2-D grid that packs least (Ember's split).
  const std::vector<std::array<int, 3>> shapes = {{1024, 1024, 1024}, {256, 1024, 4096}, {4096, 256, 1024}};
  std::vector<double> own;
  for (auto [m, k, n] : shapes) {
    std::vector<double> a(size_t(m) * k, 0.5), b(size_t(k) * n, 0.25), c(size_t(m) * n);
    own.push_back(med([&] {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, a.data(), k, b.data(), n, 0, c.data(), n);
    }));
  }
  openblas_set_num_threads(1);
  usleep(500000);
  for (size_t s = 0; s < shapes.size(); ++s) {
    auto [m, k, n] = shapes[s];
    std::vector<double> a(size_t(m) * k, 0.5), b(size_t(k) * n, 0.25), c(size_t(m) * n);
    auto grid = [&](int tm, int tn) {
      const int mb = (m + tm - 1) / tm, nb = ((n + tn - 1) / tn + 7) / 8 * 8, rows = (m + mb - 1) / mb,
                cols = (n + nb - 1) / nb;
#pragma omp parallel for num_threads(rows* cols) schedule(static, 1)
      for (int t = 0; t < rows * cols; ++t) {
        const int i = t / cols * mb, j = t % cols * nb;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, std::min(mb, m - i), std::min(nb, n - j), k, 1,
                    a.data() + size_t(i) * k, k, b.data() + j, n, 0, c.data() + size_t(i) * n + j, n);
      }
    };
    int tm = nt, tn = 1;
    for (int r = nt - 1; r >= 1; --r)
      if (nt % r == 0 && (nt / r) * m + r * n < tn * m + tm * n) {
        tm = r;
        tn = nt / r;
      }
    double rows = med([&] { grid(nt, 1); });
    double g = med([&] { grid(tm, tn); });
    std::printf("dgemm %dx%dx%d: openblas own threads %.2f ms, omp split rows %.2f ms, omp grid %dx%d %.2f ms\n", m, k,
                n, own[s], rows, tm, tn, g);
  }
}

int main(int argc, char** argv) {
  const int nt = omp_get_max_threads();
  if (argc > 1) {
    dgemm_only(nt);
    return 0;
  }
  std::printf("probe: omp threads %d, openblas core %s, openblas threads %d\n", nt, openblas_get_corename(),
              openblas_get_num_threads());
  struct S {
    int m, k, n;
    bool tb;
  };
  const std::vector<S> mm = {{256, 1024, 4096, true},
                             {256, 4096, 1024, true},
                             {1024, 768, 2304, true},
                             {1024, 3072, 768, true},
                             {512, 768, 3072, true}};
  std::vector<double> dn(mm.size());
  for (size_t i = 0; i < mm.size(); ++i) {
    auto [m, k, n, tb] = mm[i];
    std::vector<float> a(size_t(m) * k, 0.5f), b(size_t(k) * n, 0.25f), c(size_t(m) * n);
    dn[i] =
        med([&] { dnnl_sgemm('N', tb ? 'T' : 'N', m, n, k, 1, a.data(), k, b.data(), tb ? k : n, 0, c.data(), n); });
  }
  {
    // oneDNN's matmul primitive (created once, as a cache would) on the same shapes.
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream strm(eng);
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    for (size_t i = 0; i < mm.size(); ++i) {
      auto [m, k, n, tb] = mm[i];
      dnnl::memory::desc sd({m, k}, dt::f32, tag::ab), wd({k, n}, dt::f32, tb ? tag::ba : tag::ab),
          dd({m, n}, dt::f32, tag::ab);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(sd, wd, dd), eng);
      dnnl::matmul prim(pd);
      std::vector<float> a(size_t(m) * k, 0.5f), b(size_t(k) * n, 0.25f), c(size_t(m) * n);
      dnnl::memory sm(sd, eng, a.data()), wm(wd, eng, b.data()), dm(dd, eng, c.data());
      double t = med([&] {
        prim.execute(strm, {{DNNL_ARG_SRC, sm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, dm}});
        strm.wait();
      });
      const double gf = 2.0 * m * n * k / 1e6;
      std::printf("matmul primitive %dx%dx%d tb=%d: %.2f ms (%.0f GFLOP/s) [%s]\n", m, k, n, tb, t, gf / t,
                  pd.impl_info_str());
    }
  }
  const std::vector<std::array<int, 5>> bm = {
      {96, 128, 64, 128, 1}, {96, 128, 128, 64, 0}, {12, 512, 64, 512, 1}, {12, 512, 512, 64, 0}};
  for (auto [B, m, k, n, tb] : bm) {
    std::vector<float> a(size_t(B) * m * k, 0.5f), b(size_t(B) * k * n, 0.25f), c(size_t(B) * m * n);
    auto one = [&](int i) {
      dnnl_sgemm('N', tb ? 'T' : 'N', m, n, k, 1, a.data() + size_t(i) * m * k, k, b.data() + size_t(i) * k * n,
                 tb ? k : n, 0, c.data() + size_t(i) * m * n, n);
    };
    double inside = med([&] {
      for (int i = 0; i < B; ++i) one(i);
    });
    double per = med([&] {
#pragma omp parallel for schedule(static)
      for (int i = 0; i < B; ++i) one(i);
    });
    std::printf("bmm [%d] %dx%dx%d tb=%d: threads inside %.3f ms, one product per thread %.3f ms (macs/matrix %.2fM)\n",
                B, m, k, n, tb, inside, per, double(m) * n * k / 1e6);
  }
  {
    const int m = 1024, k = 1024, n = 1024;
    std::vector<double> a(size_t(m) * k, 0.5), b(size_t(k) * n, 0.25), c(size_t(m) * n);
    double own = med([&] {
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, a.data(), k, b.data(), n, 0, c.data(), n);
    });
    for (size_t i = 0; i < mm.size(); ++i) {
      auto [mm_, k_, n_, tb] = mm[i];
      std::vector<float> fa(size_t(mm_) * k_, 0.5f), fb(size_t(k_) * n_, 0.25f), fc(size_t(mm_) * n_);
      double ob = med([&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, mm_, n_, k_, 1, fa.data(), k_,
                    fb.data(), tb ? k_ : n_, 0, fc.data(), n_);
      });
      const double gf = 2.0 * mm_ * n_ * k_ / 1e6;
      std::printf("sgemm %dx%dx%d tb=%d: dnnl %.2f ms (%.0f GFLOP/s), openblas %.2f ms (%.0f GFLOP/s)\n", mm_, k_, n_,
                  tb, dn[i], gf / dn[i], ob, gf / ob);
    }
    openblas_set_num_threads(1);
    usleep(500000);
    double split = med([&] {
#pragma omp parallel for schedule(static, 1)
      for (int p = 0; p < nt; ++p) {
        int ch = (m + nt - 1) / nt, s = p * ch, l = std::min(ch, m - s);
        if (l > 0)
          cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, l, n, k, 1, a.data() + size_t(s) * k, k, b.data(), n,
                      0, c.data() + size_t(s) * n, n);
      }
    });
    std::printf("dgemm 1024^3: openblas own threads %.2f ms, one-thread openblas split over omp %.2f ms\n", own, split);
  }
}
