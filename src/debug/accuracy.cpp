// debug/accuracy.cpp — same() and the float64 reference run (ember/debug.h): the accuracy
// check of TORCHDYNAMO_REPRO_LEVEL=4, of repros and of the minifier. PyTorch's semantics
// (torch._dynamo.utils.same with fp64_ref): compiled fails only when its error against
// the float64 result exceeds eager's by a factor. See Note [minifier], "Accuracy".
#include <cmath>
#include <sstream>

#include "ember/debug.h"
#include "ember/ember.h"
#include "support/logging.h"

namespace ember {
namespace {

std::string sizes_text(const Tensor& t) {
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

std::string num(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

/// The values of `t` as contiguous float64.
std::vector<double> values_of(const Tensor& t) {
  Tensor d = t.to(kDouble).contiguous();
  const double* p = d.data_ptr<double>();
  return std::vector<double>(p, p + d.numel());
}

SameResult fail(std::string why) { return SameResult{false, std::move(why)}; }

bool same_nonfinite(double a, double b, bool equal_nan) {
  if (std::isnan(a) || std::isnan(b)) return equal_nan && std::isnan(a) && std::isnan(b);
  return a == b;
}

}  // namespace

SameResult same(const Tensor& ref, const Tensor& res, const Tensor& fp64_ref, const SameOptions& options) {
  if (!ref.defined() || !res.defined()) {
    if (ref.defined() == res.defined()) return {};
    return fail(std::string("eager gave ") + (ref.defined() ? "a tensor" : "None") + ", compiled " +
                (res.defined() ? "a tensor" : "None"));
  }
  if (ref.sizes() != res.sizes())
    return fail("sizes differ: eager " + sizes_text(ref) + ", compiled " + sizes_text(res));
  if (options.exact_dtype && ref.dtype() != res.dtype()) {
    return fail("dtypes differ: eager " + std::string(dtype_name(ref.dtype())) + ", compiled " +
                std::string(dtype_name(res.dtype())));
  }
  const std::vector<double> r = values_of(ref), c = values_of(res);
  if (!ref.is_floating_point() || !res.is_floating_point()) {
    for (size_t i = 0; i < r.size(); ++i)
      if (r[i] != c[i])
        return fail("element " + std::to_string(i) + ": eager " + num(r[i]) + ", compiled " + num(c[i]));
    return {};
  }
  std::vector<double> f = r;
  if (fp64_ref.defined() && fp64_ref.sizes() == ref.sizes()) f = values_of(fp64_ref);

  // Non-finite values: compiled must agree with eager or with the fp64 reference there.
  for (size_t i = 0; i < r.size(); ++i) {
    if (std::isfinite(r[i]) && std::isfinite(c[i])) continue;
    if (same_nonfinite(r[i], c[i], options.equal_nan) || same_nonfinite(f[i], c[i], options.equal_nan)) continue;
    return fail("element " + std::to_string(i) + ": eager " + num(r[i]) + ", compiled " + num(c[i]) +
                " (fp64 reference " + num(f[i]) + ")");
  }
  const double tol = options.tol;
  bool close = true;
  for (size_t i = 0; i < r.size() && close; ++i)
    if (std::isfinite(r[i]) && std::isfinite(c[i])) close = std::abs(c[i] - r[i]) <= tol + tol * std::abs(r[i]);
  if (close) return {};

  if (options.cos_similarity) {
    double dot = 0, nr = 0, nc = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      if (!std::isfinite(r[i]) || !std::isfinite(c[i])) continue;
      dot += r[i] * c[i], nr += r[i] * r[i], nc += c[i] * c[i];
    }
    const double cos = dot / std::max(std::sqrt(nr) * std::sqrt(nc), 1e-6);
    if (cos >= 0.99) return {};
    return fail("cosine similarity of eager and compiled is " + num(cos) + " (at least 0.99 passes)");
  }
  double res_sq = 0, ref_sq = 0;
  size_t n = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    if (!std::isfinite(f[i]) || !std::isfinite(r[i]) || !std::isfinite(c[i])) continue;
    res_sq += (c[i] - f[i]) * (c[i] - f[i]);
    ref_sq += (r[i] - f[i]) * (r[i] - f[i]);
    ++n;
  }
  const double res_error = n ? std::sqrt(res_sq / static_cast<double>(n)) : 0;
  const double ref_error = n ? std::sqrt(ref_sq / static_cast<double>(n)) : 0;
  const double multiplier = options.multiplier > 0                               ? options.multiplier
                            : (res.dtype() == kHalf || res.dtype() == kBFloat16) ? 3.0
                                                                                 : 2.0;
  if (res_error <= multiplier * ref_error + tol / 10) return {};
  return fail("RMSE(compiled, fp64) = " + num(res_error) + " exceeds " + num(multiplier) +
              " * RMSE(eager, fp64) = " + num(multiplier * ref_error) + " + tol/10 = " + num(tol / 10));
}

SameResult same(const std::vector<Tensor>& ref, const std::vector<Tensor>& res, const std::vector<Tensor>& fp64_ref,
                const SameOptions& options) {
  if (ref.size() != res.size())
    return fail("eager gave " + std::to_string(ref.size()) + " outputs, compiled " + std::to_string(res.size()));
  for (size_t i = 0; i < ref.size(); ++i) {
    const Tensor none;
    SameResult r = same(ref[i], res[i], i < fp64_ref.size() ? fp64_ref[i] : none, options);
    if (!r) return fail("output " + std::to_string(i) + ": " + r.why);
  }
  return {};
}

std::optional<std::vector<Tensor>> run_graph_fp64(const Graph& g, const std::vector<Tensor>& inputs) {
  auto widen = [](const Tensor& t) { return t.defined() && t.is_floating_point() ? t.to(kDouble) : t; };
  auto g64 = g.clone();
  for (const auto& [name, value] : g.constants()) g64->set_constant(name, widen(value));
  std::vector<Tensor> in;
  for (const Tensor& t : inputs) in.push_back(widen(t));
  try {
    NoGradGuard no_grad;
    return run_graph(*g64, in);
  } catch (const Error& e) {
    EMBER_LOG(dynamo, INFO) << "could not run graph " << g.name() << " in float64 (the accuracy check compares with "
                            << "eager alone): " << e.message();
    return std::nullopt;
  }
}

}  // namespace ember
