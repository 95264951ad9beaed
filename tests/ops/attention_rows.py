"""The conformance rows of the attention family (src/ops/attention.cpp), imported by
gen_cases.py: scaled_dot_product_attention, the fused CPU op
_scaled_dot_product_flash_attention_for_cpu and its backward, which PyTorch 1.13 lacks:
generated with PyTorch 2.x (see TORCH2_SEED in gen_cases.py). The fused op's ok samples
also record PyTorch's gradients (it has a derivative row); its mask never requires grad
(PyTorch raises for that)."""
import torch

from opinfo import OpInfo, S, T

f32, f64 = torch.float32, torch.float64


def bool_mask(g, shape):
    """A bool mask that keeps each query's first key, so that no row is masked whole."""
    m = torch.rand(shape, generator=g.g) > 0.4
    m[..., 0] = True
    return T(m)


def qkv(g, b, h, lq, s, e, dtype=f32, k_lay="contiguous", hkv=None):
    """Query [b, h, lq, e], key and value [b, hkv, s, e] (hkv = h unless grouped heads)."""
    hkv = h if hkv is None else hkv
    return g.t((b, h, lq, e), dtype), g.t((b, hkv, s, e), dtype, lay=k_lay), g.t((b, hkv, s, e), dtype)


def heads(g, b, h, n, e, dtype=f32):
    """A [B, H, N, E] argument over [B, N, H, E] memory: a transformer's heads split from
    its features, as x.view(B, N, H, E).transpose(1, 2) gives them."""
    return T(g.values((b, n, h, e), dtype), [["transpose", 1, 2]])


def flash(g):
    return [S(*qkv(g, 2, 3, 5, 6, 4), desc="plain"),
            S(*qkv(g, 2, 3, 7, 7, 4), 0.0, True, desc="causal"),
            S(*qkv(g, 1, 2, 5, 9, 4), 0.0, True, desc="causal, fewer queries than keys"),
            S(*qkv(g, 1, 2, 150, 150, 8), 0.0, True, desc="causal, several blocks"),
            S(*qkv(g, 1, 2, 70, 140, 8), desc="several blocks, ragged"),
            S(*qkv(g, 2, 3, 5, 6, 4), attn_mask=g.t((5, 6)), desc="additive mask, broadcast"),
            S(*qkv(g, 2, 3, 5, 6, 4), attn_mask=g.t((2, 1, 5, 6)), desc="additive mask per batch"),
            S(*qkv(g, 2, 3, 5, 6, 4), scale=0.3, desc="scale"),
            S(*qkv(g, 2, 3, 5, 6, 4, f64), 0.0, True, desc="f64 causal"),
            # No key with a non-unit stride in its last dim: PyTorch 2.11's kernel reads it as
            # if contiguous (wrong values); sdpa's rows have one.
            S(g.t((3, 5, 4)), g.t((3, 6, 4)), g.t((3, 6, 4)), desc="3-D", expect="error"),
            S(*qkv(g, 2, 3, 5, 6, 4), 0.5, desc="dropout", expect="error"),
            S(*qkv(g, 2, 3, 5, 6, 4), attn_mask=bool_mask(g, (5, 6)), desc="bool mask", expect="error"),
            S(g.t((2, 3, 5, 4)), g.t((2, 3, 6, 4), f64), g.t((2, 3, 6, 4)), desc="mixed dtypes", expect="error"),
            # The output is empty_like(query): laid out like the query (attention.cpp). No
            # query without unit stride in its last dim either (read as if it had one).
            S(heads(g, 2, 3, 5, 4), heads(g, 2, 3, 6, 4), heads(g, 2, 3, 6, 4), 0.0, True,
              desc="heads over [B, L, H, E] memory, causal"),
            S(g.t((2, 3, 5, 4), lay="expand"), g.t((2, 3, 6, 4)), g.t((2, 3, 6, 4)), desc="query expanded"),
            # Grouped heads (enable_gqa's fused form): query head h reads key/value head h / 3.
            S(*qkv(g, 2, 6, 5, 7, 4, hkv=2), desc="grouped heads"),
            S(*qkv(g, 1, 4, 150, 150, 8, hkv=1), 0.0, True, desc="one key/value head, causal, several blocks"),
            S(*qkv(g, 2, 6, 5, 7, 4, hkv=3), attn_mask=g.t((2, 6, 5, 7)), desc="grouped heads, mask per head"),
            S(heads(g, 2, 6, 5, 4), heads(g, 2, 2, 7, 4), heads(g, 2, 2, 7, 4), 0.0, True,
              desc="grouped heads over [B, L, H, E] memory, causal")]


def flash_backward(g):
    """Samples of the backward: grad_out, q, k, v and the (out, logsumexp) PyTorch's forward
    gives for them, as autograd passes them."""
    def case(b, h, lq, s, e, causal=False, mask=None, scale=None, dtype=f32, hkv=None, desc=""):
        q, k, v = qkv(g, b, h, lq, s, e, dtype, hkv=hkv)
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q.value(), k.value(), v.value(), 0.0, causal, attn_mask=None if mask is None else mask.value(),
            scale=scale)
        go = g.t(tuple(out.shape), dtype)
        return S(go, q, k, v, T(out), T(lse), 0.0, causal, attn_mask=mask, scale=scale, desc=desc)
    return [case(2, 3, 5, 6, 4, desc="plain"),
            case(2, 3, 7, 7, 4, causal=True, desc="causal"),
            case(1, 2, 5, 9, 4, causal=True, desc="causal, fewer queries than keys"),
            case(1, 2, 150, 150, 8, causal=True, desc="causal, several blocks"),
            case(1, 2, 70, 140, 8, desc="several blocks, ragged"),
            case(2, 3, 5, 6, 4, mask=g.t((5, 6)), desc="additive mask, broadcast"),
            case(2, 3, 5, 6, 4, mask=g.t((2, 1, 5, 6)), desc="additive mask per batch"),
            case(2, 3, 5, 6, 4, scale=0.3, desc="scale"),
            case(2, 3, 5, 6, 4, causal=True, dtype=f64, desc="f64 causal"),
            case(2, 6, 5, 7, 4, hkv=2, desc="grouped heads"),
            case(1, 4, 150, 150, 8, causal=True, hkv=1, desc="one key/value head, causal, several blocks"),
            case(2, 6, 5, 7, 4, mask=g.t((2, 6, 5, 7), f64), hkv=3, dtype=f64, desc="grouped heads, mask per head, f64")]


def sdpa(g):
    return [S(*qkv(g, 2, 3, 5, 6, 4), desc="plain"),
            S(*qkv(g, 2, 3, 7, 7, 4), None, 0.0, True, desc="causal"),
            S(*qkv(g, 1, 2, 150, 150, 8), None, 0.0, True, desc="causal, several blocks"),
            S(*qkv(g, 2, 3, 5, 6, 4), g.t((5, 6)), desc="additive mask"),
            S(*qkv(g, 2, 3, 5, 6, 4), bool_mask(g, (2, 3, 5, 6)), desc="bool mask"),
            S(*qkv(g, 2, 3, 5, 6, 4), scale=0.3, desc="scale"),
            S(*qkv(g, 2, 3, 5, 6, 4, f64), None, 0.0, True, desc="f64 causal"),
            S(*qkv(g, 2, 3, 5, 6, 4, k_lay="transposed"), desc="key transposed"),
            S(g.t((3, 5, 4)), g.t((3, 6, 4)), g.t((3, 6, 4)), None, 0.0, True, desc="3-D causal (math form)"),
            S(g.t((2, 3, 5, 4)), g.t((2, 3, 6, 4)), g.t((2, 3, 6, 7)), desc="value head size differs"),
            S(*qkv(g, 2, 3, 5, 6, 4), g.t((5, 6)), 0.0, True, desc="mask and is_causal (fused form)"),
            S(g.t((3, 5, 4)), g.t((3, 6, 4)), g.t((3, 6, 4)), g.t((5, 6)), 0.0, True,
              desc="mask and is_causal (math form)", expect="error"),
            # The fused op's output is laid out like the query; the math form's is contiguous.
            S(heads(g, 2, 3, 5, 4), heads(g, 2, 3, 6, 4), heads(g, 2, 3, 6, 4), None, 0.0, True,
              desc="heads over [B, L, H, E] memory, causal (fused form)"),
            S(heads(g, 2, 3, 5, 4), heads(g, 2, 3, 6, 4), heads(g, 2, 3, 6, 4), g.t((3, 5, 6)),
              desc="heads, 3-D mask (math form)"),
            S(g.t((2, 3, 5, 4), lay="step"), g.t((2, 3, 6, 4)), g.t((2, 3, 6, 4)),
              desc="query of stride 2 in its last dim (math form)"),
            # enable_gqa: the fused form where key and value share a head count dividing the
            # query's and the batch is one, else the math form over repeated key and value.
            S(*qkv(g, 2, 6, 5, 7, 4, hkv=2), enable_gqa=True, desc="grouped heads (fused form)"),
            S(*qkv(g, 2, 6, 5, 7, 4, f64, hkv=3), None, 0.0, True, enable_gqa=True,
              desc="grouped heads, f64 causal (fused form)"),
            S(*qkv(g, 2, 6, 5, 7, 4, hkv=2), bool_mask(g, (5, 7)), enable_gqa=True,
              desc="grouped heads, bool mask (fused form)"),
            S(*qkv(g, 2, 4, 5, 7, 4, hkv=1), g.t((2, 4, 5, 7)), scale=0.3, enable_gqa=True,
              desc="one key/value head, mask per head, scale (fused form)"),
            S(*qkv(g, 2, 6, 5, 7, 4), enable_gqa=True, desc="enable_gqa with equal heads (fused form)"),
            S(heads(g, 2, 6, 5, 4), heads(g, 2, 2, 7, 4), heads(g, 2, 2, 7, 4), None, 0.0, True, enable_gqa=True,
              desc="grouped heads over [B, L, H, E] memory, causal (fused form)"),
            S(g.t((2, 6, 5, 4)), g.t((2, 2, 7, 4)), g.t((2, 3, 7, 4)), enable_gqa=True,
              desc="grouped heads, key and value head counts differ (math form)"),
            S(g.t((6, 5, 4)), g.t((2, 7, 4)), g.t((2, 7, 4)), None, 0.0, True, enable_gqa=True,
              desc="grouped heads, 3-D causal (math form)"),
            S(g.t((2, 6, 5, 4)), g.t((2, 2, 7, 4)), g.t((2, 2, 7, 3)), enable_gqa=True,
              desc="grouped heads, value head size differs (math form)"),
            S(g.t((2, 6, 5, 4)), g.t((1, 2, 7, 4)), g.t((1, 2, 7, 4)), g.t((5, 7)), enable_gqa=True,
              desc="grouped heads, key and value batch broadcast, mask (math form)"),
            S(g.t((2, 5, 5, 4)), g.t((2, 2, 7, 4)), g.t((2, 2, 7, 4)), enable_gqa=True,
              desc="grouped heads not dividing the query's", expect="error"),
            S(g.t((2, 2, 5, 4)), g.t((2, 6, 7, 4)), g.t((2, 6, 7, 4)), enable_gqa=True,
              desc="more key/value heads than query heads", expect="error"),
            S(g.t((2, 6, 5, 4)), g.t((2, 2, 7, 4)), g.t((2, 2, 7, 4)),
              desc="fewer key/value heads without enable_gqa", expect="error"),
            S(g.t((5, 4)), g.t((7, 4)), g.t((7, 4)), enable_gqa=True, desc="2-D with enable_gqa", expect="error")]


def attention_rows():
    A = "attention"
    return [OpInfo("aten::_scaled_dot_product_flash_attention_for_cpu", A, flash, strides=True,
                   no_grad_args=("attn_mask",)),
            OpInfo("aten::scaled_dot_product_attention", A, sdpa, strides=True),
            OpInfo("aten::_scaled_dot_product_flash_attention_for_cpu_backward", A, flash_backward, strides=True)]
