// ops/loss.cpp — the loss functions of torch.nn.functional under their ATen names.
// Where PyTorch's Core ATen decomposes a loss (mse_loss, l1_loss, smooth_l1_loss,
// binary_cross_entropy(_with_logits), nll_loss(_nd), cross_entropy_loss) it is a
// composite here too, written with pointwise ops and reductions: its gradient comes from
// theirs and the inductor fuses it. nll_loss_forward and nll_loss_backward, core ops in
// ATen, have kernels; their derivative row is in derivatives_nn.cpp. See Note [nn].
#include "ember/ops/loss.h"

#include <cmath>
#include <sstream>
#include <string>
#include <type_traits>

#include "core/sym_geometry.h"
#include "ember/ops/creation.h"
#include "ember/ops/indexing.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/reduction.h"
#include "ember/sym_int.h"
#include "ember/ops/view.h"
#include "ops/api.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

// ATen's at::Reduction enum.
constexpr int64_t kNone = 0, kMean = 1, kSum = 2;

int64_t checked_reduction(const IValue& v) {
  const int64_t r = v.to_int();
  EMBER_CHECK(r == kNone || r == kMean || r == kSum) << "expected reduction 0 (none), 1 (mean) or 2 (sum), got " << r;
  return r;
}

/// ATen's apply_loss_reduction.
Tensor reduce(const Tensor& loss, int64_t reduction) {
  if (reduction == kMean) return mean(loss);
  if (reduction == kSum) return sum(loss);
  return loss;
}

/// Raises PyTorch's dtype error ("… not implemented for 'Long'") unless the promoted dtype is floating.
ScalarType floating_result(const Tensor& a, const Tensor& b, const char* kernel) {
  const ScalarType t = promote_types(a.dtype(), b.dtype());
  if (!is_floating_point(t)) not_implemented(kernel, t);
  return t;
}

std::string torch_size(IntArrayRef s) {
  std::ostringstream os;
  os << "torch.Size(" << s << ")";
  return os.str();
}

// --- regression losses -------------------------------------------------------------------

Stack mse_loss_decomposition(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const Tensor& target = a[1].to_tensor();
  const int64_t reduction = checked_reduction(a[2]);
  floating_result(self, target, "mse_cpu");
  const Tensor d = self - target;
  return {reduce(d * d, reduction)};
}

Stack l1_loss_decomposition(const Stack& a) {
  const int64_t reduction = checked_reduction(a[2]);
  return {reduce(abs(a[0].to_tensor() - a[1].to_tensor()), reduction)};
}

Stack smooth_l1_loss_decomposition(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const Tensor& target = a[1].to_tensor();
  const int64_t reduction = checked_reduction(a[2]);
  const double beta = a[3].to_double();
  EMBER_CHECK(beta >= 0) << "smooth_l1_loss does not support negative values for beta.";
  floating_result(self, target, "smooth_l1_cpu");
  const Tensor d = abs(self - target);
  if (beta == 0) return {reduce(d, reduction)};
  return {reduce(where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)};
}

// --- binary cross entropy ------------------------------------------------------------------


Stack binary_cross_entropy_decomposition(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const Tensor& target = a[1].to_tensor();
  const std::optional<Tensor> weight = a[2].to_optional_tensor();
  const int64_t reduction = checked_reduction(a[3]);
  EMBER_CHECK_KIND(ErrorKind::ValueError, same_sizes(self, target))
      << "Using a target size (" << torch_size(target.sizes()) << ") that is different to the input size ("
      << torch_size(self.sizes()) << ") is deprecated. Please ensure they have the same size.";
  if (!is_floating_point(self.dtype())) not_implemented("binary_cross_entropy", self.dtype());
  for (const Tensor* t : {&target, weight ? &*weight : nullptr}) {
    EMBER_CHECK(!t || t->dtype() == self.dtype())
        << "Found dtype " << scalar_type_name(t->dtype()) << " but expected " << scalar_type_name(self.dtype());
  }
  // ATen's kernel reads every input value; so does eager Ember. A traced input has no
  // values yet, and a compiled graph does not check (as PyTorch's decomposition).
  if (!self.is_fake() && !self.is_meta() && self.numel() > 0) {
    const Tensor probe = call_op_tensor("aten::detach", {self});  // no autograd history for the check
    EMBER_CHECK((amin(probe) >= 0).item<bool>() && (amax(probe) <= 1).item<bool>())
        << "all elements of input should be between 0 and 1";
  }
  // ATen clamps the logs at -100 so that an input of exactly 0 or 1 gives a finite loss.
  const Tensor log_p = clamp_min(log(self), -100);
  const Tensor log_1mp = clamp_min(log1p(-self), -100);
  Tensor loss = (target - 1) * log_1mp - target * log_p;
  if (weight) loss = loss * *weight;
  return {reduce(loss, reduction)};
}

Stack binary_cross_entropy_with_logits_decomposition(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const Tensor& target = a[1].to_tensor();
  const std::optional<Tensor> weight = a[2].to_optional_tensor(), pos_weight = a[3].to_optional_tensor();
  const int64_t reduction = checked_reduction(a[4]);
  EMBER_CHECK_KIND(ErrorKind::ValueError, same_sizes(self, target))
      << "Target size (" << torch_size(target.sizes()) << ") must be the same as input size ("
      << torch_size(self.sizes()) << ")";
  EMBER_CHECK(is_floating_point(self.dtype()) && is_floating_point(target.dtype()))
      << "binary_cross_entropy_with_logits: expected floating point input and target, got "
      << scalar_type_name(self.dtype()) << " and " << scalar_type_name(target.dtype());
  // log(1 + exp(-x)) computed as m + log(exp(-m) + exp(-x - m)) with m = max(-x, 0): no
  // exp overflows, as in ATen.
  const Tensor m = clamp_min(-self, 0);
  const Tensor softplus_neg = log(exp(-m) + exp(-self - m)) + m;
  Tensor loss = (1 - target) * self;
  if (pos_weight) {
    loss = loss + ((*pos_weight - 1) * target + 1) * softplus_neg;
  } else {
    loss = loss + softplus_neg;
  }
  if (weight) loss = loss * *weight;
  return {reduce(loss, reduction)};
}

// --- nll_loss ------------------------------------------------------------------------------

/// nll_loss_forward's and nll_loss_backward's argument checks (ATen's nll_loss_forward meta).
void check_nll_args(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight) {
  check_defined(self, "self");
  EMBER_CHECK(self.dim() > 0 && self.dim() <= 2) << "input tensor should be 1D or 2D";
  EMBER_CHECK(target.dim() <= 1) << "0D or 1D target tensor expected, multi-target not supported";
  const bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
  // Sizes compare as SymInts: over size symbols, a guard where the ranges do not decide.
  EMBER_CHECK(no_batch_dim || core::sym_size(self, 0) == core::sym_size(target, 0))
      << "size mismatch (got input: " << self.sizes() << ", target: " << target.sizes() << ")";
  EMBER_CHECK(target.dtype() == kLong) << "expected scalar type Long but found " << scalar_type_name(target.dtype());
  EMBER_CHECK(!weight || (weight->dim() == 1 && core::sym_size(*weight, 0) == core::sym_size(self, -1)))
      << "weight tensor should be defined either for all " << self.size(-1)
      << " classes or no classes but got weight tensor of shape: " << weight->sizes();
  if (!is_floating_point(self.dtype())) not_implemented("nll_loss_out_frame", self.dtype());
  EMBER_CHECK(!weight || weight->dtype() == self.dtype()) << "expected scalar type " << scalar_type_name(self.dtype())
                                                          << " but found " << scalar_type_name(weight->dtype());
}

Tensor dense(const Tensor& t) { return t.is_contiguous() ? t : contiguous(t); }

/// A double accumulator's value as T (bfloat16 converts through float).
template <typename T>
T narrow_to(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return T(static_cast<float>(v));
  }
}

/// The class of row i, checked against the bounds (ignored rows are not checked, as in ATen).
int64_t class_of(const int64_t* target, int64_t i, int64_t n_classes, int64_t ignore_index) {
  const int64_t t = target[i];
  EMBER_CHECK_INDEX(t == ignore_index || (t >= 0 && t < n_classes)) << "Target " << t << " is out of bounds.";
  return t;
}

template <typename T>
void nll_forward(const Tensor& self, const Tensor& target, const Tensor& weight, int64_t reduction,
                 int64_t ignore_index, Tensor& output, Tensor& total_weight) {
  const T* x = self.data_ptr<T>();
  const int64_t* t = target.data_ptr<int64_t>();
  const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
  const int64_t n_classes = self.size(-1), batch = self.dim() == 1 ? 1 : self.size(0);
  auto weight_of = [&](int64_t c) { return w ? static_cast<double>(w[c]) : 1.0; };
  if (reduction == kNone && self.dim() == 2) {
    T* out = output.data_ptr<T>();
    for (int64_t i = 0; i < batch; ++i) {
      const int64_t c = class_of(t, i, n_classes, ignore_index);
      out[i] = c == ignore_index ? T(0) : narrow_to<T>(-weight_of(c) * static_cast<double>(x[i * n_classes + c]));
    }
    *total_weight.data_ptr<T>() = T(0);
    return;
  }
  double loss = 0, weights = 0;
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t c = class_of(t, i, n_classes, ignore_index);
    if (c == ignore_index) continue;
    loss -= weight_of(c) * static_cast<double>(x[i * n_classes + c]);
    weights += weight_of(c);
  }
  // Mean over no weight is 0/0: NaN, as in PyTorch.
  if (reduction == kMean) loss /= weights;
  *output.data_ptr<T>() = narrow_to<T>(loss);
  *total_weight.data_ptr<T>() = narrow_to<T>(weights);
}

std::vector<TensorMeta> nll_loss_forward_meta(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  check_nll_args(self, a[1].to_tensor(), a[2].to_optional_tensor());
  const int64_t reduction = checked_reduction(a[3]);
  return core::over_geometry({&self}, [&]<typename Int>() -> std::vector<TensorMeta> {
    std::vector<Int> out_sizes;
    if (reduction == kNone && self.dim() == 2) out_sizes.push_back(core::Geometry<Int>::size(self, 0));
    return {core::contiguous_meta_over(std::move(out_sizes), self.dtype(), self.device()),
            contiguous_meta({}, self.dtype(), self.device())};
  });
}

void nll_loss_forward_kernel(const Stack& a, std::vector<Tensor>& out) {
  const Tensor self = dense(a[0].to_tensor());
  const Tensor target = dense(a[1].to_tensor());
  const Tensor weight = a[2].is_none() ? Tensor() : dense(a[2].to_tensor());
  const int64_t reduction = a[3].to_int(), ignore_index = a[4].to_int();
  EMBER_DISPATCH_FLOATING_TYPES(self.dtype(), "nll_loss_forward", [&] {
    nll_forward<scalar_t>(self, target, weight, reduction, ignore_index, out[0], out[1]);
  });
}

void check_nll_backward_args(const Stack& a) {
  const Tensor& grad = a[0].to_tensor();
  const Tensor& self = a[1].to_tensor();
  const Tensor& target = a[2].to_tensor();
  check_defined(grad, "grad_output");
  check_nll_args(self, target, a[3].to_optional_tensor());
  const int64_t reduction = checked_reduction(a[4]);
  const Tensor& total_weight = a[6].to_tensor();
  EMBER_CHECK(total_weight.numel() == 1) << "expected total_weight to be a  single element tensor, got: "
                                         << total_weight.sizes() << " (" << total_weight.numel() << " elements)";
  if (reduction == kNone && self.dim() == 2) {
    EMBER_CHECK(grad.dim() == 1 && core::sym_size(grad, 0) == core::sym_size(self, 0))
        << "Expected a tensor of dimension 1 and tensor.size[0] == " << self.size(0) << " but got: dimension "
        << grad.dim() << " and tensor.size[0] = " << (grad.dim() > 0 ? grad.size(0) : 1);
  } else {
    EMBER_CHECK(grad.dim() == 0 || (grad.dim() == 1 && core::sym_size(grad, 0) == core::SymInt(1)))
        << "Expected a single element grad_output tensor, but got: " << grad.sizes();
  }
  EMBER_CHECK(grad.dtype() == self.dtype())
      << "expected scalar type " << scalar_type_name(self.dtype()) << " but found " << scalar_type_name(grad.dtype());
}

template <typename T>
void nll_backward(const Tensor& grad, const Tensor& target, const Tensor& weight, int64_t reduction,
                  int64_t ignore_index, const Tensor& total_weight, Tensor& grad_input) {
  const int64_t* t = target.data_ptr<int64_t>();
  const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
  const T* g = grad.data_ptr<T>();
  T* gi = grad_input.data_ptr<T>();
  const int64_t n_classes = grad_input.size(-1), batch = grad_input.dim() == 1 ? 1 : grad_input.size(0);
  std::fill(gi, gi + grad_input.numel(), T(0));
  const bool per_row = reduction == kNone && grad_input.dim() == 2;
  double scale = per_row ? 0.0 : static_cast<double>(g[0]);
  if (reduction == kMean) scale /= static_cast<double>(*total_weight.data_ptr<T>());
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t c = class_of(t, i, n_classes, ignore_index);
    if (c == ignore_index) continue;
    const double wc = w ? static_cast<double>(w[c]) : 1.0;
    gi[i * n_classes + c] = narrow_to<T>(-wc * (per_row ? static_cast<double>(g[i]) : scale));
  }
}

void nll_loss_backward_kernel(const Stack& a, std::vector<Tensor>& out) {
  check_nll_backward_args(a);
  const Tensor grad = dense(a[0].to_tensor());
  const Tensor target = dense(a[2].to_tensor());
  const Tensor weight = a[3].is_none() ? Tensor() : dense(a[3].to_tensor());
  const Tensor total_weight = dense(a[6].to_tensor());
  const int64_t reduction = a[4].to_int(), ignore_index = a[5].to_int();
  EMBER_DISPATCH_FLOATING_TYPES(out[0].dtype(), "nll_loss_backward", [&] {
    nll_backward<scalar_t>(grad, target, weight, reduction, ignore_index, total_weight, out[0]);
  });
}

/// On CUDA, nll_loss is written with ops that have CUDA kernels: each row's picked value
/// gathered, weighted and reduced in double (the CPU kernel's accumulation), the result
/// rounded once to the output dtype. The targets are checked on the host (a copy of N
/// integers) so that a bad target raises the CPU's message instead of a device assert.
/// Inputs are read through `aten::detach` (as binary_cross_entropy's input check above):
/// the nested ops are the kernel, not part of any autograd graph.
Tensor plain(const Tensor& t) { return call_op_tensor("aten::detach", {t}); }

struct NllRows {
  Tensor keep;         // [N]: whether the row's target is not ignore_index
  Tensor safe_target;  // [N]: the target, 0 where ignored
  Tensor weight;       // [N] in double: the class weight, 0 where ignored
};

NllRows nll_rows_cuda(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                      int64_t ignore_index) {
  const Tensor host_target = plain(target).cpu().contiguous();
  for (int64_t i = 0; i < host_target.numel(); ++i) {
    class_of(host_target.data_ptr<int64_t>(), i, self.size(-1), ignore_index);
  }
  const Tensor t = plain(target).reshape({-1});
  const Tensor keep = t != ignore_index;
  const Tensor safe = where(keep, t, zeros_like(t));
  Tensor w = weight ? index_select(plain(*weight), 0, safe).to(kDouble) : ones_like(t, kDouble);
  return NllRows{keep, safe, where(keep, w, zeros_like(w))};
}

void nll_loss_forward_cuda(const Stack& a, std::vector<Tensor>& out) {
  const Tensor self = plain(a[0].to_tensor());
  const int64_t reduction = a[3].to_int();
  const NllRows r = nll_rows_cuda(self, a[1].to_tensor(), a[2].to_optional_tensor(), a[4].to_int());
  const Tensor rows = self.dim() == 1 ? self.unsqueeze(0) : self;
  const Tensor losses = -(r.weight * gather(rows, 1, r.safe_target.unsqueeze(1)).squeeze(1).to(kDouble));
  if (reduction == kNone && self.dim() == 2) {
    out[0].copy_(losses);
    out[1].fill_(0);
    return;
  }
  const Tensor weights = sum(r.weight);
  out[0].copy_(reduction == kMean ? sum(losses) / weights : sum(losses));
  out[1].copy_(weights);
}

void nll_loss_backward_cuda(const Stack& a, std::vector<Tensor>& out) {
  check_nll_backward_args(a);
  const Tensor grad = plain(a[0].to_tensor()).to(kDouble);
  const Tensor& self = a[1].to_tensor();
  const int64_t reduction = a[4].to_int();
  const NllRows r = nll_rows_cuda(self, a[2].to_tensor(), a[3].to_optional_tensor(), a[5].to_int());
  const bool per_row = reduction == kNone && self.dim() == 2;
  Tensor scale = per_row ? grad.reshape({-1}) : grad.reshape({});
  if (reduction == kMean) scale = scale / plain(a[6].to_tensor()).to(kDouble).reshape({});
  // Ignored rows get 0, also where the scale is 1/0 (every row ignored, mean).
  const Tensor values = where(r.keep, -(r.weight * scale), zeros_like(r.weight));  // [N]
  Tensor grad_rows = zeros(self.dim() == 1 ? std::vector<int64_t>{1, self.size(0)} : self.sizes().vec(),
                           TensorOptions(kDouble).device(self.device()));
  grad_rows = scatter(grad_rows, 1, r.safe_target.unsqueeze(1), values.unsqueeze(1));
  out[0].copy_(grad_rows.reshape(self.sizes()));
}

/// ATen's nll_loss_nd: 1-D and 2-D inputs go to nll_loss; (N, C, d1, …) inputs are laid
/// out as (N·d1·…, C) rows (ATen goes through nll_loss2d; the values are the same).
Stack nll_loss_nd_decomposition(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const Tensor& target = a[1].to_tensor();
  EMBER_CHECK_KIND(ErrorKind::ValueError, self.dim() >= 1)
      << "Expected 1 or more dimensions (got " << self.dim() << ")";
  // Over the symbols: a traced batch stays symbolic (the comparison guards it).
  EMBER_CHECK_KIND(ErrorKind::ValueError,
                   self.dim() == 1 || (target.dim() >= 1 && sym_size(self, 0) == sym_size(target, 0)))
      << "Expected input batch_size (" << self.size(0) << ") to match target batch_size ("
      << (target.dim() >= 1 ? target.size(0) : 0) << ").";
  if (self.dim() <= 2) return call_op("aten::nll_loss", {a[0], a[1], a[2], a[3], a[4]});
  const int64_t reduction = checked_reduction(a[3]);
  // The sizes as SymInts: the comparison with the target's guards a symbolic size, the
  // reshapes keep it (reading them as integers specialized every size).
  std::vector<SymInt> out_sizes = sym_sizes(self);
  out_sizes.erase(out_sizes.begin() + 1);  // (N, d1, ...)
  SymInt rows_count = 1;
  for (const SymInt& s : out_sizes) rows_count = rows_count * s;
  if (sym_sizes(target) != out_sizes) {
    if (self.dim() == 4) {
      EMBER_FAIL() << "size mismatch (got input: " << self.sizes() << " , target: " << target.sizes();
    }
    std::vector<int64_t> expected = self.sizes().vec();
    expected.erase(expected.begin() + 1);
    EMBER_FAIL() << "Expected target size " << IntArrayRef(expected) << ", got " << target.sizes();
  }
  std::vector<int64_t> perm{0};
  for (int64_t d = 2; d < self.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  const Tensor rows = reshape(permute(self, perm), {rows_count, sym_size(self, 1)});
  const Tensor flat_target = reshape(target, {rows_count});
  const Tensor loss =
      std::get<0>(nll_loss_forward(rows, flat_target, a[2].to_optional_tensor(), reduction, a[4].to_int()));
  return {reduction == kNone ? reshape(loss, SymIntArrayRef(out_sizes)) : loss};
}

// --- cross entropy ---------------------------------------------------------------------------

/// weight viewed as (1, C, 1, …) against an input of `ndim` dims with classes at `class_dim`.
Tensor class_weight_view(const Tensor& weight, int64_t ndim, int64_t class_dim) {
  std::vector<SymInt> shape(static_cast<size_t>(ndim), SymInt(1));
  shape[static_cast<size_t>(class_dim)] = sym_size(weight, 0);
  return view(weight, SymIntArrayRef(shape));
}

/// t * factor + label_smoothing / n_classes (add) or t * (label_smoothing / n_classes)
/// (scale): the quotient a double, or for a symbolic class count a 0-dim tensor of t's
/// dtype holding the double quotient rounded once, as the double Scalar converts.
Tensor smoothed(const Tensor& t, double label_smoothing, const SymInt& n_classes, bool add, double factor = 1) {
  if (n_classes.is_symbolic()) {
    const Tensor q = cast(label_smoothing / size_tensor(n_classes, t.device(), kDouble), t.dtype());
    return add ? t * factor + q : t * q;
  }
  const double q = label_smoothing / static_cast<double>(n_classes.hint());
  return add ? t * factor + q : t * q;
}

Tensor cross_entropy_prob_target(const Tensor& self, const Tensor& target_, const std::optional<Tensor>& weight,
                                 int64_t reduction, double label_smoothing) {
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  // The class count as a SymInt: compared and divided by, never read as an integer.
  const SymInt n_classes = sym_size(self, class_dim);
  EMBER_CHECK(!weight || (weight->dim() == 1 && sym_size(*weight, 0) == n_classes))
      << "cross_entropy: weight tensor should be defined either for all " << n_classes
      << " classes or no classes but got weight tensor of shape: " << weight->sizes();
  const Tensor input = log_softmax(self, class_dim, self.dtype());
  const Tensor target =
      label_smoothing > 0 ? smoothed(target_, label_smoothing, n_classes, /*add=*/true, 1 - label_smoothing) : target_;
  Tensor prod = input * target;
  if (weight) prod = prod * (input.dim() > 1 ? class_weight_view(*weight, input.dim(), 1) : *weight);
  switch (reduction) {
    case kMean:
      // An empty batch has no mean: NaN, still differentiable (ATen fills the sum in place).
      // Both read the element count as a SymInt: a symbolic batch stays symbolic (the mean
      // over the rows of the per-row sums is ATen's sum over numel / n_classes).
      if (core::sym_numel(input) == core::SymInt(0)) return sum(prod) * NAN;
      if (!core::is_symbolic(input)) return -sum(prod) / static_cast<double>(input.numel() / n_classes.hint());
      return -mean(sum(prod, {class_dim}));
    case kSum:
      return -sum(prod);
    default:
      return -sum(prod, {class_dim});
  }
}

Tensor cross_entropy_label_smoothing(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                     int64_t reduction, int64_t ignore_index, double label_smoothing) {
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  const Tensor input = log_softmax(self, class_dim, self.dtype());
  const Tensor nll = call_op_tensor("aten::nll_loss_nd", {input, target, weight, reduction, ignore_index});
  const SymInt n_classes = sym_size(input, class_dim);
  const Tensor ignored = target == ignore_index;
  Tensor smooth =
      weight ? -sum(input * class_weight_view(*weight, input.dim(), class_dim), {class_dim}) : -sum(input, {class_dim});
  smooth = masked_fill(smooth, ignored, 0.0);
  Tensor ret = smooth;
  if (reduction == kMean) {
    if (weight) {
      // The weights of the rows not ignored (ATen gathers them by masked_select; a
      // masked gather keeps the shapes static).
      const Tensor safe_target = masked_fill(target, ignored, 0);
      ret = sum(smooth) / sum(masked_fill(index(*weight, {safe_target}), ignored, 0.0));
    } else {
      ret = sum(smooth) / sum(logical_not(ignored));
    }
  } else if (reduction == kSum) {
    ret = sum(smooth);
  }
  return (1 - label_smoothing) * nll + smoothed(ret, label_smoothing, n_classes, /*add=*/false);
}

Stack cross_entropy_loss_decomposition(const Stack& a) {
  const Tensor& self = a[0].to_tensor();
  const Tensor& target = a[1].to_tensor();
  const std::optional<Tensor> weight = a[2].to_optional_tensor();
  const int64_t reduction = checked_reduction(a[3]);
  const int64_t ignore_index = a[4].to_int();
  const double label_smoothing = a[5].to_double();
  if (same_sizes(self, target)) {
    // Same shapes: the target holds class probabilities.
    EMBER_CHECK(is_floating_point(target.dtype()))
        << "Expected floating point type for target with class probabilities, got " << scalar_type_name(target.dtype());
    EMBER_CHECK(ignore_index < 0) << "ignore_index is not supported for floating point target";
    return {cross_entropy_prob_target(self, target, weight, reduction, label_smoothing)};
  }
  if (label_smoothing > 0) {
    EMBER_CHECK(label_smoothing <= 1.0) << "label_smoothing must be between 0.0 and 1.0. Got: " << label_smoothing;
    return {cross_entropy_label_smoothing(self, target, weight, reduction, ignore_index, label_smoothing)};
  }
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  return call_op("aten::nll_loss_nd",
                 {log_softmax(self, class_dim, self.dtype()), target, weight, reduction, ignore_index});
}

}  // namespace

void register_loss_ops(Registry& r) {
  // `int reduction=1` is ATen's `int reduction=Mean` as PyTorch prints it (None=0, Mean=1, Sum=2).
  r.def("mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor").set_decomposition(mse_loss_decomposition);
  r.def("l1_loss(Tensor self, Tensor target, int reduction=1) -> Tensor").set_decomposition(l1_loss_decomposition);
  r.def("smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.) -> Tensor")
      .set_decomposition(smooth_l1_loss_decomposition);
  r.def("binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor")
      .set_decomposition(binary_cross_entropy_decomposition);
  r.def(
       "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, "
       "Tensor? pos_weight=None, int reduction=1) -> Tensor")
      .set_decomposition(binary_cross_entropy_with_logits_decomposition);

  r.def(
       "nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, int ignore_index) -> "
       "(Tensor output, Tensor total_weight)")
      .set_meta(nll_loss_forward_meta)
      .set_cpu(nll_loss_forward_kernel)
      .set_cuda(nll_loss_forward_cuda);
  r.def(
       "nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, "
       "int ignore_index, Tensor total_weight) -> Tensor")
      .set_meta([](const Stack& a) {
        check_nll_backward_args(a);
        const Tensor& self = a[1].to_tensor();
        return metas(core::over_geometry({&self}, [&]<typename Int>() {
          const auto sizes = core::Geometry<Int>::sizes(self);
          return core::contiguous_meta_over(std::vector<Int>(sizes.begin(), sizes.end()), self.dtype(), self.device());
        }));
      })
      .set_cpu(nll_loss_backward_kernel)
      .set_cuda(nll_loss_backward_cuda);
  r.def("nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, int ignore_index=-100) -> Tensor")
      .set_decomposition([](const Stack& a) -> Stack {
        return {call_op("aten::nll_loss_forward", {a[0], a[1], a[2], a[3], a[4]})[0]};
      });
  r.def(
       "nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, int ignore_index=-100) -> "
       "Tensor")
      .set_decomposition(nll_loss_nd_decomposition);
  r.def(
       "cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, "
       "int ignore_index=-100, float label_smoothing=0.) -> Tensor")
      .set_decomposition(cross_entropy_loss_decomposition);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {
using ops::call_at;
using ops::call_tensor;

namespace {
/// torch.nn.functional's reduction string as ATen's enum.
int64_t reduction_enum(const std::string& reduction) {
  if (reduction == "none") return ops::kNone;
  if (reduction == "mean") return ops::kMean;
  EMBER_CHECK_KIND(ErrorKind::ValueError, reduction == "sum") << reduction << " is not a valid value for reduction";
  return ops::kSum;
}
}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction, Loc loc) {
  return call_tensor(EMBER_OP("aten::mse_loss"), {input, target, reduction_enum(reduction)}, loc);
}
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction, Loc loc) {
  return call_tensor(EMBER_OP("aten::l1_loss"), {input, target, reduction_enum(reduction)}, loc);
}
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction, double beta, Loc loc) {
  return call_tensor(EMBER_OP("aten::smooth_l1_loss"), {input, target, reduction_enum(reduction), beta}, loc);
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                            const std::string& reduction, Loc loc) {
  return call_tensor(EMBER_OP("aten::binary_cross_entropy"), {input, target, weight, reduction_enum(reduction)}, loc);
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                                        const std::string& reduction, const std::optional<Tensor>& pos_weight,
                                        Loc loc) {
  return call_tensor(EMBER_OP("aten::binary_cross_entropy_with_logits"),
                     {input, target, weight, pos_weight, reduction_enum(reduction)}, loc);
}
Tensor nll_loss(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight, int64_t ignore_index,
                const std::string& reduction, Loc loc) {
  return call_tensor(EMBER_OP("aten::nll_loss_nd"), {input, target, weight, reduction_enum(reduction), ignore_index},
                     loc);
}
Tensor cross_entropy(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                     int64_t ignore_index, const std::string& reduction, double label_smoothing, Loc loc) {
  return call_tensor(EMBER_OP("aten::cross_entropy_loss"),
                     {input, target, weight, reduction_enum(reduction), ignore_index, label_smoothing}, loc);
}
std::tuple<Tensor, Tensor> nll_loss_forward(const Tensor& self, const Tensor& target,
                                            const std::optional<Tensor>& weight, int64_t reduction,
                                            int64_t ignore_index, Loc loc) {
  return ops::tuple2(call_at(EMBER_OP("aten::nll_loss_forward"), {self, target, weight, reduction, ignore_index}, loc));
}
Tensor nll_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                         const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index,
                         const Tensor& total_weight, Loc loc) {
  return call_tensor(EMBER_OP("aten::nll_loss_backward"),
                     {grad_output, self, target, weight, reduction, ignore_index, total_weight}, loc);
}

}  // namespace ember
