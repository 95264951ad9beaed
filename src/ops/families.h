// ops/families.h — every op family registers its ops here, in this order. Adding an op
// to a family touches only that family's file; adding a family adds one line below and
// one in families.cpp.
#pragma once

namespace ember::ops {
class Registry;

void register_resize_ops(Registry& r);      // resize.cpp: resize_
void register_copy_ops(Registry& r);        // copy.cpp: copy_, _to_copy, clone, fill_, fill, copy
void register_factory_ops(Registry& r);     // factory.cpp: empty, zeros, full, arange, …
void register_view_ops(Registry& r);        // view.cpp: view, permute, expand, slice, …
void register_pointwise_ops(Registry& r);   // pointwise.cpp: scalar_ops.def + where, clamp, …
void register_reduction_ops(Registry& r);   // reduction.cpp: sum, mean, amax, var, cumsum, …
void register_linalg_ops(Registry& r);      // linalg.cpp: mm, bmm, addmm, matmul, linear
void register_nn_ops(Registry& r);          // nn.cpp: softmax, layer/batch norm, embedding, pad
void register_conv_ops(Registry& r);        // conv.cpp: convolution, pooling
void register_shape_ops(Registry& r);       // shape.cpp: cat, stack, split, repeat, flip, tril
void register_indexing_ops(Registry& r);    // indexing.cpp: gather, scatter, index, sort, topk
void register_random_ops(Registry& r);      // random.cpp: rand, randn, bernoulli, native_dropout
void register_nn_backward_ops(Registry& r); // nn_backward.cpp: convolution_backward, pooling/batch norm backward
void register_loss_ops(Registry& r);        // loss.cpp: mse, l1, smooth_l1, binary cross entropy, nll, cross entropy
void register_pointwise_composite_ops(Registry& r); // pointwise_composite.cpp: elu, leaky_relu, hardtanh, pow.Scalar, atan2.out
void register_norm_ops(Registry& r);        // norm.cpp: _native_batch_norm_legit*, group norm, layer norm backward
void register_padding_ops(Registry& r);     // padding.cpp: reflection_pad1d/2d/3d, replication_pad2d/3d
void register_upsample_ops(Registry& r);    // upsample.cpp: upsample_nearest2d.vec, upsample_bilinear2d.vec
void register_distance_ops(Registry& r);    // distance.cpp: _cdist_forward, _pdist_forward
void register_fold_ops(Registry& r);        // fold.cpp: im2col, col2im
void register_pool3d_ops(Registry& r);      // pool3d.cpp: avg_pool3d, max_pool3d_with_indices (+ backward)
void register_grid_sample_ops(Registry& r); // grid_sample.cpp: grid_sampler_2d
void register_embedding_bag_ops(Registry& r); // embedding_bag.cpp: _embedding_bag
void register_attention_ops(Registry& r);   // attention.cpp: scaled_dot_product_attention, the fused CPU flash op
void register_fft_ops(Registry& r);         // fft.cpp: view_as_real/complex, real, imag, _fft_r2c/c2r/c2c
// Complex arithmetic: the ops above wrapped to take complex tensors, and the conjugates.
void register_complex_arith_ops(Registry& r);  // complex_arith.cpp: add, mul, div, exp, sum, where, conj, …
// Meta functions of the ops above wrapped to keep a symbolic batch dim (a table of ops).
void register_symbolic_batch(Registry& r);  // batch_meta.cpp
// Convolution and 2-D pooling (and their backward) wrapped once more to keep every dim
// symbolic (applied after the batch wrappers, which serve what its rules do not cover).
void register_symbolic_geometry(Registry& r);  // spatial_meta.cpp
// Derivative formulas, attached to the ops above (one row per op; see Note [autograd]).
void register_derivatives(Registry& r);     // derivatives.cpp: pointwise, copy, view ops
void register_nn_derivatives(Registry& r);  // derivatives_nn.cpp: reductions, linalg, nn

}  // namespace ember::ops
