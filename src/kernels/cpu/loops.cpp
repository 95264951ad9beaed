// kernels/cpu/loops.cpp — building a PointwiseLoop: reorder and coalesce dims.
#include "kernels/cpu/loops.h"

#include <algorithm>

#include "core/shape.h"

namespace ember::kernels::cpu {

PointwiseLoop::PointwiseLoop(const Tensor& out, const std::vector<Tensor>& inputs) {
  const IntArrayRef shape = out.sizes();
  const int nd = static_cast<int>(shape.size());
  const int nops = 1 + static_cast<int>(inputs.size());
  numel_ = out.numel();

  // Strides in bytes for every operand over the output's shape.
  std::vector<std::vector<int64_t>> strides(static_cast<size_t>(nops));
  strides[0] = out.strides().vec();
  data_.push_back(static_cast<char*>(out.raw_data_ptr()));
  for (int k = 0; k < nops - 1; ++k) {
    const Tensor& in = inputs[k];
    strides[k + 1] = core::broadcast_strides(in.sizes(), in.strides(), shape);
    data_.push_back(static_cast<char*>(in.raw_data_ptr()));
  }
  for (int k = 0; k < nops; ++k) {
    const int64_t es = static_cast<int64_t>(k == 0 ? out.element_size() : inputs[k - 1].element_size());
    for (auto& s : strides[k]) s *= es;
  }

  // Order dims by the output's strides, smallest first (ties: later dims first), so the
  // innermost loop walks the output densely. Size-1 dims take no part: their strides
  // address nothing (PyTorch-style views give them any value).
  std::vector<int> perm;
  for (int d = nd - 1; d >= 0; --d)
    if (shape[d] != 1) perm.push_back(d);
  std::stable_sort(perm.begin(), perm.end(), [&](int a, int b) {
    for (int k = 0; k < nops; ++k) {
      const int64_t sa = strides[k][a], sb = strides[k][b];
      if (sa == 0 || sb == 0) continue;
      if (sa != sb) return sa < sb;
    }
    return false;
  });

  // Coalesce: merge dim j into the current dim when every operand steps evenly across.
  shape_.clear();
  strides_.assign(static_cast<size_t>(nops), {});
  for (int j : perm) {
    if (!shape_.empty()) {
      bool can_merge = true;
      for (int k = 0; k < nops && can_merge; ++k)
        can_merge = strides[k][j] == strides_[k].back() * shape_.back();
      if (can_merge) {
        shape_.back() *= shape[j];
        continue;
      }
    }
    shape_.push_back(shape[j]);
    for (int k = 0; k < nops; ++k) strides_[k].push_back(strides[k][j]);
  }
  if (shape_.empty()) {
    shape_.push_back(1);
    for (int k = 0; k < nops; ++k) strides_[k].push_back(0);
  }
  EMBER_CHECK(shape_.size() <= 16) << "tensors with more than 16 non-mergeable dims are not supported";
}

}  // namespace ember::kernels::cpu
