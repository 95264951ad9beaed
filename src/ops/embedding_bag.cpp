// ops/embedding_bag.cpp — _embedding_bag as a composite. Position j of `indices` belongs
// to bag b when offsets[b] ≤ j < offsets[b + 1]: its bag is the count of offsets[1:] ≤ j.
// The rows come from `embedding` (scale_grad_by_freq scales their gradient as ATen's CPU
// backward does, by the count of the index at the same rank in the sorted indices), each weighted by per_sample_weights and by 0 at padding_idx; sum adds
// them per bag with an accumulating index_put, mean divides by the bag's count of
// non-padding positions, max takes each column's largest over the bag's members
// (max.dim), empty bags giving 0. The three further outputs follow the device's ATen
// kernel, as do scale_grad_by_freq's scales (they differ between PyTorch's CPU and CUDA):
//   CPU:  offset2bag, each position's bag (empty on the sum fast path: a float or half
//         weight with unit column stride and no padding_idx); bag_size, the bags' counts
//         of non-padding positions (zeros for sum); max_indices (max: the weight row of
//         each maximum, 0 for an empty bag; mean: bag_size; sum: zeros). A position's
//         gradient scale is 1 / count(sorted[g]) for the g-th distinct index (freq_scale).
//   CUDA: offset2bag for every mode; bag_size with one entry per offset (with
//         include_last_offset the last is one PyTorch leaves unwritten: Ember writes 0),
//         counts for every mode; max_indices only for max, -1 for an empty bag, [0]
//         otherwise. A position's gradient scale is 1 / count of its own index.
// Gradients for weight and per_sample_weights come from the ops. ATen's argument checks
// (CUDA also takes bfloat16 weights); sparse gradients are not supported. See Note [nn].
#include <limits>
#include <optional>
#include <vector>

#include "core/cuda.h"
#include "core/sym_geometry.h"
#include "ember/ops/creation.h"
#include "ember/ops/indexing.h"
#include "ember/ops/nn.h"
#include "ember/ops/pointwise.h"
#include "ember/ops/reduction.h"
#include "ember/ops/shape.h"
#include "kernels/cpu/copy.h"
#include "kernels/cuda/loops.h"
#include "ops/api.h"
#include "ops/families.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

enum Mode : int64_t { kSum = 0, kMean = 1, kMax = 2 };

const char* mode_name(int64_t mode) { return mode == kSum ? "sum" : mode == kMean ? "mean" : "max"; }

void check_args(const Tensor& weight, const Tensor& indices, const Tensor& offsets, int64_t mode,
                const std::optional<Tensor>& psw, bool sparse) {
  EMBER_CHECK(indices.dim() == 1) << "Expected 1-dimensional tensor, but got " << indices.dim()
                                  << "-dimensional tensor for argument #1 'indices' (while checking arguments for "
                                     "embedding_bag)";
  EMBER_CHECK(offsets.dim() == 1) << "Expected 1-dimensional tensor, but got " << offsets.dim()
                                  << "-dimensional tensor for argument #1 'offsets' (while checking arguments for "
                                     "embedding_bag)";
  EMBER_CHECK(weight.dim() == 2) << "Expected 2-dimensional tensor, but got " << weight.dim()
                                 << "-dimensional tensor for argument #1 'weight' (while checking arguments for "
                                    "embedding_bag)";
  for (const Tensor* t : {&indices, &offsets}) {
    EMBER_CHECK(t->dtype() == kLong || t->dtype() == kInt)
        << "Expected tensor for argument #1 '" << (t == &indices ? "indices" : "offsets")
        << "' to have one of the following scalar types: Long, Int; but got " << scalar_type_name(t->dtype())
        << " instead (while checking arguments for embedding_bag)";
  }
  const ScalarType dt = weight.dtype();
  const bool cuda = weight.is_cuda();
  EMBER_CHECK(dt == kHalf || dt == kFloat || dt == kDouble || (cuda && dt == kBFloat16))
      << "Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, Float, Double"
      << (cuda ? ", BFloat16" : "") << "; but got " << scalar_type_name(dt)
      << " instead (while checking arguments for embedding_bag)";
  EMBER_CHECK(mode >= kSum && mode <= kMax) << "embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), but got "
                                            << mode;
  if (psw) {
    EMBER_CHECK(mode == kSum) << "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                 "supported for mode='sum' (got mode='"
                              << mode_name(mode) << "'). Please open a feature request on GitHub.";
    EMBER_CHECK(psw->dtype() == dt) << "expected scalar type " << scalar_type_name(dt) << " but found "
                                    << scalar_type_name(psw->dtype()) << " (per_sample_weights)";
    EMBER_CHECK(psw->dim() == 1 && sym_size(*psw, 0) == sym_size(indices, 0))
        << "embedding_bag: per_sample_weights must have the shape of indices " << indices.sizes() << ", but got "
        << psw->sizes();
  }
  if (sparse) {
    EMBER_FAIL_KIND(ErrorKind::NotImplementedError)
        << "embedding_bag: sparse=True asks for a sparse gradient of weight, and Ember has no sparse tensors; pass "
           "sparse=False";
  }
}

/// `x` unchanged, its gradient multiplied by `scale`: x.detach() + (x - x.detach()) · scale.
Tensor scale_grad(const Tensor& x, const Tensor& scale) {
  const Tensor frozen = call_op_tensor("aten::detach", {x});
  return frozen + (x - frozen) * scale;
}

/// The gradient scale of each position under scale_grad_by_freq, as ATen's backward on
/// the indices' device computes it. CUDA: 1 / the count of the position's own index. CPU:
/// with the indices sorted, the g-th distinct index is scaled by 1 / count(sorted[g]) (the
/// count of the index at sorted position g, not of itself).
Tensor freq_scale(const Tensor& indices) {
  const Tensor idx = indices.to(kLong);
  if (idx.is_cuda()) return reciprocal(sum(eq(idx.unsqueeze(0), idx.unsqueeze(1)), {1}).to(kDouble));
  const Tensor sorted = std::get<0>(sort(idx));
  // first[k]: sorted position k starts a run of equal indices (sorted[:-1] ends at n - 1)
  const Tensor first =
      sym_size(idx, 0) > SymInt(0)
          ? cat({ones({1}, TensorOptions(kBool).device(idx.device())), ne(sorted.slice(0, 1), sorted.slice(0, 0, -1))})
          : zeros({0}, TensorOptions(kBool).device(idx.device()));
  // g(p): how many distinct indices are smaller than indices[p]
  const Tensor g = sum(logical_and(first.unsqueeze(0), lt(sorted.unsqueeze(0), idx.unsqueeze(1))), {1});
  const Tensor count_at = sum(eq(idx.unsqueeze(0), sorted.unsqueeze(1)), {1});  // count(sorted[k]) per k
  return reciprocal(index_select(count_at, 0, g).to(kDouble));
}

/// ATen's check_arguments on the offsets' values: the first is 0 and the last at most the
/// number of indices. `host` is on the CPU, int32 or int64, and not empty.
void check_offset_values(const Tensor& host, int64_t num_indices) {
  const auto at = [&](int64_t i) {
    const int64_t k = i * host.stride(0);
    return host.dtype() == kLong ? host.data_ptr<int64_t>()[k] : int64_t{host.data_ptr<int32_t>()[k]};
  };
  const int64_t first = at(0), last = at(host.size(0) - 1);
  EMBER_CHECK(first == 0) << "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                             "position 0. However, got "
                          << first;
  EMBER_CHECK(last <= num_indices) << "offsets[-1] can not be greater than input's length " << num_indices
                                   << " but got offsets[-1] of " << last;
}

/// ember::_embedding_bag_checked_offsets: a copy of the offsets, made after checking their
/// values. The composite computes each position's bag from the copy, so the check is on the
/// data path of every graph the composite is traced into: nothing removes it, and a
/// compiled function raises where eager does (an extern call that reads the values).
void register_checked_offsets(Registry& r) {
  r.def("ember::_embedding_bag_checked_offsets(Tensor offsets, Tensor indices) -> Tensor")
      .set_meta([](const Stack& a) {
        const Tensor& offsets = a[0].to_tensor();
        return metas(contiguous_over(offsets, offsets.dtype(), offsets.device()));
      })
      .set_cpu([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& offsets = a[0].to_tensor();
        if (offsets.size(0) > 0) check_offset_values(offsets, a[1].to_tensor().size(0));
        kernels::cpu::copy_into(out[0], offsets);
      })
      .set_cuda([](const Stack& a, std::vector<Tensor>& out) {
        const Tensor& offsets = a[0].to_tensor();
        if (offsets.size(0) > 0) check_offset_values(core::cuda::host_copy(offsets), a[1].to_tensor().size(0));
        kernels::cuda::copy_into(out[0], offsets);
      })
      .set_not_differentiable()
      .set_reads_on_host()
      .set_exported_as("aten::clone");
}

Stack embedding_bag(const Stack& a) {
  const Tensor &weight = a[0].to_tensor(), &indices = a[1].to_tensor(), &offsets = a[2].to_tensor();
  const bool scale_grad_by_freq = a[3].to_bool(), sparse = a[5].to_bool(), include_last_offset = a[7].to_bool();
  const int64_t mode = a[4].to_int(), padding_idx = a[8].to_int();
  const std::optional<Tensor> psw = a[6].to_optional_tensor();
  check_args(weight, indices, offsets, mode, psw, sparse);
  // Sizes as SymInts: a trace with dynamic shapes keeps them symbolic (Note [dynamic shapes]).
  const SymInt n = sym_size(indices, 0), bags = sym_size(offsets, 0) - SymInt(include_last_offset ? 1 : 0);
  const SymInt dim = sym_size(weight, 1);
  EMBER_CHECK(bags >= SymInt(0)) << "embedding_bag: include_last_offset needs at least one offset, but offsets is "
                                    "empty";
  // Every bag's position reads the checked offsets, so a compiled graph checks them too.
  const Tensor checked = call_op_tensor("ember::_embedding_bag_checked_offsets", {offsets, indices});
  // indices and offsets of different dtypes both become Long (ATen's promoteIndicesAndOffsets)
  const ScalarType dt = weight.dtype(), it = indices.dtype() == offsets.dtype() ? indices.dtype() : kLong;
  const TensorOptions long_opts = TensorOptions(kLong).device(weight.device());
  // bag of each position: how many of offsets[1:] are ≤ it
  const Tensor pos = arange(n, long_opts);
  const Tensor bag = sum(le(checked.slice(0, 1).to(kLong).unsqueeze(0), pos.unsqueeze(1)), {1});  // [n]
  Tensor rows = embedding(weight, indices);  // [n, D]
  if (scale_grad_by_freq && mode != kMax) rows = scale_grad(rows, freq_scale(indices).to(dt).unsqueeze(1));
  Tensor keep = padding_idx >= 0 ? ne(indices, Scalar(padding_idx)) : ones({n}, TensorOptions(kBool).device(weight.device()));
  const Tensor counts = index_put(zeros({bags}, long_opts), {bag}, keep.to(kLong), /*accumulate=*/true);
  Tensor out, max_indices;
  if (mode == kMax) {
    // [bags, n + 1, D]: the bag's non-padding members, -inf elsewhere and in a last column
    // that keeps max.dim's dim non-empty (an empty bag's maximum, replaced by 0 below)
    const Tensor member = logical_and(eq(bag.unsqueeze(0), arange(bags, long_opts).unsqueeze(1)), keep.unsqueeze(0));
    const double inf = std::numeric_limits<double>::infinity();
    const Tensor vals = cat({where(member.unsqueeze(2), rows.unsqueeze(0), Scalar(-inf)),
                             full({bags, SymInt(1), dim}, Scalar(-inf), TensorOptions(dt).device(weight.device()))},
                            1);
    auto [m, arg] = max(vals, 1);
    const Tensor nonempty = gt(counts, Scalar(int64_t{0})).unsqueeze(1);
    out = where(nonempty, m, Scalar(0.0));
    const Tensor row_of = cat({indices.to(kLong), zeros({1}, long_opts)});  // position n reads row 0
    max_indices = where(nonempty, index(row_of, {arg}), Scalar(int64_t{weight.is_cuda() ? -1 : 0})).to(it);
  } else {
    Tensor w = keep.to(dt);
    if (psw) w = w * *psw;
    out = index_put(zeros({bags, dim}, TensorOptions(dt).device(weight.device())), {bag}, rows * w.unsqueeze(1),
                    /*accumulate=*/true);
    if (mode == kMean) out = out / clamp_min(counts, Scalar(int64_t{1})).to(dt).unsqueeze(1);
  }
  const TensorOptions index_opts = TensorOptions(it).device(weight.device());
  if (weight.is_cuda()) {
    const Tensor bag_size = include_last_offset ? cat({counts.to(it), zeros({1}, index_opts)}) : counts.to(it);
    if (mode != kMax) max_indices = zeros({0}, index_opts);
    return {out, bag.to(it), bag_size, max_indices};
  }
  const bool fast_sum = mode == kSum && (dt == kFloat || dt == kHalf) && padding_idx < 0 &&
                        core::sym_stride(weight, 1) == core::SymInt(1);
  const Tensor offset2bag = fast_sum ? zeros({0}, index_opts) : bag.to(it);
  const Tensor bag_size = mode == kSum ? zeros({bags}, index_opts) : counts.to(it);
  if (mode != kMax) max_indices = mode == kMean ? bag_size.clone() : zeros({bags}, index_opts);
  return {out, offset2bag, bag_size, max_indices};
}

}  // namespace

void register_embedding_bag_ops(Registry& r) {
  register_checked_offsets(r);
  r.def("_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, "
        "bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1) "
        "-> (Tensor, Tensor, Tensor, Tensor)")
      .set_decomposition(embedding_bag);
}

}  // namespace ember::ops

// --- public API ----------------------------------------------------------------------
namespace ember {

std::tuple<Tensor, Tensor, Tensor, Tensor> _embedding_bag(const Tensor& weight, const Tensor& indices,
                                                          const Tensor& offsets, bool scale_grad_by_freq, int64_t mode,
                                                          bool sparse, const std::optional<Tensor>& per_sample_weights,
                                                          bool include_last_offset, int64_t padding_idx, Loc loc) {
  Stack s = ops::call_at(EMBER_OP("aten::_embedding_bag"),
                         {weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                          include_last_offset, padding_idx},
                         loc);
  return {s.at(0).to_tensor(), s.at(1).to_tensor(), s.at(2).to_tensor(), s.at(3).to_tensor()};
}

}  // namespace ember
