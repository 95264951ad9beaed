// bench/conv_probe.cpp — the convolution diagnosis behind kernels/cpu/conv.cpp and
// conv_backward_dnnl.cpp for W9's geometry (x[8,64,56,56], 3x3 64->64, padding 1): Ember's
// own ops on NCHW and channels_last tensors (forward, backward data + weights, backward
// weights only, and the batch norm that follows the convolution), then oneDNN's
// primitives directly for each activation layout — oneDNN's choice (`any`), blocked
// nChw16c, NHWC and plain NCHW — alone and with the reorders from and to the NCHW tensors
// Ember holds, and the activation reorders alone. Its twin in PyTorch is
// bench/torch_conv_probe.py (the same ops on contiguous and channels_last tensors).
// Each time: the minimum over --iters calls of the process's CPU time (meant for
// OMP_NUM_THREADS=1 on a shared machine) and the median wall time; results in
// bench/results/README.md.
//
//   OMP_NUM_THREADS=1 taskset -c 0 build/bench/bench_conv_probe [--iters N]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/autograd.h"
#include "ember/ops/nn.h"
#include "ember/ops/random.h"
#include "ember/tensor.h"

namespace {

using dnnl::memory;
using tag = memory::format_tag;

int g_iters = 15;

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

/// "cpu min / wall median" of `f` over g_iters calls after two warm-up calls.
std::string timing(const std::function<void()>& f) {
  f();
  f();
  double cpu_min = 1e30;
  std::vector<double> wall;
  for (int i = 0; i < g_iters; ++i) {
    const double c0 = cpu_ms();
    const auto w0 = std::chrono::steady_clock::now();
    f();
    wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count());
    cpu_min = std::min(cpu_min, cpu_ms() - c0);
  }
  std::sort(wall.begin(), wall.end());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%8.2f / %8.2f", cpu_min, wall[wall.size() / 2]);
  return buf;
}

dnnl::engine& eng() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

/// oneDNN memory of `d` filled with values in [-0.5, 0.5).
memory filled(const memory::desc& d) {
  memory m(d, eng());
  auto* p = static_cast<float*>(m.get_data_handle());
  for (size_t i = 0; i < d.get_size() / sizeof(float); ++i) p[i] = static_cast<float>((i * 7919) % 1000) / 1000.f - 0.5f;
  return m;
}

/// Runs `from` -> `to` as a reorder when their layouts differ; nothing otherwise.
std::function<void(dnnl::stream&)> reorder_step(memory from, memory to) {
  if (from.get_desc() == to.get_desc()) return [](dnnl::stream&) {};
  auto r = std::make_shared<dnnl::reorder>(dnnl::reorder::primitive_desc(eng(), from.get_desc(), eng(), to.get_desc()));
  return [r, from, to](dnnl::stream& s) mutable { r->execute(s, from, to); };
}

/// One primitive with its operands in its own layouts, the reorders that bring the NCHW
/// operands in (`in`) and take its results back (`out`).
struct Step {
  std::string impl;
  std::function<void(dnnl::stream&)> run;
  std::vector<std::function<void(dnnl::stream&)>> in, out;
};

void report(const char* what, const char* layout, const Step& st) {
  dnnl::stream s(eng());
  const std::string alone = timing([&] {
    st.run(s);
    s.wait();
  });
  const std::string with = timing([&] {
    for (auto& r : st.in) r(s);
    st.run(s);
    for (auto& r : st.out) r(s);
    s.wait();
  });
  std::printf("%-22s %-8s %-24s %s   %s\n", what, layout, st.impl.c_str(), alone.c_str(), with.c_str());
}

template <typename Pd, typename Prim>
Step make_step(const Pd& pd, const std::vector<std::pair<int, std::pair<memory, bool>>>& user_args) {
  // user_args: (DNNL_ARG_*, (NCHW/OIHW user memory, is an output)).
  Step st;
  st.impl = pd.impl_info_str();
  auto args = std::make_shared<std::unordered_map<int, memory>>();
  for (const auto& [arg, um] : user_args) {
    const auto& [user, is_out] = um;
    memory mine(pd.query_md(dnnl::query::exec_arg_md, arg), eng());
    (*args)[arg] = mine;
    if (is_out)
      st.out.push_back(reorder_step(mine, user));
    else
      st.in.push_back(reorder_step(user, mine));
  }
  auto prim = std::make_shared<Prim>(pd);
  st.run = [prim, args](dnnl::stream& s) { prim->execute(s, *args); };
  return st;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--iters") == 0) g_iters = std::max(1, std::atoi(argv[i + 1]));
  const int64_t N = 8, C = 64, H = 56, W = 56;
  std::printf("W9's convolution (x[%ld,%ld,%ld,%ld], 3x3 %ld->%ld, padding 1), %d thread(s), oneDNN %d.%d.%d; "
              "ms: min process CPU / median wall over %d calls\n",
              long(N), long(C), long(H), long(W), long(C), long(C), omp_get_max_threads(), dnnl_version()->major,
              dnnl_version()->minor, dnnl_version()->patch, g_iters);

  // Ember's ops on NCHW tensors (as the compiled step calls them today) and on
  // channels_last ones (NHWC in, NHWC out: Note [channels_last convolution]), and the batch
  // norm that follows each convolution in W9.
  {
    using namespace ember;
    NoGradGuard no_grad;
    manual_seed(0);
    const Tensor x = randn({N, C, H, W}), g = randn({N, C, H, W}), w = randn({C, C, 3, 3});
    const auto nhwc = [](const Tensor& t) { return t.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2}); };
    const Tensor x_cl = nhwc(x), g_cl = nhwc(g);
    std::printf("\n%-22s %-8s %-24s %19s\n", "Ember op", "", "", "cpu / wall");
    for (const bool cl : {false, true}) {
      const Tensor& xx = cl ? x_cl : x;
      const Tensor& gg = cl ? g_cl : g;
      auto conv = [&] { (void)convolution(xx, w, std::nullopt, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1); };
      auto back = [&](bool data) {
        (void)convolution_backward(gg, xx, w, std::nullopt, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1,
                                   {data, true, false});
      };
      const char* layout = cl ? "NHWC" : "NCHW";
      std::printf("%-22s %-8s %-24s %s\n", "convolution", layout, "", timing(conv).c_str());
      std::printf("%-22s %-8s %-24s %s\n", "backward data+weights", layout, "", timing([&] { back(true); }).c_str());
      std::printf("%-22s %-8s %-24s %s\n", "backward weights", layout, "", timing([&] { back(false); }).c_str());
      // The batch norm that follows W9's convolutions, over the same layout.
      const Tensor bw = randn({C}), bb = randn({C});
      auto [y, mean, invstd] = native_batch_norm(xx, bw, bb, std::nullopt, std::nullopt, true, 0.1, 1e-5);
      auto bn = [&] { (void)native_batch_norm(xx, bw, bb, std::nullopt, std::nullopt, true, 0.1, 1e-5); };
      auto bn_back = [&] {
        (void)native_batch_norm_backward(gg, xx, bw, std::nullopt, std::nullopt, mean, invstd, true, 1e-5,
                                         {true, true, true});
      };
      std::printf("%-22s %-8s %-24s %s\n", "native_batch_norm", layout, "", timing(bn).c_str());
      std::printf("%-22s %-8s %-24s %s\n", "  backward", layout, "", timing(bn_back).c_str());
    }
  }

  // oneDNN's primitives per activation layout.
  const auto f32 = memory::data_type::f32;
  const memory::dims sd{N, C, H, W}, wd{C, C, 3, 3}, st{1, 1}, dl{0, 0}, pad{1, 1};
  const memory src = filled({sd, f32, tag::nchw}), dst = filled({sd, f32, tag::nchw});
  const memory wei = filled({wd, f32, tag::oihw}), dwei = filled({wd, f32, tag::oihw});
  const memory ddst = filled({sd, f32, tag::nchw}), dsrc = filled({sd, f32, tag::nchw});
  const auto alg = dnnl::algorithm::convolution_direct;
  std::printf("\n%-22s %-8s %-24s %19s   %19s\n", "oneDNN primitive", "layout", "implementation", "alone cpu / wall",
              "+ reorders cpu / wall");
  const std::vector<std::pair<const char*, tag>> layouts{
      {"any", tag::any}, {"nChw16c", tag::nChw16c}, {"nhwc", tag::nhwc}, {"nchw", tag::nchw}};
  for (const auto& [name, t] : layouts) {
    const memory::desc a_src(sd, f32, t), a_dst(sd, f32, t), a_wei(wd, f32, tag::any);
    try {
      const dnnl::convolution_forward::primitive_desc fwd(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, a_src, a_wei, a_dst, st, dl, pad, pad),
          eng());
      report("forward_training", name,
             make_step<decltype(fwd), dnnl::convolution_forward>(
                 fwd, {{DNNL_ARG_SRC, {src, false}}, {DNNL_ARG_WEIGHTS, {wei, false}}, {DNNL_ARG_DST, {dst, true}}}));
      const dnnl::convolution_backward_data::primitive_desc bwd_data(
          dnnl::convolution_backward_data::desc(alg, a_src, a_wei, a_dst, st, dl, pad, pad), eng(), fwd);
      report("backward_data", name,
             make_step<decltype(bwd_data), dnnl::convolution_backward_data>(
                 bwd_data, {{DNNL_ARG_DIFF_DST, {ddst, false}},
                            {DNNL_ARG_WEIGHTS, {wei, false}},
                            {DNNL_ARG_DIFF_SRC, {dsrc, true}}}));
      const dnnl::convolution_backward_weights::primitive_desc bwd_w(
          dnnl::convolution_backward_weights::desc(alg, a_src, a_wei, a_dst, st, dl, pad, pad), eng(), fwd);
      report("backward_weights", name,
             make_step<decltype(bwd_w), dnnl::convolution_backward_weights>(
                 bwd_w, {{DNNL_ARG_SRC, {src, false}},
                         {DNNL_ARG_DIFF_DST, {ddst, false}},
                         {DNNL_ARG_DIFF_WEIGHTS, {dwei, true}}}));
    } catch (const dnnl::error& e) {
      std::printf("%-22s %-8s no implementation (%s)\n", "", name, e.what());
    }
  }

  std::printf("\n%-40s %19s\n", "activation reorder (6.4 MB)", "cpu / wall");
  for (const auto& [name, t] : std::vector<std::pair<const char*, tag>>{{"nChw16c", tag::nChw16c}, {"nhwc", tag::nhwc}}) {
    memory other({sd, f32, t}, eng());
    dnnl::stream s(eng());
    auto in = reorder_step(src, other), out = reorder_step(other, dsrc);
    std::printf("nchw -> %-32s %s\n", name, timing([&] { in(s), s.wait(); }).c_str());
    std::printf("%-8s -> nchw%-24s %s\n", name, "", timing([&] { out(s), s.wait(); }).c_str());
  }
  return 0;
}
