// ops/nn.cpp — softmax/log_softmax, layer and batch norm, embedding and constant padding
// (torch.nn.functional's ops under their ATen names). The fused kernels live in
// kernels/cpu/softmax and kernels/cpu/norm (CUDA: kernels/cuda/reduce and kernels/cuda/norm);
// convolution and pooling are in conv.cpp.
#include <cstring>
#include <sstream>

#include "core/shape.h"
#include "core/sym_geometry.h"
#include "ember/ops/creation.h"
#include "ember/ops/nn.h"
#include "kernels/cpu/copy.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/softmax.h"
#include "kernels/cuda/norm.h"
#include "kernels/cuda/host_checks.h"
#include "kernels/cuda/indexing.h"
#include "kernels/cuda/loops.h"
#include "kernels/cuda/reduce.h"
#include "ops/api.h"
#include "ops/dispatch.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : call_op_tensor("aten::contiguous", {t}); }

// --- softmax ------------------------------------------------------------------------------

struct SoftmaxGeometry {
  int64_t outer = 1, dim = 1, inner = 1;
};

SoftmaxGeometry softmax_geometry(const Tensor& self, int64_t dim) {
  SoftmaxGeometry g;
  if (self.dim() == 0) return g;
  g.dim = self.size(dim);
  for (int64_t i = 0; i < dim; ++i) g.outer *= self.size(i);
  for (int64_t i = dim + 1; i < self.dim(); ++i) g.inner *= self.size(i);
  return g;
}

void def_softmax(Registry& r, bool log) {
  const std::string name = log ? "_log_softmax" : "_softmax";
  r.def(name + "(Tensor self, int dim, bool half_to_float) -> Tensor")
      .set_meta([log](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        const int64_t dim = core::wrap_dim(a[1].to_int(), self.dim());
        EMBER_CHECK(!a[2].to_bool()) << "softmax with half to float conversion is not supported on CPU";
        if (!is_floating_point(self.dtype())) {
          const bool lastdim = self.dim() == 0 || dim == self.dim() - 1;
          not_implemented(lastdim ? (log ? "log_softmax_lastdim_kernel_impl" : "softmax_lastdim_kernel_impl")
                                  : "softmax_kernel_impl",
                          self.dtype());
        }
        return metas(core::over_geometry({&self}, [&]<typename Int>() {
          const auto sizes = core::Geometry<Int>::sizes(self);
          return core::contiguous_meta_over(std::vector<Int>(sizes.begin(), sizes.end()), self.dtype(), self.device());
        }));
      })
      .set_cpu([log](const Stack& a, std::vector<Tensor>& out) {
        const Tensor self = contiguous(a[0].to_tensor());
        const SoftmaxGeometry g = softmax_geometry(self, core::wrap_dim(a[1].to_int(), self.dim()));
        kernels::cpu::softmax(self, out[0], g.outer, g.dim, g.inner, log);
      })
      .set_cuda([log](const Stack& a, std::vector<Tensor>& out) {
        kernels::cuda::softmax(a[0].to_tensor(), a[1].to_int(), out[0], log);
      });
  const std::string qualified = "aten::" + name;
  r.def(name.substr(1) + ".int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
      .set_decomposition([qualified](const Stack& a) -> Stack {
        const Tensor& self = a[0].to_tensor();
        const std::optional<ScalarType> dtype = a[2].to_optional_scalar_type();
        const Tensor converted = dtype ? cast(self, *dtype) : self;
        return call_op(qualified.c_str(), {converted, a[1], false});
      });
}

// --- layer norm -----------------------------------------------------------------------------

std::vector<TensorMeta> layer_norm_meta(const Stack& a) {
  const Tensor& input = a[0].to_tensor();
  // The schema's SymInt[]: a symbolic normalized size is compared, not read as an integer.
  const std::vector<SymInt> shape = a[1].to_sym_int_list();
  const std::optional<Tensor> weight = a[2].to_optional_tensor(), bias = a[3].to_optional_tensor();
  const int64_t nd = static_cast<int64_t>(shape.size());
  const auto shape_text = [&] {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
    return os.str() + "]";
  };
  EMBER_CHECK(nd >= 1) << "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                          "element, but got normalized_shape = "
                       << shape_text();
  // The normalized dims must equal `shape` (over SymInt: a guard, or the same symbol); the
  // leading dims stay symbolic.
  const auto matches_shape = [&](const Tensor& t, int64_t from) {
    for (int64_t i = 0; i < nd; ++i)
      if (sym_size(t, from + i) != shape[static_cast<size_t>(i)]) return false;
    return true;
  };
  EMBER_CHECK(!weight || (weight->dim() == nd && matches_shape(*weight, 0)))
      << "Expected weight to be of same shape as normalized_shape, but got weight of shape " << weight->sizes()
      << " and normalized_shape = " << shape_text();
  EMBER_CHECK(!bias || (bias->dim() == nd && matches_shape(*bias, 0)))
      << "Expected bias to be of same shape as normalized_shape, but got bias of shape " << bias->sizes()
      << " and normalized_shape = " << shape_text();
  const int64_t axis = input.dim() - nd;
  if (axis < 0 || !matches_shape(input, axis)) {
    std::ostringstream expected;
    for (const SymInt& s : shape) expected << ", " << s;
    EMBER_FAIL() << "Given normalized_shape=" << shape_text() << ", expected input with shape [*" << expected.str()
                 << "], but got input of size" << input.sizes();
  }
  if (!is_floating_point(input.dtype())) not_implemented("LayerNormKernelImpl", input.dtype());
  for (const auto& p : {weight, bias}) {
    EMBER_CHECK(!p || p->dtype() == input.dtype()) << "expected scalar type " << scalar_type_name(input.dtype())
                                                   << " but found " << scalar_type_name(p->dtype());
  }
  return core::over_geometry({&input}, [&]<typename Int>() {
    const auto in_sizes = core::Geometry<Int>::sizes(input);
    std::vector<Int> sizes(in_sizes.begin(), in_sizes.end());
    std::vector<Int> stat_shape(sizes.begin(), sizes.begin() + axis);
    stat_shape.resize(static_cast<size_t>(input.dim()), Int(1));
    // mean and rstd come in the input's dtype on both devices (PyTorch 2.11 on an H200:
    // bfloat16 statistics for a bfloat16 input); the CUDA kernel computes them in float.
    const TensorMeta stat = core::contiguous_meta_over(std::move(stat_shape), input.dtype(), input.device());
    return std::vector<TensorMeta>{core::contiguous_meta_over(std::move(sizes), input.dtype(), input.device()), stat,
                                   stat};
  });
}

void layer_norm_kernel(const Stack& a, std::vector<Tensor>& out) {
  const Tensor input = contiguous(a[0].to_tensor());
  const int64_t nd = static_cast<int64_t>(a[1].to_sym_int_list().size());  // the count only: no size is read
  const int64_t axis = input.dim() - nd;
  int64_t M = 1, N = 1;
  for (int64_t i = 0; i < input.dim(); ++i) (i < axis ? M : N) *= input.size(i);
  const Tensor weight = a[2].is_none() ? Tensor() : contiguous(a[2].to_tensor());
  const Tensor bias = a[3].is_none() ? Tensor() : contiguous(a[3].to_tensor());
  const double eps = a[4].to_double();
  if (input.is_cuda()) return kernels::cuda::layer_norm(input, weight, bias, M, N, eps, out[0], out[1], out[2]);
  kernels::cpu::layer_norm(input, weight, bias, M, N, eps, out[0], out[1], out[2]);
}

// --- batch norm -----------------------------------------------------------------------------

/// The dtype batch norm's parameters and saved statistics have (ATen's mixed-type rule:
/// float parameters are allowed beside a half/bfloat16 input).
ScalarType batch_norm_param_type(const Tensor& input, const Stack& a, int from = 1, int to = 4) {
  ScalarType pt = input.dtype();
  bool first = true;
  for (int i = from; i <= to; ++i) {
    if (a[i].is_none()) continue;
    const ScalarType t = a[i].to_tensor().dtype();
    if (first && is_reduced_float(input.dtype()) && t == kFloat) pt = kFloat;
    first = false;
    EMBER_CHECK(t == pt) << "mixed dtype (CPU): expect parameter to have scalar type of " << scalar_type_name(pt);
  }
  return pt;
}

std::vector<TensorMeta> batch_norm_meta(const Stack& a) {
  const Tensor& input = a[0].to_tensor();
  const bool training = a[5].to_bool();
  core::wrap_dim(1, input.dim());  // the channel dim must exist
  if (!is_floating_point(input.dtype())) not_implemented("batch_norm", input.dtype());
  const int64_t C = input.size(1);
  const char* names[] = {"", "weight", "bias", "running_mean", "running_var"};
  for (int i = 1; i <= 4; ++i) {
    if (a[i].is_none()) continue;
    const Tensor& p = a[i].to_tensor();
    EMBER_CHECK(p.numel() == C) << names[i] << " should contain " << C << " elements not " << p.numel();
    EMBER_CHECK(i <= 2 || p.dim() == 1 || p.is_contiguous())
        << names[i] << " must be a 1-D or contiguous tensor, since it is updated in place";
  }
  EMBER_CHECK(training || (!a[3].is_none() && !a[4].is_none()))
      << "running_mean and running_var must be defined in evaluation mode";
  const ScalarType pt = batch_norm_param_type(input, a);
  if (input.is_cuda()) {
    // PyTorch's CUDA kernel saves the statistics in float for half and bfloat16 inputs, and
    // in evaluation too (the running mean and 1/sqrt(running_var + eps)).
    // The output in the input's memory format, as on the CPU.
    const ScalarType st = kernels::cuda::norm_stat_dtype(input.dtype());
    return {layout_meta(input.sizes(), input.dtype(), input.device(), suggests_channels_last(input)),
            contiguous_meta({C}, st, input.device()), contiguous_meta({C}, st, input.device())};
  }
  const int64_t saved = training ? C : 0;
  // The output in the input's memory format, as ATen's CPU kernel allocates it (a
  // channels_last input stays NHWC: Note [channels_last convolution]).
  return {layout_meta(input.sizes(), input.dtype(), input.device(), suggests_channels_last(input)),
          contiguous_meta({saved}, pt, input.device()), contiguous_meta({saved}, pt, input.device())};
}

/// A parameter as a 1-D view of its own memory (running stats are written through it).
Tensor flat_param(const IValue& v) {
  if (v.is_none()) return Tensor();
  const Tensor& t = v.to_tensor();
  if (t.dim() == 1) return t;
  const Tensor c = contiguous(t);
  return kernels::cpu::raw_view(c, {c.numel()}, {1}, c.storage_offset());
}

/// batch_norm_update_stats(input, running_mean, running_var, momentum): the batch's mean
/// and biased variance per channel, in the running stats' dtype (ATen's mixed-type rule).
std::vector<TensorMeta> batch_norm_update_stats_meta(const Stack& a) {
  const Tensor& input = a[0].to_tensor();
  EMBER_CHECK(input.dim() >= 2) << "batch_norm_update_stats: expected an input of at least 2 dims (N, C, ...), got "
                                << input.dim() << " dims";
  if (!is_floating_point(input.dtype())) not_implemented("batch_norm_update_stats", input.dtype());
  EMBER_CHECK(!input.is_cuda()) << "batch_norm_update_stats: runs on the CPU only, got a tensor on " << input.device();
  const int64_t C = input.size(1);
  const char* names[] = {"", "running_mean", "running_var"};
  for (int i = 1; i <= 2; ++i) {
    if (a[i].is_none()) continue;
    const Tensor& p = a[i].to_tensor();
    EMBER_CHECK(p.numel() == C) << names[i] << " should contain " << C << " elements not " << p.numel();
    EMBER_CHECK(p.dim() == 1 || p.is_contiguous())
        << names[i] << " must be a 1-D or contiguous tensor, since it is updated in place";
  }
  const ScalarType pt = batch_norm_param_type(input, a, 1, 2);
  return {contiguous_meta({C}, pt, input.device()), contiguous_meta({C}, pt, input.device())};
}

void batch_norm_update_stats_kernel(const Stack& a, std::vector<Tensor>& out) {
  // A channels_last input is read in place (its mean is batch_norm's NHWC kernel's bit for
  // bit), as a contiguous one is.
  const bool channels_last = suggests_channels_last(a[0].to_tensor());
  const Tensor input = channels_last ? channels_last_dense(a[0].to_tensor()) : contiguous(a[0].to_tensor());
  const int64_t N = input.size(0), C = input.size(1);
  const int64_t S = C == 0 || N == 0 ? 0 : input.numel() / (N * C);
  kernels::cpu::batch_norm_update_stats(input, N, C, S, flat_param(a[1]), flat_param(a[2]), a[3].to_double(), out[0],
                                        out[1], channels_last);
}

void batch_norm_kernel(const Stack& a, std::vector<Tensor>& out) {
  const bool channels_last = !a[0].to_tensor().is_cuda() && suggests_channels_last(a[0].to_tensor());
  const Tensor input = channels_last ? channels_last_dense(a[0].to_tensor()) : contiguous(a[0].to_tensor());
  const int64_t N = input.size(0), C = input.size(1);
  const int64_t S = C == 0 || N == 0 ? 0 : input.numel() / (N * C);
  if (input.is_cuda()) {
    // The CUDA kernels run over NCHW: a channels_last output is computed contiguous and copied.
    return with_contiguous_outputs(out, [&](std::vector<Tensor>& slots) {
      kernels::cuda::batch_norm(input, N, C, S, flat_param(a[1]), flat_param(a[2]), flat_param(a[3]),
                                flat_param(a[4]), a[5].to_bool(), a[6].to_double(), a[7].to_double(), slots[0],
                                slots[1], slots[2]);
    });
  }
  kernels::cpu::batch_norm(input, N, C, S, flat_param(a[1]), flat_param(a[2]), flat_param(a[3]), flat_param(a[4]),
                           a[5].to_bool(), a[6].to_double(), a[7].to_double(), out[0], out[1], out[2], channels_last);
}

// --- embedding --------------------------------------------------------------------------------

std::vector<TensorMeta> embedding_meta(const Stack& a) {
  const Tensor& weight = a[0].to_tensor();
  const Tensor& indices = a[1].to_tensor();
  EMBER_CHECK(weight.dim() == 2) << "'weight' must be 2-D";
  EMBER_CHECK(indices.dtype() == kInt64 || indices.dtype() == kInt32)
      << "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
         "torch."
      << scalar_type_name(indices.dtype()) << "Tensor instead (while checking arguments for embedding)";
  // Over SymInt (Note [dynamic shapes]): the indices' symbolic sizes stay symbolic.
  return core::over_geometry({&weight, &indices}, [&]<typename Int>() {
    using G = core::Geometry<Int>;
    const auto index_sizes = G::sizes(indices);
    std::vector<Int> sizes(index_sizes.begin(), index_sizes.end());
    sizes.push_back(G::size(weight, 1));
    return metas(core::contiguous_meta_over(sizes, weight.dtype(), weight.device()));
  });
}

template <typename I>
void embedding_rows(const Tensor& weight, const Tensor& indices, Tensor& out) {
  const I* idx = indices.data_ptr<I>();
  const int64_t n = indices.numel(), rows = weight.size(0), D = weight.size(1);
  // Every index is checked before any row is read.
  for (int64_t i = 0; i < n; ++i)
    EMBER_CHECK_INDEX(idx[i] >= 0 && idx[i] < rows) << "index out of range in self";
  const int64_t es = static_cast<int64_t>(weight.element_size());
  const char* w = static_cast<const char*>(weight.raw_data_ptr());
  char* o = static_cast<char*>(out.raw_data_ptr());
  const int64_t s0 = weight.stride(0) * es, s1 = weight.stride(1) * es;
  const bool big = n * D > kernels::cpu::kGrainSize;
#pragma omp parallel for if (big)
  for (int64_t i = 0; i < n; ++i) {
    const char* src = w + static_cast<int64_t>(idx[i]) * s0;
    char* dst = o + i * D * es;
    if (s1 == es) {
      std::memcpy(dst, src, static_cast<size_t>(D * es));
    } else {
      for (int64_t j = 0; j < D; ++j) std::memcpy(dst + j * es, src + j * s1, static_cast<size_t>(es));
    }
  }
}

void embedding_kernel(const Stack& a, std::vector<Tensor>& out) {
  const Tensor& weight = a[0].to_tensor();
  const Tensor indices = contiguous(a[1].to_tensor());
  if (indices.dtype() == kInt64) embedding_rows<int64_t>(weight, indices, out[0]);
  else embedding_rows<int32_t>(weight, indices, out[0]);
}

/// On CUDA: advanced indexing of weight's rows (kernels/cuda/indexing.h), the indices'
/// range checked first with one reduction.
void embedding_cuda(const Stack& a, std::vector<Tensor>& out) {
  namespace kc = kernels::cuda;
  const Tensor& weight = a[0].to_tensor();
  const Tensor indices = kc::on_device(a[1].to_tensor(), weight.device());
  const int64_t rows = weight.size(0);
  if (indices.numel() > 0) {
    const auto [lo, hi] = kc::value_range(indices);
    EMBER_CHECK_INDEX(lo >= 0 && hi < rows) << "index out of range in self";
  }
  if (out[0].numel() == 0) return;
  const Tensor adv = kc::index_offsets({indices}, {rows}, {weight.stride(0)}, indices.sizes(), weight.device());
  kc::index_gather(out[0], weight, {}, adv, {1});
}

// --- constant_pad_nd ---------------------------------------------------------------------------

/// constant_pad_nd's output sizes, over SymInt (one code path for plain and symbolic sizes
/// and amounts, Note [dynamic shapes]). A negative size is checked at the example values.
core::SymInts padded_sizes(const Tensor& self, const core::SymInts& pad) {
  const int64_t n = static_cast<int64_t>(pad.size());
  EMBER_CHECK(n % 2 == 0) << "Length of pad must be even but instead it equals " << n;
  EMBER_CHECK(n / 2 <= self.dim())
      << "Length of pad should be no more than twice the number of dimensions of the input. Pad length is " << n
      << " while the input has " << self.dim() << " dimensions.";
  core::SymInts sizes = core::sym_sizes(self);
  for (int64_t i = 0; i < n / 2; ++i) {
    const size_t d = static_cast<size_t>(self.dim() - 1 - i);
    const core::SymInt& lo = pad[static_cast<size_t>(2 * i)];
    const core::SymInt& hi = pad[static_cast<size_t>(2 * i + 1)];
    const int64_t in = sizes[d].hint();
    sizes[d] = sizes[d] + lo + hi;
    EMBER_CHECK(sizes[d].hint() >= 0) << "The input size " << in << ", plus negative padding " << lo.hint() << " and "
                                      << hi.hint() << " resulted in a negative output size, which is invalid. Check "
                                      << "dimension " << d << " of your input.";
  }
  return sizes;
}

/// Where constant_pad_nd's input lands in its output: the part of the input that
/// survives cropping (a view of `self`) and the part of `o` it is copied into; nullopt
/// when nothing survives.
std::optional<std::pair<Tensor, Tensor>> pad_copy_views(const Tensor& self, IntArrayRef pad, const Tensor& o) {
  std::vector<int64_t> lengths = self.sizes().vec();
  int64_t in_offset = self.storage_offset(), out_offset = 0;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t d = self.dim() - 1 - static_cast<int64_t>(i);
    const int64_t lo = pad[2 * i], hi = pad[2 * i + 1];
    lengths[d] = self.size(d) - std::max<int64_t>(0, -lo) - std::max<int64_t>(0, -hi);
    if (lengths[d] <= 0) return std::nullopt;
    in_offset += std::max<int64_t>(0, -lo) * self.stride(d);
    out_offset += std::max<int64_t>(0, lo) * o.stride(d);
  }
  return std::pair{kernels::cpu::raw_view(self, lengths, self.strides().vec(), in_offset),
                   kernels::cpu::raw_view(o, lengths, o.strides().vec(), out_offset)};
}

void constant_pad_kernel(const Stack& a, std::vector<Tensor>& out) {
  const Tensor& self = a[0].to_tensor();
  Tensor& o = out[0];
  if (o.numel() == 0) return;
  const Scalar value = a[2].to_scalar();
  EMBER_DISPATCH_ALL_TYPES(o.dtype(), "constant_pad_nd", [&] {
    const scalar_t v = value.to<scalar_t>();
    scalar_t* p = o.data_ptr<scalar_t>();
    std::fill(p, p + o.numel(), v);
  });
  if (auto views = pad_copy_views(self, a[1].to_int_list(), o)) kernels::cpu::copy_into(views->second, views->first);
}

/// On CUDA: the value broadcast from a 0-dim host tensor by the device copy (which
/// converts it to the output dtype as the CPU's fill does), then the surviving input.
void constant_pad_cuda(const Stack& a, std::vector<Tensor>& out) {
  const Tensor& self = a[0].to_tensor();
  Tensor& o = out[0];
  if (o.numel() == 0) return;
  kernels::cuda::copy_into(o, scalar_tensor(a[2].to_scalar(), o.dtype()));
  if (auto views = pad_copy_views(self, a[1].to_int_list(), o)) kernels::cuda::copy_into(views->second, views->first);
}

}  // namespace

void register_nn_ops(Registry& r) {
  def_softmax(r, false);
  def_softmax(r, true);

  r.def("native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> "
        "(Tensor, Tensor, Tensor)")
      .set_meta(layer_norm_meta)
      .set_cpu(layer_norm_kernel)
      .set_cuda(layer_norm_kernel);
  r.def("layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, "
        "bool cudnn_enable=True) -> Tensor")
      .set_decomposition([](const Stack& a) -> Stack {
        Stack outs = call_op("aten::native_layer_norm", {a[0], a[1], a[2], a[3], a[4]});
        return {outs[0]};
      });

  // The running stats are written in place: the (a!)/(b!) annotations make the
  // dispatcher bump their versions and tell capture that they are mutated.
  r.def("native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!)? running_mean, "
        "Tensor(b!)? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)")
      .set_meta(batch_norm_meta)
      .set_cpu(batch_norm_kernel)
      .set_cuda(batch_norm_kernel);
  // ATen's schema leaves out the (a!)/(b!) its CPU kernel's writes deserve; Ember states
  // them, so that graphs keep the call in place and in order (Node::is_impure).
  r.def("batch_norm_update_stats(Tensor input, Tensor(a!)? running_mean, Tensor(b!)? running_var, float momentum) "
        "-> (Tensor, Tensor)")
      .set_meta(batch_norm_update_stats_meta)
      .set_cpu(batch_norm_update_stats_kernel);
  r.def("batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
        "bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor")
      .set_decomposition([](const Stack& a) -> Stack {
        Stack outs = call_op("aten::native_batch_norm", {a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]});
        return {outs[0]};
      });

  r.def("embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, "
        "bool sparse=False) -> Tensor")
      .set_meta(embedding_meta)
      .set_cpu(embedding_kernel)
      .set_cuda(embedding_cuda);

  r.def("constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& self = a[0].to_tensor();
        return metas(core::contiguous_sym_meta(padded_sizes(self, core::sym_int_list(a[1])), self.dtype(),
                                               self.device()));
      })
      .set_cpu(constant_pad_kernel)
      .set_cuda(constant_pad_cuda);
}

}  // namespace ember::ops

namespace ember {
using ops::call_at;
using ops::call_tensor;

Tensor _softmax(const Tensor& self, int64_t dim, bool half_to_float, Loc loc) {
  return call_tensor(EMBER_OP("aten::_softmax"), {self, dim, half_to_float}, loc);
}
Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, Loc loc) {
  return call_tensor(EMBER_OP("aten::softmax.int"), {self, dim, dtype}, loc);
}
Tensor _log_softmax(const Tensor& self, int64_t dim, bool half_to_float, Loc loc) {
  return call_tensor(EMBER_OP("aten::_log_softmax"), {self, dim, half_to_float}, loc);
}
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, Loc loc) {
  return call_tensor(EMBER_OP("aten::log_softmax.int"), {self, dim, dtype}, loc);
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                                                     const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias, double eps, Loc loc) {
  return ops::tuple3(call_at(EMBER_OP("aten::native_layer_norm"), {input, normalized_shape, weight, bias, eps}, loc));
}
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, Loc loc) {
  return call_tensor(EMBER_OP("aten::layer_norm"), {input, normalized_shape, weight, bias, eps, true}, loc);
}

std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias,
                                                     const std::optional<Tensor>& running_mean,
                                                     const std::optional<Tensor>& running_var, bool training,
                                                     double momentum, double eps, Loc loc) {
  return ops::tuple3(call_at(EMBER_OP("aten::native_batch_norm"),
                             {input, weight, bias, running_mean, running_var, training, momentum, eps}, loc));
}
std::tuple<Tensor, Tensor> batch_norm_update_stats(const Tensor& input, const std::optional<Tensor>& running_mean,
                                                   const std::optional<Tensor>& running_var, double momentum,
                                                   Loc loc) {
  return ops::tuple2(call_at(EMBER_OP("aten::batch_norm_update_stats"), {input, running_mean, running_var, momentum}, loc));
}
Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var, bool training,
                  double momentum, double eps, Loc loc) {
  return call_tensor(EMBER_OP("aten::batch_norm"),
                     {input, weight, bias, running_mean, running_var, training, momentum, eps, true}, loc);
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx, bool scale_grad_by_freq, bool sparse,
                 Loc loc) {
  return call_tensor(EMBER_OP("aten::embedding"), {weight, indices, padding_idx, scale_grad_by_freq, sparse}, loc);
}
Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value, Loc loc) {
  return call_tensor(EMBER_OP("aten::constant_pad_nd"), {self, pad, value}, loc);
}
Tensor constant_pad_nd(const Tensor& self, SymIntArrayRef pad, const Scalar& value, Loc loc) {
  return call_tensor(EMBER_OP("aten::constant_pad_nd"), {self, IValue(pad), value}, loc);
}

}  // namespace ember
