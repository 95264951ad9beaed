// kernels/cpu/attention.h — fused scaled dot-product attention (flash attention) on the
// CPU: blocks of queries against blocks of keys with an online softmax, so the [L, S]
// score matrix never exists in memory. Note [flash attention] in attention.cpp.
#pragma once

#include "ember/tensor.h"

namespace ember::kernels::cpu {

/// out[b, h] = softmax(scale * q[b, h] @ k[b, h]^T + mask[b, h]) @ v[b, h] and
/// lse[b, h, i] = log(sum_j exp(scores[i, j])) (the softmax's normalizer; -inf for a row
/// whose every score is -inf, whose output is then nan). q [B, H, L, E], k [B, H, S, E],
/// v [B, H, S, Ev] of one floating dtype (float or double) with unit stride in their last
/// dim; mask, when given, an additive float mask of q's dtype with sizes [B, H, L, S]
/// (broadcast dims of stride 0 allowed); causal keeps only keys j <= i (top-left aligned,
/// as PyTorch's is_causal) and skips the blocks above the diagonal. k and v may have
/// Hkv heads, Hkv dividing H: query head h then reads key/value head h / (H / Hkv)
/// (Note [grouped-query attention]). out [B, H, L, Ev] and lse [B, H, L] may have any
/// strides with unit stride in out's last dim.
void flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, bool causal, double scale,
                     Tensor& out, Tensor& lse);

/// The gradients of flash_attention's `out` with respect to q, k and v, given the
/// upstream gradient `grad_out` [B, H, L, Ev] and the forward's `out` and `lse`:
/// the probabilities are recomputed block by block from q, k, the mask and lse (Note
/// [flash attention backward]). Arguments as flash_attention's (grad_out and out with
/// unit stride in their last dim, k and v of Hkv heads as there); grad_q [B, H, L, E],
/// grad_k [B, Hkv, S, E] and grad_v [B, Hkv, S, Ev] may have any strides and are
/// overwritten, a key/value head's gradients summed over the query heads that read it. A
/// row whose lse is -inf (every score masked) contributes nothing.
void flash_attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, const Tensor* mask, bool causal, double scale,
                              Tensor& grad_q, Tensor& grad_k, Tensor& grad_v);

/// The query and key block sizes flash_attention uses (Note [flash attention]).
struct FlashBlocks {
  int64_t q = 128, kv = 128;
};
/// The blocks in use; set_flash_blocks changes them (for measurements and tests).
FlashBlocks flash_blocks();
void set_flash_blocks(FlashBlocks b);

}  // namespace ember::kernels::cpu
