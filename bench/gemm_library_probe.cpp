// bench/gemm_library_probe.cpp — the float GEMM libraries alone at the W4/W5/W10 shapes:
// oneDNN's dnnl_sgemm, its matmul primitive on plain weights and on weights packed once
// (format any, reordered before timing), median ms and GFLOP/s per shape. Written against
// oneDNN 2.x and 3.x alike, so that one source measures the oneDNN Ember links (the CMake
// target) and another (compile it against that version's headers and library by hand, e.g.
// PyPI's onednn-cpu-gomp); bench/gemm_library_probe_torch.py times PyTorch's MKL (plain and
// packed) and its oneDNN packed linear at the same shapes. Run them in alternating rounds on
// one machine (bench/results/README.md, gemm_library_probe_2026-11-29). Threads:
// OMP_NUM_THREADS; argument: timed calls per median (default 15).
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "median_ms.h"
using namespace dnnl;
/// The median of `it` timed calls of f, after three untimed ones.
static double med(const std::function<void()>& f, int it) { return bench::median_call_ms(f, it, 3); }
/// A matmul primitive descriptor for a @ b = c, in either API.
static matmul::primitive_desc mm_pd(engine& e, const memory::desc& a, const memory::desc& b, const memory::desc& c) {
#if DNNL_VERSION_MAJOR >= 3
  return matmul::primitive_desc(e, a, b, c);
#else
  return matmul::primitive_desc(matmul::desc(a, b, c), e);
#endif
}
int main(int argc, char** argv) {
  const int it = argc > 1 ? atoi(argv[1]) : 15;
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const auto* v = dnnl_version();
  const std::vector<std::array<int, 3>> shapes = {{256, 1024, 4096}, {256, 4096, 1024}, {1024, 768, 2304},
                                                  {1024, 768, 768},  {1024, 768, 3072}, {1024, 3072, 768},
                                                  {128, 768, 2304},  {128, 768, 3072},  {128, 3072, 768}};
  for (auto [m, k, n] : shapes) {
    std::vector<float> a(size_t(m) * k), b(size_t(k) * n), c(size_t(m) * n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 13) * 0.01f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 7) * 0.01f;
    const double gf = 2.0 * m * k * n * 1e-6;
    double t_sgemm = med([&] { dnnl_sgemm('N', 'N', m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, c.data(), n); }, it);
    memory::desc amd({m, k}, memory::data_type::f32, memory::format_tag::ab);
    memory::desc bmd({k, n}, memory::data_type::f32, memory::format_tag::ab);
    memory::desc cmd({m, n}, memory::data_type::f32, memory::format_tag::ab);
    memory::desc bany({k, n}, memory::data_type::f32, memory::format_tag::any);
    auto pd = mm_pd(eng, amd, bmd, cmd);
    matmul prim(pd);
    memory am(amd, eng, a.data()), bm(bmd, eng, b.data()), cm(cmd, eng, c.data());
    double t_plain = med([&] { prim.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}}); s.wait(); }, it);
    auto ppd = mm_pd(eng, amd, bany, cmd);
    matmul pprim(ppd);
    memory packed(ppd.weights_desc(), eng);
    reorder(bm, packed).execute(s, bm, packed);
    s.wait();
    double t_packed = med([&] { pprim.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, packed}, {DNNL_ARG_DST, cm}}); s.wait(); }, it);
    std::printf("onednn %d.%d threads %d | %5dx%5dx%5d | sgemm %7.3f ms %6.1f GF | matmul %7.3f ms %6.1f GF | packed %7.3f ms %6.1f GF\n",
                v->major, v->minor, omp_get_max_threads(), m, k, n, t_sgemm, gf / t_sgemm, t_plain, gf / t_plain, t_packed,
                gf / t_packed);
  }
}
