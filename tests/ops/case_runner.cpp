// tests/ops/case_runner.cpp — see case_runner.h.
#include "case_runner.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/serialize.h"

namespace ember::conformance {

namespace fs = std::filesystem;

std::vector<CaseFile> load_case_files() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(EMBER_CASES_DIR))
    if (entry.path().extension() == ".json") paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  std::vector<CaseFile> files;
  for (const auto& p : paths) {
    CaseFile f;
    std::ifstream in(p);
    f.doc = json::parse(in);
    f.family = f.doc.at("family").get<std::string>();
    f.tensors = load_safetensors((p.parent_path() / f.doc.at("tensors").get<std::string>()).string());
    files.push_back(std::move(f));
  }
  return files;
}

namespace {

double number(const json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    throw Mismatch{"bad float literal '" + s + "' in the case file"};
  }
  return v.get<double>();
}

}  // namespace

ScalarType dtype_of(const std::string& name) {
  auto t = parse_dtype(name);
  if (!t) throw Mismatch{"unknown dtype '" + name + "' in the case file"};
  return *t;
}

namespace {

/// Rebuilds an input: a fresh copy of the stored base (on meta: a meta tensor of its
/// sizes), then the recorded view transforms through Ember's own view ops.
Tensor rebuild(const CaseFile& f, const json& ref, bool meta) {
  const std::string name = ref.at("ref").get<std::string>();
  auto it = f.tensors.find(name);
  if (it == f.tensors.end()) throw Mismatch{"tensor '" + name + "' missing from " + f.family + ".safetensors"};
  Tensor t = meta ? empty(it->second.sizes(), TensorOptions(it->second.dtype()).device(kMeta)) : it->second.clone();
  for (const json& tr : ref.value("transform", json::array())) {
    const std::string kind = tr.at(0).get<std::string>();
    if (kind == "transpose")
      t = t.transpose(tr.at(1).get<int64_t>(), tr.at(2).get<int64_t>());
    else if (kind == "permute")
      t = t.permute(tr.at(1).get<std::vector<int64_t>>());
    else if (kind == "slice")
      t = t.slice(tr.at(1).get<int64_t>(), tr.at(2).get<int64_t>(), tr.at(3).get<int64_t>(), tr.at(4).get<int64_t>());
    else if (kind == "expand")
      t = t.expand(tr.at(1).get<std::vector<int64_t>>());
    else
      throw Mismatch{"unknown transform '" + kind + "'"};
  }
  return t;
}

IValue build_arg(const CaseFile& f, const json& a, bool meta) {
  const std::string type = a.at("type").get<std::string>();
  if (type == "None") return IValue();
  if (type == "Tensor") return rebuild(f, a, meta);
  if (type == "Tensor[]") {
    std::vector<Tensor> list;
    for (const json& r : a.at("value")) list.push_back(rebuild(f, r, meta));
    return list;
  }
  if (type == "Tensor?[]") {
    std::vector<std::optional<Tensor>> list;
    for (const json& r : a.at("value"))
      list.push_back(r.is_null() ? std::nullopt : std::optional<Tensor>(rebuild(f, r, meta)));
    return list;
  }
  const json& v = a.at("value");
  if (type == "int") return v.get<int64_t>();
  if (type == "float") return number(v);
  if (type == "bool") return v.get<bool>();
  if (type == "int[]") return v.get<std::vector<int64_t>>();
  if (type == "bool[]") return v.get<std::vector<bool>>();
  if (type == "str") return v.get<std::string>();
  if (type == "ScalarType") return dtype_of(v.get<std::string>());
  if (type == "Device") return Device(v.get<std::string>());
  if (type == "Scalar") {
    const std::string kind = a.at("kind").get<std::string>();
    if (kind == "bool") return Scalar(v.get<bool>());
    if (kind == "int") return Scalar(v.get<int64_t>());
    return Scalar(number(v));
  }
  throw Mismatch{"unknown argument type '" + type + "'"};
}

}  // namespace

Stack build_stack(const CaseFile& f, const ops::OpDef& op, const json& c, bool meta) {
  const auto& schema = op.schema;
  std::vector<std::optional<IValue>> slots(schema.arguments.size());
  for (const json& a : c.at("args")) {
    const std::string name = a.at("name").get<std::string>();
    const int i = schema.index_of(name);
    if (i < 0) throw Mismatch{"argument '" + name + "' is not in Ember's schema " + schema.str()};
    slots[i] = build_arg(f, a, meta);
  }
  Stack stack;
  for (size_t i = 0; i < slots.size(); ++i) {
    const auto& arg = schema.arguments[i];
    if (meta && arg.type.base == ops::BaseType::Device) {
      stack.emplace_back(kMeta);  // factories make meta tensors on the meta run
    } else if (slots[i]) {
      stack.push_back(*slots[i]);
    } else if (arg.default_value) {
      stack.push_back(*arg.default_value);
    } else {
      throw Mismatch{"the case gives no value for argument '" + arg.name + "', which has no default in " +
                     schema.str()};
    }
  }
  return stack;
}

/// Element i (row-major) of any tensor, as double.
std::vector<double> values_of(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  if (t.numel() == 0) return out;
  const auto* base = static_cast<const char*>(t.raw_data_ptr());
  const int64_t nd = t.dim();
  std::vector<int64_t> index(static_cast<size_t>(nd), 0);
  const int64_t es = static_cast<int64_t>(t.element_size());
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t off = 0;
    for (int64_t d = 0; d < nd; ++d) off += index[d] * t.stride(d);
    const char* p = base + off * es;
    double v = 0;
    switch (t.dtype()) {
      case kFloat:
        v = *reinterpret_cast<const float*>(p);
        break;
      case kDouble:
        v = *reinterpret_cast<const double*>(p);
        break;
      case kHalf:
        v = static_cast<float>(*reinterpret_cast<const Half*>(p));
        break;
      case kBFloat16:
        v = static_cast<float>(*reinterpret_cast<const BFloat16*>(p));
        break;
      case kInt64:
        v = static_cast<double>(*reinterpret_cast<const int64_t*>(p));
        break;
      case kInt32:
        v = *reinterpret_cast<const int32_t*>(p);
        break;
      case kInt16:
        v = *reinterpret_cast<const int16_t*>(p);
        break;
      case kInt8:
        v = *reinterpret_cast<const int8_t*>(p);
        break;
      case kUInt8:
        v = *reinterpret_cast<const uint8_t*>(p);
        break;
      case kBool:
        v = *reinterpret_cast<const uint8_t*>(p) != 0;
        break;
    }
    out[k] = v;
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++index[d] < t.size(d)) break;
      index[d] = 0;
    }
  }
  return out;
}

std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

std::string index_str(size_t flat, IntArrayRef sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    idx[d] = static_cast<int64_t>(flat) % sizes[d];
    flat /= static_cast<size_t>(sizes[d]);
  }
  return shape_str(idx);
}

/// PyTorch's default assert_close tolerances for a dtype.
std::pair<double, double> tolerances(ScalarType t) {
  switch (t) {
    case kFloat:
      return {1.3e-6, 1e-5};
    case kDouble:
      return {1e-7, 1e-7};
    case kHalf:
      return {1e-3, 1e-5};
    case kBFloat16:
      return {1.6e-2, 1e-5};
    default:
      return {0, 0};
  }
}

/// Sizes and dtype (and strides when asked) of `actual` against an expected entry.
void check_geometry(const Tensor& actual, const json& e, const std::string& what, bool strides) {
  if (!actual.defined()) throw Mismatch{what + ": undefined tensor"};
  const ScalarType dt = dtype_of(e.at("dtype").get<std::string>());
  if (actual.dtype() != dt) {
    throw Mismatch{what + ": dtype " + std::string(dtype_name(actual.dtype())) + ", expected " +
                   std::string(dtype_name(dt))};
  }
  const auto sizes = e.at("shape").get<std::vector<int64_t>>();
  if (actual.sizes() != IntArrayRef(sizes)) {
    throw Mismatch{what + ": shape " + shape_str(actual.sizes()) + ", expected " + shape_str(sizes)};
  }
  if (strides && actual.numel() > 0) {
    const auto st = e.at("strides").get<std::vector<int64_t>>();
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] > 1 && actual.stride(static_cast<int64_t>(d)) != st[d]) {
        throw Mismatch{what + ": strides " + shape_str(actual.strides()) + ", expected " + shape_str(st)};
      }
    }
  }
}

/// assert_close: same dtype and shape; |a - e| <= atol + rtol * |e| (exact for integers
/// and bool); NaN equals NaN; infinities must match exactly.
void check_close(const Tensor& actual, const Tensor& expected, const std::string& what,
                 std::optional<ScalarType> tol_dtype) {
  const auto a = values_of(actual);
  const auto e = values_of(expected);
  const auto [rtol, atol] = tolerances(tol_dtype.value_or(expected.dtype()));
  double max_abs = 0, max_rel = 0;
  int64_t first = -1, bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool both_nan = std::isnan(a[i]) && std::isnan(e[i]);
    const double diff = std::fabs(a[i] - e[i]);
    bool ok = both_nan || a[i] == e[i];
    if (!ok && std::isfinite(a[i]) && std::isfinite(e[i])) ok = diff <= atol + rtol * std::fabs(e[i]);
    if (!both_nan && !(a[i] == e[i])) {
      const double abs_err = std::isnan(diff) ? INFINITY : diff;
      max_abs = std::max(max_abs, abs_err);
      max_rel = std::max(max_rel, e[i] != 0 ? abs_err / std::fabs(e[i]) : INFINITY);
    }
    if (!ok) {
      ++bad;
      if (first < 0) first = static_cast<int64_t>(i);
    }
  }
  if (bad > 0) {
    std::ostringstream os;
    os.precision(9);
    os << what << ": " << bad << "/" << a.size() << " elements differ; first at " << index_str(first, expected.sizes())
       << ": got " << a[first] << ", expected " << e[first] << "; max abs error " << max_abs << ", max rel error "
       << max_rel << " (rtol " << rtol << ", atol " << atol << ")";
    throw Mismatch{os.str()};
  }
}

void check_output(const CaseFile& f, const Tensor& actual, const json& e, const std::string& what, bool values,
                  bool strides) {
  check_geometry(actual, e, what, strides);
  if (values && e.contains("ref")) check_close(actual, f.tensors.at(e.at("ref").get<std::string>()), what);
}

/// Flattens an op's result to the tensors matching the expected outputs, in order.
std::vector<std::pair<Tensor, json>> pair_outputs(const Stack& result, const json& expected) {
  std::vector<std::pair<Tensor, json>> out;
  if (result.size() != expected.size()) {
    throw Mismatch{"returned " + std::to_string(result.size()) + " values, expected " +
                   std::to_string(expected.size())};
  }
  for (size_t i = 0; i < result.size(); ++i) {
    const json& e = expected[i];
    if (e.contains("list")) {
      if (!result[i].is_tensor_list()) throw Mismatch{"output " + std::to_string(i) + " is not a tensor list"};
      const auto& list = result[i].to_tensor_list();
      if (list.size() != e.at("list").size()) {
        throw Mismatch{"output " + std::to_string(i) + " has " + std::to_string(list.size()) + " tensors, expected " +
                       std::to_string(e.at("list").size())};
      }
      for (size_t j = 0; j < list.size(); ++j) out.emplace_back(list[j], e.at("list")[j]);
    } else if (e.value("none", false)) {
      // An output left out by the op's output_mask: PyTorch returns None.
      if (!result[i].is_none()) throw Mismatch{"output " + std::to_string(i) + " is not None"};
    } else {
      if (!result[i].is_tensor()) throw Mismatch{"output " + std::to_string(i) + " is not a tensor"};
      out.emplace_back(result[i].to_tensor(), e);
    }
  }
  return out;
}

std::string filter() {
  const char* f = std::getenv("EMBER_CONFORMANCE_FILTER");
  return f ? f : "";
}

void Tally::fail(const std::string& op, const json& c, const char* prefix, const std::string& why) {
  ++failed;
  std::cout << "FAIL " << prefix << c.at("id").get<std::string>() << " [" << op << "] (" << c.value("desc", "")
            << "): " << why << "\n";
}

void Tally::report() const {
  std::cout << label << ": " << ops.size() << " ops, " << cases << " cases, " << failed << " failed" << std::endl;
  EXPECT_EQ(failed, 0);
}

Tensor grad_input(const ops::OpDef& op, const Stack& args, const json& in) {
  const std::string name = in.at("arg").get<std::string>();
  const int i = op.schema.index_of(name);
  if (i < 0) throw Mismatch{"gradient of argument '" + name + "', which is not in Ember's schema"};
  const IValue& v = args[static_cast<size_t>(i)];
  if (!in.contains("index")) {
    if (!v.is_tensor()) throw Mismatch{"gradient of argument '" + name + "', which is not a tensor"};
    return v.to_tensor();
  }
  const auto j = in.at("index").get<size_t>();
  if (v.is_tensor_list()) return v.to_tensor_list().at(j);
  const auto& opt = v.to_optional_tensor_list().at(j);
  if (!opt) throw Mismatch{"gradient of argument '" + name + "'[" + std::to_string(j) + "], which is None"};
  return *opt;
}

}  // namespace ember::conformance
