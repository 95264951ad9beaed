// kernels/cpu/packed_linear.cpp — see packed_linear.h. The primitive is described with the
// weight's layout left to oneDNN (format_tag::any): its brgemm matmul then asks for a
// blocked layout (on AVX-512, n in blocks of 64 or 16 columns and k in pairs or blocks of
// 16 rows, so that each block streams through the microkernel without repacking), and the
// constant weight is reordered into it once, here, instead of on every call (oneDNN's
// primitive packs a plain weight into such blocks per call, and sgemm copies panels of it).
// Bias, eltwise and binary post-ops run on the accumulators before they are stored, so
// the epilogue costs no pass over memory of its own.
#include "kernels/cpu/packed_linear.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>
#include <unordered_map>

#include "ember/error.h"
#include "kernels/cpu/onednn.h"

namespace ember::kernels::cpu {

namespace {

std::atomic<int64_t> g_packs{0};

using dnnl::memory;

dnnl::algorithm eltwise_of(LinearPostOp::Kind k) {
  switch (k) {
    case LinearPostOp::Kind::Relu:
      return dnnl::algorithm::eltwise_relu;
    case LinearPostOp::Kind::GeluErf:
      return dnnl::algorithm::eltwise_gelu_erf;
    case LinearPostOp::Kind::GeluTanh:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case LinearPostOp::Kind::Add:
      break;
  }
  EMBER_INTERNAL_ASSERT(false) << "packed linear: an add is not an eltwise post-op";
  return dnnl::algorithm::undef;
}

}  // namespace

const char* linear_post_op_name(const LinearPostOp& op) {
  switch (op.kind) {
    case LinearPostOp::Kind::Relu:
      return "relu";
    case LinearPostOp::Kind::GeluErf:
      return "gelu_erf";
    case LinearPostOp::Kind::GeluTanh:
      return "gelu_tanh";
    case LinearPostOp::Kind::Add:
      return op.row ? "add_row" : "add";
  }
  return "?";
}

/// The primitive made for one thread count and the weight packed into its layout.
struct PackedLinear::Entry {
  memory::desc src_md, dst_md, bias_md;
  std::vector<memory::desc> add_mds;  // per Add post-op
  std::vector<int> add_index;         // its position among the post-ops
  dnnl::matmul prim;
  memory weights;  // owns its buffer, in the primitive's layout
  memory::desc scratch_md;
};

PackedLinear::PackedLinear(int64_t m, int64_t k, int64_t n, int64_t src_rs, int64_t src_cs, const Tensor& weight,
                           const Tensor& bias, std::vector<LinearPostOp> post_ops)
    : m_(m), k_(k), n_(n), src_rs_(src_rs), src_cs_(src_cs), weight_(weight), post_ops_(std::move(post_ops)) {
  EMBER_CHECK(weight.dtype() == kFloat && weight.dim() == 2 && weight.size(0) == k && weight.size(1) == n)
      << "packed linear: expected a float32 weight [" << k << ", " << n << "], got " << dtype_name(weight.dtype())
      << " " << weight.sizes();
  if (bias.defined()) {
    EMBER_CHECK(bias.dtype() == kFloat && bias.numel() == n)
        << "packed linear: expected a float32 bias of " << n << " values, got " << dtype_name(bias.dtype()) << " "
        << bias.sizes();
    // Kept as n dense values (a constant; the weight tensor is held and read once per pack).
    const float* b = static_cast<const float*>(bias.raw_data_ptr());
    const int64_t stride = bias.dim() ? bias.stride(bias.dim() - 1) : 1;
    bias_.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) bias_[static_cast<size_t>(j)] = b[j * stride];
    has_bias_ = true;
  }
  (void)entry();  // packs now, at compile time, for the compiling thread count
}

PackedLinear::~PackedLinear() = default;

const PackedLinear::Entry& PackedLinear::entry() const {
  const int threads = omp_get_max_threads();
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(threads); it != entries_.end()) return *it->second;
  auto e = std::make_unique<Entry>();
  dnnl::engine& eng = onednn::engine();
  e->src_md = memory::desc({m_, k_}, memory::data_type::f32, memory::dims{src_rs_, src_cs_});
  e->dst_md = memory::desc({m_, n_}, memory::data_type::f32, memory::dims{n_, 1});
  const memory::desc any_weights({k_, n_}, memory::data_type::f32, memory::format_tag::any);
  if (has_bias_) e->bias_md = memory::desc({1, n_}, memory::data_type::f32, memory::dims{n_, 1});
  dnnl::post_ops ops;
  for (size_t i = 0; i < post_ops_.size(); ++i) {
    const LinearPostOp& op = post_ops_[i];
    if (op.kind == LinearPostOp::Kind::Add) {
      const memory::desc md = op.row ? memory::desc({1, n_}, memory::data_type::f32, memory::dims{n_, 1})
                                     : memory::desc({m_, n_}, memory::data_type::f32, memory::dims{n_, 1});
      ops.append_binary(dnnl::algorithm::binary_add, md);
      e->add_mds.push_back(md);
      e->add_index.push_back(static_cast<int>(i));
    } else {
      ops.append_eltwise(1.0f, eltwise_of(op.kind), 0.0f, 0.0f);
    }
  }
  dnnl::primitive_attr attr = onednn::user_scratchpad();
  attr.set_post_ops(ops);
  const dnnl::matmul::desc desc = has_bias_ ? dnnl::matmul::desc(e->src_md, any_weights, e->bias_md, e->dst_md)
                                                  : dnnl::matmul::desc(e->src_md, any_weights, e->dst_md);
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(desc, attr, eng);
  } catch (const dnnl::error& err) {
    EMBER_FAIL() << "packed linear: oneDNN has no matmul primitive for " << describe() << ": " << err.what();
  }
  e->prim = dnnl::matmul(pd);
  e->scratch_md = pd.scratchpad_desc();
  e->weights = memory(pd.weights_desc(), eng);
  // The constant weight, reordered once into the primitive's layout.
  const Tensor& w = weight_;
  const memory::desc w_md({k_, n_}, memory::data_type::f32, memory::dims{w.stride(0), w.stride(1)});
  memory user(w_md, eng, const_cast<void*>(w.raw_data_ptr()));
  dnnl::stream s(eng);
  dnnl::reorder(user, e->weights).execute(s, user, e->weights);
  s.wait();
  g_packs.fetch_add(1, std::memory_order_relaxed);
  return *(entries_[threads] = std::move(e));
}

void PackedLinear::run(const float* src, const std::vector<const float*>& add_operands, float* dst) const {
  const Entry& e = entry();
  EMBER_INTERNAL_ASSERT(add_operands.size() == e.add_mds.size())
      << "packed linear: " << e.add_mds.size() << " add operands expected, got " << add_operands.size();
  dnnl::engine& eng = onednn::engine();
  memory src_m(e.src_md, eng, const_cast<float*>(src)), dst_m(e.dst_md, eng, dst);
  onednn::CallMemory scratch(e.scratch_md);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_m},
                                       {DNNL_ARG_WEIGHTS, e.weights},
                                       {DNNL_ARG_DST, dst_m},
                                       {DNNL_ARG_SCRATCHPAD, scratch.memory()}};
  if (has_bias_) args.emplace(DNNL_ARG_BIAS, memory(e.bias_md, eng, const_cast<float*>(bias_.data())));
  for (size_t i = 0; i < add_operands.size(); ++i)
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(e.add_index[i]) | DNNL_ARG_SRC_1,
                 memory(e.add_mds[i], eng, const_cast<float*>(add_operands[i])));
  dnnl::stream s(eng);
  e.prim.execute(s, args);
  s.wait();
}

std::string PackedLinear::weight_format() const { return onednn::format_name(entry().weights.get_desc()); }

std::string PackedLinear::describe() const {
  std::ostringstream os;
  os << m_ << "x" << k_ << "x" << n_ << (has_bias_ ? " +bias" : "");
  for (const LinearPostOp& op : post_ops_) os << " +" << linear_post_op_name(op);
  return os.str();
}

int64_t PackedLinear::packs() { return g_packs.load(std::memory_order_relaxed); }

}  // namespace ember::kernels::cpu
