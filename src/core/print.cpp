// core/print.cpp — Tensor printing in PyTorch's format (torch/_tensor_str.py): the same
// choice between integer, fixed and scientific notation, column widths, summarization
// of large tensors with "...", line wrapping at 80 columns and the dtype/device/size
// suffixes.
#include <cmath>
#include <cstring>
#include <cstdio>
#include <sstream>

#include "core/cuda.h"
#include "core/shape.h"
#include "ember/tensor.h"
#include "support/call_context.h"

namespace ember {
namespace {

constexpr int kPrecision = 4;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 80;

/// A tensor's values read as doubles (or int64/bool) without going through ops, so
/// that printing works even while an op is failing.
struct Values {
  const Tensor& t;
  /// The element at `idx`, converted to R (double for floats, int64 for the rest).
  template <typename R>
  R read(const std::vector<int64_t>& idx) const {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
    const char* base = static_cast<const char*>(t.raw_data_ptr()) + off * static_cast<int64_t>(t.element_size());
    return EMBER_DISPATCH_ALL_TYPES(t.dtype(), "print", [&]() -> R {
      scalar_t v;
      std::memcpy(&v, base, sizeof v);
      return static_cast<R>(static_cast<opmath_t<scalar_t>>(v));
    });
  }
  double at(const std::vector<int64_t>& idx) const { return read<double>(idx); }
  int64_t at_int(const std::vector<int64_t>& idx) const { return read<int64_t>(idx); }
};

/// Calls f(index) for the elements that are printed: all of them, or only the edge
/// items of each dim when summarizing.
template <typename F>
void for_each_shown(IntArrayRef sizes, bool summarize, F&& f) {
  std::vector<std::vector<int64_t>> per_dim;
  for (int64_t s : sizes) {
    std::vector<int64_t> ids;
    if (summarize && s > 2 * kEdgeItems) {
      for (int64_t i = 0; i < kEdgeItems; ++i) ids.push_back(i);
      for (int64_t i = s - kEdgeItems; i < s; ++i) ids.push_back(i);
    } else {
      for (int64_t i = 0; i < s; ++i) ids.push_back(i);
    }
    per_dim.push_back(std::move(ids));
  }
  std::vector<int64_t> counts;
  for (auto& ids : per_dim) counts.push_back(static_cast<int64_t>(ids.size()));
  std::vector<int64_t> idx(sizes.size());
  core::for_each_index(counts, [&](const int64_t* k) {
    for (size_t d = 0; d < sizes.size(); ++d) idx[d] = per_dim[d][k[d]];
    f(idx);
  });
}

std::string format_fixed(double v, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string format_sci(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", kPrecision, v);
  return buf;
}

class Formatter {
 public:
  Formatter(const Tensor& t, bool summarize) : floating_(is_floating_point(t.dtype())), is_bool_(t.dtype() == kBool) {
    Values vals{t};
    if (!floating_) {
      for_each_shown(t.sizes(), summarize, [&](const std::vector<int64_t>& idx) {
        max_width_ = std::max(max_width_, static_cast<int>(format_int(vals.at_int(idx)).size()));
      });
      return;
    }
    std::vector<double> finite_nonzero;
    for_each_shown(t.sizes(), summarize, [&](const std::vector<int64_t>& idx) {
      const double v = vals.at(idx);
      if (std::isfinite(v) && v != 0) finite_nonzero.push_back(v);
    });
    if (finite_nonzero.empty()) {
      // Only zeros, infs and NaNs: integer mode, widths from the values themselves.
      for_each_shown(t.sizes(), summarize, [&](const std::vector<int64_t>& idx) {
        max_width_ = std::max(max_width_, static_cast<int>(format(vals.at(idx), false).size()));
      });
      return;
    }
    double lo = std::abs(finite_nonzero[0]), hi = lo;
    for (double v : finite_nonzero) {
      lo = std::min(lo, std::abs(v));
      hi = std::max(hi, std::abs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    if (int_mode_) {
      sci_mode_ = hi / lo > 1000.0 || hi > 1e8;
    } else {
      sci_mode_ = hi / lo > 1000.0 || hi > 1e8 || lo < 1e-4;
    }
    for (double v : finite_nonzero) {
      std::string s = sci_mode_ ? format_sci(v) : int_mode_ ? format_fixed(v, 0) + "." : format_fixed(v, kPrecision);
      max_width_ = std::max(max_width_, static_cast<int>(s.size()));
    }
  }

  int width() const { return max_width_; }

  std::string format(double v, bool pad = true) const {
    std::string s;
    if (sci_mode_) {
      s = format_sci(v);
    } else if (int_mode_) {
      s = format_fixed(v, 0);
      if (std::isfinite(v)) s += ".";
    } else {
      s = format_fixed(v, kPrecision);
    }
    return pad ? padded(s) : s;
  }
  std::string format_int(int64_t v) const { return is_bool_ ? (v ? "True" : "False") : std::to_string(v); }
  std::string format_value(const Values& vals, const std::vector<int64_t>& idx) const {
    return floating_ ? format(vals.at(idx)) : padded(format_int(vals.at_int(idx)));
  }

 private:
  std::string padded(const std::string& s) const {
    return std::string(static_cast<size_t>(std::max<int>(0, max_width_ - static_cast<int>(s.size()))), ' ') + s;
  }
  bool floating_;
  bool is_bool_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  int max_width_ = 1;
};

/// What one printed element is: a real value, or (complex) its real and imaginary parts,
/// each with its own formatter, as "1.5000-2.0000j" (PyTorch's _val_formatter).
struct Cells {
  const Values& re;
  const Formatter& f1;
  const Values* im = nullptr;
  const Formatter* f2 = nullptr;
  std::string at(const std::vector<int64_t>& idx) const {
    const std::string real_str = f1.format_value(re, idx);
    if (!f2) return real_str;
    std::string imag_str = f2->format_value(*im, idx) + "j";
    imag_str.erase(0, imag_str.find_first_not_of(' '));
    return imag_str[0] == '+' || imag_str[0] == '-' ? real_str + imag_str : real_str + "+" + imag_str;
  }
  /// Characters per element with its ", " (and the imaginary part with its "j").
  int element_length() const { return f1.width() + 2 + (f2 ? f2->width() + 1 : 0); }
};

/// The real (part 0) or imaginary (part 1) parts of a complex CPU tensor as a real
/// tensor over the same memory, made without dispatch (printing runs no ops).
Tensor complex_part(const Tensor& t, int64_t part) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.storage();
  impl->sizes = t.sizes().vec();
  for (int64_t s : t.strides()) impl->strides.push_back(2 * s);
  impl->storage_offset = 2 * t.storage_offset() + part;
  impl->dtype = to_real_value_type(t.dtype());
  impl->device = t.device();
  impl->refresh();
  return Tensor(std::move(impl));
}

std::string vector_str(const Values& vals, std::vector<int64_t>& idx, int64_t size, int indent, bool summarize,
                       const Cells& fmt) {
  const int element_length = fmt.element_length();
  const int per_line = std::max(1, (kLineWidth - indent) / element_length);
  std::vector<std::string> data;
  auto push = [&](int64_t i) {
    idx.push_back(i);
    data.push_back(fmt.at(idx));
    idx.pop_back();
  };
  if (summarize && size > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) push(i);
    data.push_back(" ...");
    for (int64_t i = size - kEdgeItems; i < size; ++i) push(i);
  } else {
    for (int64_t i = 0; i < size; ++i) push(i);
  }
  std::string out = "[";
  for (size_t i = 0; i < data.size(); ++i) {
    if (i > 0) {
      if (i % static_cast<size_t>(per_line) == 0) out += ",\n" + std::string(static_cast<size_t>(indent + 1), ' ');
      else out += ", ";
    }
    out += data[i];
  }
  return out + "]";
}

std::string tensor_str(const Values& vals, std::vector<int64_t>& idx, int indent, bool summarize, const Cells& fmt) {
  const Tensor& t = vals.t;
  const int64_t dim = t.dim() - static_cast<int64_t>(idx.size());
  if (dim == 0) return fmt.at(idx);
  const int64_t size = t.size(static_cast<int64_t>(idx.size()));
  if (dim == 1) return vector_str(vals, idx, size, indent, summarize, fmt);
  std::vector<std::string> slices;
  auto push = [&](int64_t i) {
    idx.push_back(i);
    slices.push_back(tensor_str(vals, idx, indent + 1, summarize, fmt));
    idx.pop_back();
  };
  if (summarize && size > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) push(i);
    slices.push_back("...");
    for (int64_t i = size - kEdgeItems; i < size; ++i) push(i);
  } else {
    for (int64_t i = 0; i < size; ++i) push(i);
  }
  const std::string sep = "," + std::string(static_cast<size_t>(dim - 1), '\n') + std::string(static_cast<size_t>(indent + 1), ' ');
  std::string out = "[";
  for (size_t i = 0; i < slices.size(); ++i) out += (i ? sep : "") + slices[i];
  return out + "]";
}

std::string size_tuple(IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  if (sizes.size() == 1) s += ",";
  return s + ")";
}

std::string add_suffixes(const std::string& body, const std::vector<std::string>& suffixes, int indent) {
  std::string out = body;
  const size_t nl = body.rfind('\n');
  size_t last_line = nl == std::string::npos ? body.size() + 1 : body.size() - nl + 1;
  for (const auto& s : suffixes) {
    if (last_line + s.size() + 2 > static_cast<size_t>(kLineWidth)) {
      out += ",\n" + std::string(static_cast<size_t>(indent), ' ') + s;
      last_line = static_cast<size_t>(indent) + s.size();
    } else {
      out += ", " + s;
      last_line += s.size() + 2;
    }
  }
  return out + ")";
}

}  // namespace

std::string Tensor::str(Loc loc) const {
  if (!defined()) return "tensor(undefined)";
  support::UserLocScope user_line(loc);
  require_data("printing a tensor", loc);
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  std::vector<std::string> suffixes;
  // complex64 is the default complex dtype (that of the default float).
  const bool default_dtype = dtype() == kDefaultFloat || dtype() == kComplexFloat || dtype() == kInt64 || dtype() == kBool;
  std::string body;
  if (!is_cpu()) suffixes.push_back("device='" + device().str() + "'");
  if (is_meta()) {
    suffixes.push_back("size=" + size_tuple(sizes()));
    if (dtype() != kDefaultFloat) suffixes.push_back("dtype=torch." + std::string(dtype_name(dtype())));
    body = "...";
  } else if (numel() == 0) {
    if (dim() != 1) suffixes.push_back("size=" + size_tuple(sizes()));
    if (dtype() != kDefaultFloat) suffixes.push_back("dtype=torch." + std::string(dtype_name(dtype())));
    body = "[]";
  } else {
    if (!default_dtype) suffixes.push_back("dtype=torch." + std::string(dtype_name(dtype())));
    const bool summarize = numel() > kThreshold;
    // A CUDA tensor's values are copied to the host to print, as PyTorch does.
    const Tensor host = is_cuda() ? core::cuda::host_copy(*this) : *this;
    std::vector<int64_t> idx;
    if (is_complex(dtype())) {
      // Real and imaginary parts formatted apart, as PyTorch's _tensor_str.
      const Tensor re = complex_part(host, 0), im = complex_part(host, 1);
      const Formatter f_re(re, summarize), f_im(im, summarize);
      const Values v_re{re}, v_im{im};
      body = tensor_str(v_re, idx, indent, summarize, Cells{v_re, f_re, &v_im, &f_im});
    } else {
      Formatter fmt(host, summarize);
      Values vals{host};
      body = tensor_str(vals, idx, indent, summarize, Cells{vals, fmt});
    }
  }
  return add_suffixes(prefix + body, suffixes, indent);
}

std::ostream& operator<<(std::ostream& os, TensorArg t) { return os << t.t.str(t.loc); }

}  // namespace ember
