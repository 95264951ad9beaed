// kernels/cpu/onednn.h — the process's oneDNN CPU engine and layout reorders, shared by
// the convolution primitives (dnnl_conv.h) and the float GEMM's matmul primitive (sgemm.cpp).
#pragma once

#include <memory>
#include <oneapi/dnnl/dnnl.hpp>

namespace ember::kernels::cpu::onednn {

inline dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

/// A reorder between two layouts of one tensor, or nothing when they agree.
inline std::unique_ptr<dnnl::reorder> reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  if (from == to) return nullptr;
  return std::make_unique<dnnl::reorder>(dnnl::reorder::primitive_desc(engine(), from, engine(), to));
}

}  // namespace ember::kernels::cpu::onednn
