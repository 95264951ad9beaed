// capture/unbacked.cpp — the geometry of ops whose output size is computed from data,
// over an unbacked symbol (PyTorch's create_unbacked_symint), and whether a call can be
// traced that way. See capture/unbacked.h and Note [dynamic shapes].
#include "capture/unbacked.h"

#include <optional>

#include "core/sym_geometry.h"
#include "ember/config.h"
#include "ember/error.h"

namespace ember::capture {
namespace {

using OptTensors = std::vector<std::optional<Tensor>>;

bool is_mask(const Tensor& t) { return t.dtype() == kBool || t.dtype() == kUInt8; }

/// The tensor indices of an `index.Tensor` call (None entries left out) and where the
/// first one starts: each None before it consumes one dim of self.
struct TensorIndices {
  std::vector<Tensor> tensors;
  int64_t first_dim = 0;
};

TensorIndices tensor_indices(const IValue& indices) {
  TensorIndices out;
  for (const std::optional<Tensor>& t : indices.to_optional_tensor_list()) {
    if (!t || !t->defined()) {
      if (out.tensors.empty()) ++out.first_dim;
      continue;
    }
    out.tensors.push_back(*t);
  }
  return out;
}

std::string sizes_text(const core::SymInts& sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + core::current(sizes[i]).str();
  return out + "]";
}

std::vector<TensorMeta> nonzero_meta(const Stack& a, core::ShapeEnv& env) {
  const Tensor& self = a[0].to_tensor();
  const core::SymInts sizes{env.create_unbacked("aten::nonzero"), core::SymInt(self.dim())};
  return {core::contiguous_sym_meta(sizes, kInt64, self.device())};
}

std::vector<TensorMeta> index_mask_meta(const Stack& a, core::ShapeEnv& env) {
  const Tensor& self = a[0].to_tensor();
  const TensorIndices idx = tensor_indices(a[1]);
  const Tensor& mask = idx.tensors.at(0);
  const core::SymInts self_sizes = core::sym_sizes(self);
  const core::SymInts mask_sizes = core::sym_sizes(mask);
  const int64_t first = idx.first_dim;
  EMBER_CHECK_INDEX(first + mask.dim() <= self.dim())
      << "too many indices for tensor of dimension " << self.dim() << " (got " << first + mask.dim() << ")";
  for (int64_t j = 0; j < mask.dim(); ++j) {
    EMBER_CHECK_INDEX(mask_sizes[static_cast<size_t>(j)] == self_sizes[static_cast<size_t>(first + j)])
        << "The shape of the mask " << sizes_text(mask_sizes) << " at index " << j
        << " does not match the shape of the indexed tensor " << sizes_text(self_sizes) << " at index " << first + j;
  }
  core::SymInts sizes(self_sizes.begin(), self_sizes.begin() + first);
  sizes.push_back(env.create_unbacked("aten::index.Tensor (a bool mask)"));
  sizes.insert(sizes.end(), self_sizes.begin() + first + mask.dim(), self_sizes.end());
  return {core::contiguous_sym_meta(sizes, self.dtype(), self.device())};
}

std::string any_form(const Stack&) { return ""; }

std::string one_mask_alone(const Stack& a) {
  const TensorIndices idx = tensor_indices(a[1]);
  if (idx.tensors.size() == 1 && idx.tensors[0].dim() > 0) return "";
  return "a bool mask beside other index tensors (or a 0-dim mask) is not traced with a data-dependent size; only "
         "x[mask] and x[:, mask] are";
}

/// One row per op whose output size is data-dependent. `masked_select` is written as
/// `index.Tensor` with a full-rank mask, so it needs no row.
struct Rule {
  const char* op;
  /// Why a call of this form breaks the graph instead; empty when it is traced.
  std::string (*why_not)(const Stack& args);
  /// The outputs' geometry over a new unbacked symbol.
  std::vector<TensorMeta> (*meta)(const Stack& fake_args, core::ShapeEnv& env);
};
constexpr Rule kRules[] = {
    // [u, self.dim()] int64, contiguous.
    {"aten::nonzero", any_form, nonzero_meta},
    // Self's sizes before the mask's dims, u, self's sizes after; contiguous. The mask's
    // sizes must equal the dims it indexes (compared over SymInt: a guard or a constant).
    {"aten::index.Tensor", one_mask_alone, index_mask_meta},
};

const Rule* rule_of(const ops::OpDef& op) {
  for (const Rule& r : kRules)
    if (op.name == r.op) return &r;
  return nullptr;
}

}  // namespace

bool has_data_dependent_size(const ops::OpDef& op, const Stack& args) {
  if (op.kind == ops::OpKind::Dynamic) return true;
  if (op.name != "aten::index.Tensor" || args.size() < 2) return false;
  for (const Tensor& t : tensor_indices(args[1]).tensors)
    if (is_mask(t)) return true;
  return false;
}

std::string why_not_unbacked(const ops::OpDef& op, const Stack& args) {
  const std::string what = "dynamic shape operator: " + op.name;
  if (!config().dynamo.capture_dynamic_output_shape_ops) {
    return what +
           "; to enable, set ember::config().dynamo.capture_dynamic_output_shape_ops = true "
           "(TORCHDYNAMO_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS=1)";
  }
  const Rule* rule = rule_of(op);
  if (!rule) return what + " has no rule for a data-dependent size";
  const std::string why = rule->why_not(args);
  return why.empty() ? why : what + ": " + why;
}

std::vector<TensorMeta> unbacked_meta(const ops::OpDef& op, const Stack& fake_args, core::ShapeEnv& env) {
  const Rule* rule = rule_of(op);
  EMBER_INTERNAL_ASSERT(rule) << op.name << " has no rule for a data-dependent size";
  return rule->meta(fake_args, env);
}

}  // namespace ember::capture
