// capture/dynamic_shapes.cpp — see dynamic_shapes.h: the marks of mark_dynamic and
// mark_static (kept beside the tensors, not in them, and dropped with them) and the plan
// of a trace's symbolic sizes.
#include "capture/dynamic_shapes.h"

#include <map>
#include <mutex>
#include <unordered_map>

#include "support/call_context.h"

namespace ember::capture {
namespace {

struct DimMark {
  bool dynamic = true;
  std::optional<int64_t> min;
  std::optional<int64_t> max;
};

struct TensorMarks {
  std::weak_ptr<TensorImpl> owner;  // detects a freed TensorImpl whose address was reused
  std::map<int64_t, DimMark> dims;
};

struct MarkTable {
  std::mutex mu;
  std::unordered_map<const TensorImpl*, TensorMarks> marks;
};

MarkTable& mark_table() {
  static MarkTable* table = new MarkTable;
  return *table;
}

/// The marks of `t`, or an empty map.
std::map<int64_t, DimMark> marks_of(const Tensor& t) {
  MarkTable& table = mark_table();
  std::lock_guard lock(table.mu);
  auto it = table.marks.find(t.impl());
  if (it == table.marks.end()) return {};
  if (it->second.owner.lock().get() != t.impl()) {
    table.marks.erase(it);
    return {};
  }
  return it->second.dims;
}

/// Checks `dim` against `t` (negative counts from the end) and returns it non-negative.
int64_t checked_dim(const Tensor& t, int64_t dim, const char* fn) {
  EMBER_CHECK(t.defined()) << fn << ": the tensor is undefined";
  const int64_t rank = t.dim();
  EMBER_CHECK_INDEX(dim >= -rank && dim < rank)
      << fn << ": dim " << dim << " is out of range for a tensor of " << rank << " dimension" << (rank == 1 ? "" : "s")
      << " (sizes " << t.sizes() << "); expected a dim in [" << -rank << ", " << rank - 1 << "]";
  return dim < 0 ? dim + rank : dim;
}

void set_mark(const Tensor& t, int64_t dim, DimMark mark) {
  MarkTable& table = mark_table();
  std::lock_guard lock(table.mu);
  TensorMarks& m = table.marks[t.impl()];
  if (m.owner.lock().get() != t.impl()) m = TensorMarks{t.impl_ptr(), {}};
  m.dims[dim] = mark;
  // Drop the marks of tensors freed since (the table would otherwise only grow).
  for (auto it = table.marks.begin(); it != table.marks.end();) {
    it = it->second.owner.expired() ? table.marks.erase(it) : std::next(it);
  }
}

}  // namespace

bool backend_takes_symbolic_sizes(const CompileOptions& options) {
  if (options.custom_backend) return takes_symbolic_sizes(options.custom_backend);
  for (const std::string& name : list_backends())
    if (name == options.backend) return takes_symbolic_sizes(lookup_backend(name));
  return false;
}

const Tensor* tensor_at(const std::vector<CallArg>& args, int arg, int element) {
  if (arg < 0 || static_cast<size_t>(arg) >= args.size()) return nullptr;
  if (element < 0) return std::get_if<Tensor>(&args[arg]);
  const auto* list = std::get_if<std::vector<Tensor>>(&args[arg]);
  return list && static_cast<size_t>(element) < list->size() ? &(*list)[element] : nullptr;
}

bool is_marked_static(const Tensor& t, int64_t dim) {
  const auto marks = marks_of(t);
  auto it = marks.find(dim);
  return it != marks.end() && !it->second.dynamic;
}

std::vector<DynamicDim> plan_dynamic(const std::vector<CallArg>& args, std::optional<bool> dynamic,
                                     const std::set<ArgDim>& automatic) {
  std::vector<DynamicDim> plan;
  if (dynamic == false) return plan;
  auto add = [&](const Tensor& t, int arg, int element) {
    const std::map<int64_t, DimMark> marks = marks_of(t);
    for (int64_t d = 0; d < t.dim(); ++d) {
      auto mark = marks.find(d);
      if (mark != marks.end() && !mark->second.dynamic) continue;  // mark_static
      const bool marked = mark != marks.end();
      if (!(dynamic == true || marked || automatic.contains(ArgDim{arg, element, d}))) continue;
      DynamicDim dim{arg, element, d, std::nullopt, std::nullopt};
      if (marked) {
        dim.min = mark->second.min;
        dim.max = mark->second.max;
      }
      plan.push_back(dim);
    }
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const int arg = static_cast<int>(i);
    if (const auto* t = std::get_if<Tensor>(&args[i])) {
      if (t->defined()) add(*t, arg, -1);
    } else if (const auto* list = std::get_if<std::vector<Tensor>>(&args[i])) {
      for (size_t k = 0; k < list->size(); ++k)
        if ((*list)[k].defined()) add((*list)[k], arg, static_cast<int>(k));
    }
  }
  return plan;
}

}  // namespace ember::capture

namespace ember {

void mark_dynamic(const Tensor& t, int64_t dim, std::optional<int64_t> min, std::optional<int64_t> max, Loc loc) {
  support::UserLocScope scope(loc);
  dim = capture::checked_dim(t, dim, "mark_dynamic");
  EMBER_CHECK_VALUE(!min || *min >= 0) << "mark_dynamic: min=" << *min << " for dim " << dim
                                       << " is negative; a size is at least 0";
  EMBER_CHECK_VALUE(!min || !max || *min <= *max)
      << "mark_dynamic: min=" << *min << " is greater than max=" << *max << " for dim " << dim;
  const int64_t size = t.size(dim);
  EMBER_CHECK_VALUE((!min || size >= *min) && (!max || size <= *max))
      << "mark_dynamic: dim " << dim << " has size " << size << ", outside the range [" << (min ? *min : 0) << ", "
      << (max ? std::to_string(*max) : std::string("inf")) << "] given for it";
  capture::set_mark(t, dim, capture::DimMark{true, min, max});
}

void mark_static(const Tensor& t, int64_t dim, Loc loc) {
  support::UserLocScope scope(loc);
  dim = capture::checked_dim(t, dim, "mark_static");
  capture::set_mark(t, dim, capture::DimMark{false, std::nullopt, std::nullopt});
}

}  // namespace ember
