// ops/attention.cpp — scaled dot-product attention: `scaled_dot_product_attention` (a
// composite: the fused flash kernel where it applies, else PyTorch's math form), the
// fused CPU op `_scaled_dot_product_flash_attention_for_cpu` and its backward
// `_scaled_dot_product_flash_attention_for_cpu_backward` over kernels/cpu/attention
// (Note [flash attention], Note [flash attention backward]; the derivative row is in
// derivatives_nn.cpp).
#include <cmath>
#include <limits>

#include "core/shape.h"
#include "core/sym_geometry.h"
#include "ember/ops/creation.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/random.h"
#include "ember/ops/shape.h"
#include "ember/ops/view.h"
#include "ember/sym_int.h"
#include "kernels/cpu/attention.h"
#include "ops/api.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The softmax scale: `scale` when given, else 1 / sqrt(E) of the query's last dim E.
double attention_scale(const Tensor& q, const std::optional<double>& scale) {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
}

/// Checks of the fused op's arguments that PyTorch's CPU kernel makes: 4-D query, key and
/// value of one floating dtype, matching batch and heads, key and value of one length,
/// query and key of one head size; no dropout; a mask of the query's dtype.
void check_flash_args(const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p,
                      const std::optional<Tensor>& mask) {
  EMBER_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4)
      << "scaled_dot_product_flash_attention_cpu: expected query, key and value to be 4-D [B, H, L, E], got "
      << q.sizes() << ", " << k.sizes() << " and " << v.sizes();
  EMBER_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype())
      << "scaled_dot_product_flash_attention_cpu: expected query, key and value of one dtype, got "
      << scalar_type_name(q.dtype()) << ", " << scalar_type_name(k.dtype()) << " and " << scalar_type_name(v.dtype());
  if (q.dtype() != kFloat && q.dtype() != kDouble) not_implemented("flash_attention", q.dtype());
  EMBER_CHECK(dropout_p == 0.0) << "scaled_dot_product_flash_attention_cpu: dropout is not supported, got dropout_p = "
                                << dropout_p;
  EMBER_CHECK(core::sym_size(q, 0) == core::sym_size(k, 0) && core::sym_size(q, 0) == core::sym_size(v, 0) &&
              core::sym_size(k, 1) == core::sym_size(v, 1) && core::sym_size(k, 2) == core::sym_size(v, 2) &&
              core::sym_size(q, 3) == core::sym_size(k, 3))
      << "scaled_dot_product_flash_attention_cpu: expected query [B, H, L, E], key [B, Hkv, S, E] and value "
         "[B, Hkv, S, Ev], got "
      << q.sizes() << ", " << k.sizes() << " and " << v.sizes();
  EMBER_CHECK(core::sym_size(q, 1) == core::sym_size(k, 1) ||
              (sym_size(k, 1) > SymInt(0) && sym_size(q, 1) % sym_size(k, 1) == SymInt(0)))
      << "scaled_dot_product_flash_attention_cpu: expected the key/value head count to divide the query's "
         "(grouped-query attention), got "
      << k.size(1) << " key/value heads for " << q.size(1) << " query heads";
  EMBER_CHECK(!mask || mask->dtype() == q.dtype())
      << "scaled_dot_product_flash_attention_cpu: expected attn_mask of the query's dtype ("
      << scalar_type_name(q.dtype()) << "), got " << scalar_type_name(mask->dtype());
}

/// The fused op's outputs as PyTorch 2.11's CPU kernel allocates them (Note [flash
/// attention layout]): output [B, H, L, Ev] as empty_like(query) — the query's strides
/// when it is non-overlapping and dense, else dense strides in the query's dim order — and
/// logsumexp [B, H, L] over [B, L, H] memory. Where Ev != E (PyTorch rejects it; Ember's
/// kernel takes it) the output is dense in the query's dim order. Over size symbols the
/// output is dense in the dim order of the query's example strides, for every size, and
/// no size is read as an integer (one compile serves every batch, head count and length).
std::vector<TensorMeta> flash_meta(const Stack& a) {
  const Tensor &q = a[0].to_tensor(), &k = a[1].to_tensor(), &v = a[2].to_tensor();
  const std::optional<Tensor> mask = a[5].to_optional_tensor();
  check_flash_args(q, k, v, a[3].to_double(), mask);
  const bool symbolic = core::is_symbolic(q) || core::is_symbolic(k) || core::is_symbolic(v);
  const bool like_query = !symbolic && v.size(3) == q.size(3) &&
                          core::is_non_overlapping_and_dense(q.sizes(), q.strides());
  std::vector<int64_t> order;
  if (symbolic) {
    std::vector<int64_t> sizes, strides;
    for (const core::SymInt& s : core::sym_sizes(q)) sizes.push_back(s.hint());
    for (const core::SymInt& s : core::sym_strides(q)) strides.push_back(s.hint());
    order = dense_dim_order(sizes, strides);
  } else {
    order = dense_dim_order(q.sizes(), q.strides());
  }
  return core::over_geometry({&q, &k, &v}, [&]<typename Int>() -> std::vector<TensorMeta> {
    using G = core::Geometry<Int>;
    const Int B = G::size(q, 0), H = G::size(q, 1), L = G::size(q, 2), Ev = G::size(v, 3);
    std::vector<Int> out_sizes{B, H, L, Ev}, out_strides(4, Int(1));
    if (like_query) {
      for (int64_t d = 0; d < 4; ++d) out_strides[d] = Int(q.stride(d));
    } else {
      Int next(1);
      for (int64_t d : order) {
        out_strides[d] = next;
        const bool empty = out_sizes[static_cast<size_t>(d)] == Int(0);
        next = next * (empty ? Int(1) : out_sizes[d]);
      }
    }
    std::vector<Int> lse_sizes{B, H, L}, lse_strides{L * H, Int(1), H};
    return {G::meta(std::move(out_sizes), std::move(out_strides), Int(0), q.dtype(), q.device()),
            G::meta(std::move(lse_sizes), std::move(lse_strides), Int(0), q.dtype(), q.device())};
  });
}

/// The geometry PyTorch 2.11's CPU backward gives each gradient: the input's sizes
/// [B, H, N, D] over [B, N, H, D] memory.
template <typename Int>
TensorMeta bnhd_meta(const Tensor& t) {
  using G = core::Geometry<Int>;
  const Int B = G::size(t, 0), H = G::size(t, 1), N = G::size(t, 2), D = G::size(t, 3);
  std::vector<Int> sizes{B, H, N, D}, strides{N * H * D, D, H * D, Int(1)};
  return G::meta(std::move(sizes), std::move(strides), Int(0), t.dtype(), t.device());
}

/// The backward's outputs (grad_query, grad_key, grad_value), after the forward's checks
/// and that grad_out and out are [B, H, L, Ev] and logsumexp [B, H, L] of the query's dtype.
std::vector<TensorMeta> flash_backward_meta(const Stack& a) {
  const Tensor &g = a[0].to_tensor(), &q = a[1].to_tensor(), &k = a[2].to_tensor(), &v = a[3].to_tensor(),
               &o = a[4].to_tensor(), &lse = a[5].to_tensor();
  check_flash_args(q, k, v, a[6].to_double(), a[8].to_optional_tensor());
  using Size = decltype(core::sym_size(q, 0));
  const std::vector<Size> want{core::sym_size(q, 0), core::sym_size(q, 1), core::sym_size(q, 2),
                                 core::sym_size(v, 3)};
  auto sizes_are = [](const Tensor& t, const std::vector<Size>& s) {
    if (t.dim() != static_cast<int64_t>(s.size())) return false;
    for (size_t d = 0; d < s.size(); ++d)
      if (!(core::sym_size(t, static_cast<int64_t>(d)) == s[d])) return false;
    return true;
  };
  EMBER_CHECK(sizes_are(g, want) && sizes_are(o, want) && sizes_are(lse, {want[0], want[1], want[2]}))
      << "_scaled_dot_product_flash_attention_for_cpu_backward: expected grad_out and out [B, H, L, Ev] = "
      << q.size(0) << ", " << q.size(1) << ", " << q.size(2) << ", " << v.size(3) << "] and logsumexp [B, H, L], got "
      << g.sizes() << ", " << o.sizes() << " and " << lse.sizes();
  EMBER_CHECK(g.dtype() == q.dtype() && o.dtype() == q.dtype() && lse.dtype() == q.dtype())
      << "_scaled_dot_product_flash_attention_for_cpu_backward: expected grad_out, out and logsumexp of the query's "
         "dtype ("
      << scalar_type_name(q.dtype()) << "), got " << scalar_type_name(g.dtype()) << ", " << scalar_type_name(o.dtype())
      << " and " << scalar_type_name(lse.dtype());
  return core::over_geometry({&q, &k, &v}, [&]<typename Int>() -> std::vector<TensorMeta> {
    return {bnhd_meta<Int>(q), bnhd_meta<Int>(k), bnhd_meta<Int>(v)};
  });
}

/// `t` with unit stride in its last dim (a copy only when it lacks it).
Tensor unit_last_stride(const Tensor& t) { return t.stride(-1) == 1 || t.size(-1) <= 1 ? t : t.contiguous(); }

void flash_kernel(const Stack& a, std::vector<Tensor>& out) {
  const Tensor q = unit_last_stride(a[0].to_tensor()), k = unit_last_stride(a[1].to_tensor()),
               v = unit_last_stride(a[2].to_tensor());
  const std::optional<Tensor> given = a[5].to_optional_tensor();
  Tensor mask;
  if (given) mask = given->expand({q.size(0), q.size(1), q.size(2), k.size(2)});
  // The kernel writes rows of unit stride; an output laid out like a query without one
  // (only a direct call of the op gives such a query) is written through a contiguous one.
  const bool unit = out[0].stride(3) == 1 || out[0].size(3) <= 1;
  Tensor o = unit ? out[0] : empty(out[0].sizes(), TensorOptions(out[0].dtype()).device(out[0].device()));
  kernels::cpu::flash_attention(q, k, v, given ? &mask : nullptr, a[4].to_bool(),
                                attention_scale(q, a[6].to_optional_double()), o, out[1]);
  if (!unit) out[0].copy_(o);
}

void flash_backward_kernel(const Stack& a, std::vector<Tensor>& out) {
  const Tensor g = unit_last_stride(a[0].to_tensor()), q = unit_last_stride(a[1].to_tensor()),
               k = unit_last_stride(a[2].to_tensor()), v = unit_last_stride(a[3].to_tensor()),
               o = unit_last_stride(a[4].to_tensor());
  const std::optional<Tensor> given = a[8].to_optional_tensor();
  Tensor mask;
  if (given) mask = given->expand({q.size(0), q.size(1), q.size(2), k.size(2)});
  kernels::cpu::flash_attention_backward(g, q, k, v, o, a[5].to_tensor(), given ? &mask : nullptr, a[7].to_bool(),
                                         attention_scale(q, a[9].to_optional_double()), out[0], out[1], out[2]);
}

/// Whether `t` may take part in autograd: it has autograd metadata (requires grad, or a
/// grad_fn). Read from the TensorImpl, as the ops library sits below autograd.
bool may_need_grad(const Tensor& t) { return t.impl()->autograd_meta != nullptr; }

/// Whether scaled_dot_product_attention may run as the fused CPU op: 4-D float or double
/// CPU (or meta) tensors of one dtype and batch, no dropout, one head count for query, key
/// and value — or, under enable_gqa, key and value of one head count dividing the
/// query's (Note [grouped-query attention]) — one head size for
/// query, key and value, unit stride in their last dims, query and key lengths above 0,
/// and a mask (if any) of 2 or 4 dims, of bool or the query's dtype, that needs no
/// gradient (the fused op has none for it) — PyTorch 2.11's CPU flash checks
/// (sdp_utils_cpp.cpp); elsewhere its math form runs, whose output is contiguous (Note
/// [flash attention layout]). Query, key and value may need gradients: the fused op's
/// derivative is its backward op, as in PyTorch's CPU dispatch.
bool flash_applies(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& mask,
                   double dropout_p, bool enable_gqa) {
  if (dropout_p != 0.0 || q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return false;
  for (const Tensor* t : {&q, &k, &v})
    if ((t->device().type != DeviceType::CPU && t->device().type != DeviceType::Meta) || t->dtype() != q.dtype())
      return false;
  if (q.dtype() != kFloat && q.dtype() != kDouble) return false;
  // Sizes compare as SymInts: over size symbols the choice guards a relation the ranges
  // leave open (as PyTorch's sdp checks do) and specializes no size.
  const SymInt B = sym_size(q, 0), E = sym_size(q, 3);
  if (!(sym_size(k, 0) == B) || !(sym_size(v, 0) == B) || !(sym_size(k, 3) == E) || !(sym_size(v, 3) == E))
    return false;
  const bool grouped = enable_gqa && sym_size(k, 1) > SymInt(0) && sym_size(q, 1) % sym_size(k, 1) == SymInt(0);
  if (!(sym_size(k, 1) == sym_size(v, 1)) || !(grouped || sym_size(k, 1) == sym_size(q, 1))) return false;
  for (const Tensor* t : {&q, &k, &v})
    if (!(core::sym_stride(*t, 3) == core::SymInt(1))) return false;
  if (sym_size(q, 2) == SymInt(0) || sym_size(k, 2) == SymInt(0)) return false;
  if (mask && (may_need_grad(*mask) || (mask->dtype() != kBool && mask->dtype() != q.dtype()) ||
               (mask->dim() != 2 && mask->dim() != 4)))
    return false;
  return true;
}

/// PyTorch's math form of attention: softmax(q @ k^T * scale + mask) @ v, a bool mask
/// (or is_causal's lower triangle) filling -inf where false, dropout on the weights.
Tensor attention_math(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& mask,
                      double dropout_p, bool is_causal, double scale) {
  Tensor att = mul(matmul(q, k.transpose(-2, -1)), Scalar(scale));
  if (is_causal) {
    const Tensor keep = tril(ones({sym_size(q, -2), sym_size(k, -2)}, TensorOptions(kBool).device(q.device())));
    att = masked_fill(att, logical_not(keep), Scalar(-kInf));
  }
  if (mask) att = mask->dtype() == kBool ? masked_fill(att, logical_not(*mask), Scalar(-kInf)) : add(att, *mask);
  att = softmax(att, -1);
  if (dropout_p > 0) att = dropout(att, dropout_p, true);
  return matmul(att, v);
}

/// `t` with each slice of dim -3 repeated `times` times in a row (PyTorch's
/// repeat_interleave(times, -3)): [..., H, S, E] -> [..., H * times, S, E], a copy.
Tensor repeat_heads(const Tensor& t, const SymInt& times) {
  std::vector<SymInt> grown, merged;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const SymInt n = sym_size(t, d);
    if (d == t.dim() - 2) grown.push_back(times);
    grown.push_back(n);
    merged.push_back(d == t.dim() - 3 ? n * times : n);
  }
  return reshape(expand(unsqueeze(t, -3), SymIntArrayRef(grown)), SymIntArrayRef(merged));
}

/// Key and value with their heads repeated to the query's under enable_gqa, as PyTorch
/// 2.11's pre_process_group_query_attention_input: unchanged when the head counts (dim
/// -3) are all equal, else each of key and value repeated by the query's head count over
/// its own, which must divide it (the math form's grouped-query attention). Fewer than 3
/// dims is an IndexError, as PyTorch's sym_size(-3) gives.
std::pair<Tensor, Tensor> grouped_key_value(const Tensor& q, const Tensor& k, const Tensor& v) {
  EMBER_CHECK_INDEX(q.dim() >= 3 && k.dim() >= 3 && v.dim() >= 3)
      << "scaled_dot_product_attention: enable_gqa expected query, key and value with a head dim (at least 3 "
         "dims), got "
      << q.sizes() << ", " << k.sizes() << " and " << v.sizes();
  const SymInt hq = sym_size(q, -3), hk = sym_size(k, -3), hv = sym_size(v, -3);
  if (hq == hk && hk == hv) return {k, v};
  EMBER_CHECK(hk > SymInt(0) && hv > SymInt(0) && hq % hk == SymInt(0) && hq % hv == SymInt(0))
      << "scaled_dot_product_attention: Number of heads in key and value must divide the number of heads in query "
         "(enable_gqa), got "
      << q.size(-3) << " query heads, " << k.size(-3) << " key heads and " << v.size(-3) << " value heads";
  return {repeat_heads(k, hq / hk), repeat_heads(v, hq / hv)};
}

}  // namespace

void register_attention_ops(Registry& r) {
  r.def("_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, float dropout_p=0.0, "
        "bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor output, Tensor logsumexp)")
      .set_meta(flash_meta)
      .set_cpu(flash_kernel);
  r.def("_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query, Tensor key, "
        "Tensor value, Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, *, Tensor? attn_mask=None, "
        "float? scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)")
      .set_meta(flash_backward_meta)
      .set_cpu(flash_backward_kernel);
  r.def("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
        "float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor")
      .set_decomposition([](const Stack& a) -> Stack {
        const Tensor &q = a[0].to_tensor(), &k = a[1].to_tensor(), &v = a[2].to_tensor();
        const std::optional<Tensor> mask = a[3].to_optional_tensor();
        const double dropout_p = a[4].to_double();
        const bool is_causal = a[5].to_bool();
        EMBER_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2)
            << "scaled_dot_product_attention: expected query, key and value of at least 2 dims, got " << q.sizes()
            << ", " << k.sizes() << " and " << v.sizes();
        const bool enable_gqa = a[7].to_bool();
        if (flash_applies(q, k, v, mask, dropout_p, enable_gqa)) {
          // The fused op takes an additive mask: a bool one keeps where true (0), -inf elsewhere.
          IValue additive;
          if (mask)
            additive = mask->dtype() == kBool ? where(*mask, Scalar(0.0), scalar_tensor(-kInf, q.dtype(), q.device())) : *mask;
          // The scale as given: without one the kernel takes 1 / sqrt(E) of the query it
          // runs on, so a symbolic head size is not read here.
          Stack outs = call_op("aten::_scaled_dot_product_flash_attention_for_cpu",
                               {q, k, v, 0.0, is_causal, additive, a[6]});
          return {outs[0]};
        }
        // As PyTorch: the fused ops apply a mask and is_causal both, the math form neither. On
        // CUDA, PyTorch's memory-efficient kernel applies both, where it runs: 4-D float,
        // half or bfloat16 inputs with equal batch and head counts, equal query and key head
        // sizes, and head sizes a multiple of 16 bytes' worth of elements. The math form below
        // then applies both as that kernel does.
        const auto mem_efficient_on_cuda = [&] {
          if (!q.is_cuda() || q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return false;
          if (q.dtype() != kFloat && !is_reduced_float(q.dtype())) return false;
          const int64_t align = 16 / static_cast<int64_t>(element_size(q.dtype()));
          for (const Tensor* t : {&k, &v})
            if (t->size(0) != q.size(0) || t->size(1) != q.size(1)) return false;
          return k.size(3) == q.size(3) && q.size(3) % align == 0 && v.size(3) % align == 0;
        };
        const bool cuda_fused = mask && is_causal && mem_efficient_on_cuda();
        EMBER_CHECK(!(is_causal && mask) || cuda_fused)
            << "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True";
        // The math form scales by a number: without a given scale, 1 / sqrt(E) reads the
        // head size (a symbolic one is specialized, as the math form's shape ops do not).
        const double scale = attention_scale(q, a[6].to_optional_double());
        if (!enable_gqa) return {attention_math(q, k, v, mask, dropout_p, is_causal, scale)};
        const auto [kr, vr] = grouped_key_value(q, k, v);
        return {attention_math(q, kr, vr, mask, dropout_p, is_causal, scale)};
      });
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------

namespace ember {
using ops::call_at;
using ops::call_tensor;

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, bool enable_gqa, Loc loc) {
  return call_tensor(EMBER_OP("aten::scaled_dot_product_attention"),
                     {query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa}, loc);
}

std::tuple<Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu(const Tensor& query, const Tensor& key,
                                                                       const Tensor& value, double dropout_p,
                                                                       bool is_causal,
                                                                       const std::optional<Tensor>& attn_mask,
                                                                       std::optional<double> scale, Loc loc) {
  Stack outs = call_at(EMBER_OP("aten::_scaled_dot_product_flash_attention_for_cpu"),
                       {query, key, value, dropout_p, is_causal, attn_mask, scale}, loc);
  return {outs[0].to_tensor(), outs[1].to_tensor()};
}

std::tuple<Tensor, Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu_backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& out,
    const Tensor& logsumexp, double dropout_p, bool is_causal, const std::optional<Tensor>& attn_mask,
    std::optional<double> scale, Loc loc) {
  Stack outs = call_at(EMBER_OP("aten::_scaled_dot_product_flash_attention_for_cpu_backward"),
                       {grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask, scale}, loc);
  return {outs[0].to_tensor(), outs[1].to_tensor(), outs[2].to_tensor()};
}

}  // namespace ember
