// kernels/cpu/fft.cpp — see fft.h.
#include "kernels/cpu/fft.h"

#include <fftw3.h>

#include <cmath>
#include <complex>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "ember/error.h"

namespace ember::kernels::cpu {
namespace {

enum class Kind { R2C, C2R, C2C };

/// One dimension of a guru plan: its length and the input and output strides (in the
/// input's and output's elements).
struct Dim {
  int64_t n, is, os;
  auto key() const { return std::tie(n, is, os); }
  bool operator<(const Dim& o) const { return key() < o.key(); }
};

/// What a plan is made for. FFTW plans bind the geometry and whether the transform is in
/// place, not the arrays: cached plans run on new arrays (fftw_execute_dft and kin),
/// made with FFTW_UNALIGNED so any array alignment is fine.
struct PlanKey {
  Kind kind;
  bool dbl;
  int sign;
  std::vector<Dim> dims, batch;
  auto key() const { return std::tie(kind, dbl, sign, dims, batch); }
  bool operator<(const PlanKey& o) const { return key() < o.key(); }
};

/// Held while a plan is looked up or made: FFTW's planner is not thread-safe.
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

/// The dims as FFTW's guru64 interface takes them (fftwf_iodim64 has the same layout).
std::vector<fftw_iodim64> iodims(const std::vector<Dim>& ds) {
  std::vector<fftw_iodim64> out;
  for (const Dim& d : ds) out.push_back({d.n, d.is, d.os});
  return out;
}

/// The cached plan for `key`, made on first use from the arrays `in`/`out` (which
/// FFTW_ESTIMATE does not touch). A null plan (FFTW cannot do the geometry) raises.
void* plan_for(const PlanKey& key, void* in, void* out) {
  // Plans live for the process. The map is never destroyed, so at exit the plans are
  // still reachable from it (a destroyed map would leave them unreachable: a leak to the
  // sanitizers) and no static destructor runs FFTW after its own teardown.
  static auto& cache = *new std::map<PlanKey, void*>();
  std::lock_guard<std::mutex> lock(planner_mutex());
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const auto dims = iodims(key.dims), batch = iodims(key.batch);
  const int rank = static_cast<int>(dims.size()), howmany = static_cast<int>(batch.size());
  const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED | (key.kind == Kind::C2R ? FFTW_DESTROY_INPUT : FFTW_PRESERVE_INPUT);
  void* plan = nullptr;
  if (key.dbl) {
    switch (key.kind) {
      case Kind::R2C:
        plan = fftw_plan_guru64_dft_r2c(rank, dims.data(), howmany, batch.data(), static_cast<double*>(in),
                                        static_cast<fftw_complex*>(out), flags);
        break;
      case Kind::C2R:
        plan = fftw_plan_guru64_dft_c2r(rank, dims.data(), howmany, batch.data(), static_cast<fftw_complex*>(in),
                                        static_cast<double*>(out), flags);
        break;
      case Kind::C2C:
        plan = fftw_plan_guru64_dft(rank, dims.data(), howmany, batch.data(), static_cast<fftw_complex*>(in),
                                    static_cast<fftw_complex*>(out), key.sign, flags);
        break;
    }
  } else {
    const auto fdims = reinterpret_cast<const fftwf_iodim64*>(dims.data());
    const auto fbatch = reinterpret_cast<const fftwf_iodim64*>(batch.data());
    switch (key.kind) {
      case Kind::R2C:
        plan = fftwf_plan_guru64_dft_r2c(rank, fdims, howmany, fbatch, static_cast<float*>(in),
                                         static_cast<fftwf_complex*>(out), flags);
        break;
      case Kind::C2R:
        plan = fftwf_plan_guru64_dft_c2r(rank, fdims, howmany, fbatch, static_cast<fftwf_complex*>(in),
                                         static_cast<float*>(out), flags);
        break;
      case Kind::C2C:
        plan = fftwf_plan_guru64_dft(rank, fdims, howmany, fbatch, static_cast<fftwf_complex*>(in),
                                     static_cast<fftwf_complex*>(out), key.sign, flags);
        break;
    }
  }
  EMBER_INTERNAL_ASSERT(plan != nullptr) << "FFTW made no plan for a transform of rank " << rank << " over "
                                         << howmany << " batch dims";
  cache.emplace(key, plan);
  return plan;
}

/// The plan's dims and batch dims: `signal` dims in order with their lengths `n` (the
/// real lengths for r2c/c2r), every other dim of `out` a batch dim.
PlanKey make_key(Kind kind, const Tensor& in, const Tensor& out, const std::vector<int64_t>& signal,
                 const std::vector<int64_t>& n, int sign) {
  PlanKey key{kind, to_real_value_type(kind == Kind::R2C ? in.dtype() : out.dtype()) == kDouble, sign, {}, {}};
  std::vector<bool> is_signal(static_cast<size_t>(out.dim()), false);
  for (size_t i = 0; i < signal.size(); ++i) {
    key.dims.push_back({n[i], in.stride(signal[i]), out.stride(signal[i])});
    is_signal[static_cast<size_t>(signal[i])] = true;
  }
  for (int64_t d = 0; d < out.dim(); ++d)
    if (!is_signal[static_cast<size_t>(d)] && out.size(d) != 1) key.batch.push_back({out.size(d), in.stride(d), out.stride(d)});
  return key;
}

/// Scales every element of the dense tensor `out` for `norm` over a signal of `n` points.
void normalize(const Tensor& out, FftNorm norm, double n) {
  if (norm == FftNorm::None || out.numel() == 0) return;
  const double scale = norm == FftNorm::ByN ? 1.0 / n : 1.0 / std::sqrt(n);
  // Real and imaginary parts alike: a dense tensor's memory is numel() elements.
  const int64_t count = out.numel() * (is_complex(out.dtype()) ? 2 : 1);
  if (to_real_value_type(out.dtype()) == kDouble) {
    double* p = static_cast<double*>(out.raw_data_ptr());
    for (int64_t i = 0; i < count; ++i) p[i] *= scale;
  } else {
    float* p = static_cast<float*>(out.raw_data_ptr());
    const float s = static_cast<float>(scale);
    for (int64_t i = 0; i < count; ++i) p[i] *= s;
  }
}

/// Runs the plan for `key` (made on first use) on the arrays `in` and `out`.
void execute(const PlanKey& key, void* in, void* out) {
  void* plan = plan_for(key, in, out);
  if (key.dbl) {
    switch (key.kind) {
      case Kind::R2C:
        return fftw_execute_dft_r2c(static_cast<fftw_plan>(plan), static_cast<double*>(in), static_cast<fftw_complex*>(out));
      case Kind::C2R:
        return fftw_execute_dft_c2r(static_cast<fftw_plan>(plan), static_cast<fftw_complex*>(in), static_cast<double*>(out));
      case Kind::C2C:
        return fftw_execute_dft(static_cast<fftw_plan>(plan), static_cast<fftw_complex*>(in),
                                static_cast<fftw_complex*>(out));
    }
  }
  switch (key.kind) {
    case Kind::R2C:
      return fftwf_execute_dft_r2c(static_cast<fftwf_plan>(plan), static_cast<float*>(in),
                                   static_cast<fftwf_complex*>(out));
    case Kind::C2R:
      return fftwf_execute_dft_c2r(static_cast<fftwf_plan>(plan), static_cast<fftwf_complex*>(in),
                                   static_cast<float*>(out));
    case Kind::C2C:
      return fftwf_execute_dft(static_cast<fftwf_plan>(plan), static_cast<fftwf_complex*>(in),
                               static_cast<fftwf_complex*>(out));
  }
}

/// The number of points of a signal of sizes `n`, for the normalization.
double product(const std::vector<int64_t>& n) {
  double p = 1;
  for (int64_t v : n) p *= static_cast<double>(v);
  return p;
}

}  // namespace

void fft_r2c(const Tensor& in, const Tensor& out, const std::vector<int64_t>& dims, FftNorm norm) {
  if (out.numel() == 0) return;
  std::vector<int64_t> n;
  for (int64_t d : dims) n.push_back(in.size(d));
  const PlanKey key = make_key(Kind::R2C, in, out, dims, n, FFTW_FORWARD);
  execute(key, in.raw_data_ptr(), out.raw_data_ptr());
  normalize(out, norm, product(n));
}

void fft_c2r(const Tensor& in, const Tensor& out, int64_t dim, FftNorm norm) {
  if (out.numel() == 0) return;
  // FFTW's c2r overwrites its input: it runs on a private dense copy.
  const Tensor scratch = in.clone();
  const std::vector<int64_t> n = {out.size(dim)};
  const PlanKey key = make_key(Kind::C2R, scratch, out, {dim}, n, FFTW_BACKWARD);
  execute(key, scratch.raw_data_ptr(), out.raw_data_ptr());
  normalize(out, norm, product(n));
}

void fft_c2c(const Tensor& in, const Tensor& out, const std::vector<int64_t>& dims, FftNorm norm, bool forward) {
  if (out.numel() == 0) return;
  std::vector<int64_t> n;
  for (int64_t d : dims) n.push_back(in.size(d));
  const PlanKey key = make_key(Kind::C2C, in, out, dims, n, forward ? FFTW_FORWARD : FFTW_BACKWARD);
  execute(key, in.raw_data_ptr(), out.raw_data_ptr());
  normalize(out, norm, product(n));
}

}  // namespace ember::kernels::cpu
