// tests/ops/case_runner.cpp — see case_runner.h.
#include "case_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/serialize.h"
#include "ops/dispatch.h"

namespace ember::conformance {

namespace fs = std::filesystem;

std::vector<CaseFile> load_case_files(const std::string& dir) {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(dir))
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

/// Rebuilds an input: a fresh copy of the stored base on `device` (on meta: a meta tensor
/// of its sizes), then the recorded view transforms through Ember's own view ops.
Tensor rebuild(const CaseFile& f, const json& ref, Device device) {
  const std::string name = ref.at("ref").get<std::string>();
  auto it = f.tensors.find(name);
  if (it == f.tensors.end()) throw Mismatch{"tensor '" + name + "' missing from " + f.family + ".safetensors"};
  const Tensor& base = it->second;
  Tensor t = device.is_meta()   ? empty(base.sizes(), TensorOptions(base.dtype()).device(kMeta))
             : device.is_cuda() ? base.to(device)
                                : base.clone();
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

IValue build_arg(const CaseFile& f, const json& a, Device device) {
  const std::string type = a.at("type").get<std::string>();
  if (type == "None") return IValue();
  if (type == "Tensor") return rebuild(f, a, device);
  if (type == "Tensor[]") {
    std::vector<Tensor> list;
    for (const json& r : a.at("value")) list.push_back(rebuild(f, r, device));
    return list;
  }
  if (type == "Tensor?[]") {
    std::vector<std::optional<Tensor>> list;
    for (const json& r : a.at("value"))
      list.push_back(r.is_null() ? std::nullopt : std::optional<Tensor>(rebuild(f, r, device)));
    return list;
  }
  if (type == "Device") return device;
  const json& v = a.at("value");
  if (type == "int") return v.get<int64_t>();
  if (type == "float") return number(v);
  if (type == "bool") return v.get<bool>();
  if (type == "int[]") return v.get<std::vector<int64_t>>();
  if (type == "bool[]") return v.get<std::vector<bool>>();
  if (type == "float[]") {
    std::vector<double> list;
    for (const json& e : v) list.push_back(number(e));
    return list;
  }
  if (type == "str") return v.get<std::string>();
  if (type == "ScalarType") return dtype_of(v.get<std::string>());
  if (type == "Scalar") {
    const std::string kind = a.at("kind").get<std::string>();
    if (kind == "bool") return Scalar(v.get<bool>());
    if (kind == "int") return Scalar(v.get<int64_t>());
    return Scalar(number(v));
  }
  throw Mismatch{"unknown argument type '" + type + "'"};
}

}  // namespace

Stack build_stack(const CaseFile& f, const ops::OpDef& op, const json& c, Device device) {
  const bool meta = device.is_meta();
  const auto& schema = op.schema;
  std::vector<std::optional<IValue>> slots(schema.arguments.size());
  for (const json& a : c.at("args")) {
    const std::string name = a.at("name").get<std::string>();
    const int i = schema.index_of(name);
    if (i < 0) throw Mismatch{"argument '" + name + "' is not in Ember's schema " + schema.str()};
    slots[i] = build_arg(f, a, device);
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

/// Element i (row-major) of any tensor, as double; a complex tensor's real and imaginary
/// parts interleaved (those of its real view).
std::vector<double> values_of(const Tensor& t) {
  if (t.is_cuda()) return values_of(t.cpu());
  if (is_complex(t.dtype())) return values_of(view_as_real(t));
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
      case kComplexFloat:
      case kComplexDouble:
        break;  // read through the real view above
    }
    out[k] = v;
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++index[d] < t.size(d)) break;
      index[d] = 0;
    }
  }
  return out;
}

bool complex_close(Complex a, Complex e, double rtol, double atol) {
  const bool a_nan = std::isnan(a.real()) || std::isnan(a.imag()), e_nan = std::isnan(e.real()) || std::isnan(e.imag());
  if (a_nan || e_nan) return a_nan && e_nan;
  if (a == e) return true;
  return std::abs(a - e) <= atol + rtol * std::abs(e);
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

/// PyTorch's default assert_close tolerances for a dtype (a complex type's are those of
/// its parts' type).
std::pair<double, double> tolerances(ScalarType t) {
  switch (to_real_value_type(t)) {
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

TensorSlots::TensorSlots(const Stack& s) {
  for (const IValue& v : s) {
    if (v.is_tensor()) tensors.push_back(v.to_tensor());
    if (v.is_tensor_list())
      for (const Tensor& t : v.to_tensor_list()) tensors.push_back(t);
    if (v.is_optional_tensor_list())
      for (const auto& t : v.to_optional_tensor_list())
        if (t) tensors.push_back(*t);
  }
}

Stack TensorSlots::with(Stack s, const std::vector<Tensor>& ts, size_t first) {
  size_t k = first;
  for (IValue& v : s) {
    if (v.is_tensor()) v = ts.at(k++);
    if (v.is_tensor_list()) {
      std::vector<Tensor> list = v.to_tensor_list();
      for (Tensor& t : list) t = ts.at(k++);
      v = list;
    }
    if (v.is_optional_tensor_list()) {
      std::vector<std::optional<Tensor>> list = v.to_optional_tensor_list();
      for (auto& t : list)
        if (t) t = ts.at(k++);
      v = list;
    }
  }
  return s;
}

std::vector<Tensor> call_each(const ops::OpDef& op, const std::vector<const Stack*>& stacks,
                              const std::vector<size_t>& num_inputs, const std::vector<Tensor>& ts,
                              std::vector<size_t>& out_counts) {
  std::vector<Tensor> outs;
  size_t first = 0;
  for (size_t k = 0; k < stacks.size(); ++k) {
    const std::optional<std::vector<Tensor>> r = result_tensors(ops::call(op, TensorSlots::with(*stacks[k], ts, first)));
    EMBER_CHECK(r) << "not tensors";
    out_counts[k] = r->size();
    outs.insert(outs.end(), r->begin(), r->end());
    first += num_inputs[k];
  }
  return outs;
}

std::optional<std::vector<Tensor>> result_tensors(const Stack& r) {
  std::vector<Tensor> out;
  for (const IValue& v : r) {
    if (v.is_tensor())
      out.push_back(v.to_tensor());
    else if (v.is_tensor_list())
      for (const Tensor& t : v.to_tensor_list()) out.push_back(t);
    else if (!v.is_none())
      return std::nullopt;
  }
  return out;
}

void check_same(const Tensor& got, const Tensor& want, const std::string& what, bool values, bool strides) {
  if (got.sizes() != want.sizes() || got.dtype() != want.dtype())
    throw Mismatch{what + ": " + shape_str(got.sizes()) + " " + std::string(scalar_type_name(got.dtype())) +
                   ", eager gives " + shape_str(want.sizes()) + " " + std::string(scalar_type_name(want.dtype()))};
  if (strides && got.numel() > 0)
    for (int64_t d = 0; d < want.dim(); ++d)
      if (want.size(d) > 1 && got.stride(d) != want.stride(d))
        throw Mismatch{what + ": strides " + shape_str(got.strides()) + ", eager gives " + shape_str(want.strides())};
  if (!values) return;
  const auto [rtol, atol] = tolerances(want.dtype());
  const std::vector<double> g = values_of(got), w = values_of(want);
  if (is_complex(want.dtype())) {
    for (size_t i = 0; i < g.size() / 2; ++i) {
      const Complex a{g[2 * i], g[2 * i + 1]}, e{w[2 * i], w[2 * i + 1]};
      if (complex_close(a, e, rtol, atol)) continue;
      std::ostringstream os;
      os.precision(9);
      os << what << " at " << index_str(i, want.sizes()) << ": compiled " << a << ", eager " << e;
      throw Mismatch{os.str()};
    }
    return;
  }
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) ? std::isnan(g[i]) : (g[i] == w[i] || std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i])))
      continue;
    std::ostringstream os;
    os.precision(9);
    os << what << " at " << index_str(i, want.sizes()) << ": compiled " << g[i] << ", eager " << w[i];
    throw Mismatch{os.str()};
  }
}

std::vector<CasesOfOp> cases_by_op(const std::vector<CaseFile>& files) {
  std::vector<CasesOfOp> out;
  std::map<std::string, size_t> index;
  const std::string only = filter();
  for (const CaseFile& f : files)
    for (const json& c : f.doc.at("cases")) {
      const std::string name = c.at("op").get<std::string>();
      if (!only.empty() && name.find(only) == std::string::npos) continue;
      auto [it, fresh] = index.emplace(name, out.size());
      if (fresh) out.push_back({name, {}});
      out[it->second].second.emplace_back(&f, &c);
    }
  // EMBER_CONFORMANCE_SHARD="i/n": the ops at positions i, i + n, … only, so that n
  // processes share a run (a GPU machine's cores compiling kernels side by side).
  if (const char* shard = std::getenv("EMBER_CONFORMANCE_SHARD")) {
    int i = 0, n = 1;
    if (std::sscanf(shard, "%d/%d", &i, &n) != 2 || n < 1 || i < 0 || i >= n)
      throw std::runtime_error(std::string("EMBER_CONFORMANCE_SHARD is '") + shard + "', expected i/n with 0 <= i < n");
    std::vector<CasesOfOp> kept;
    for (size_t k = static_cast<size_t>(i); k < out.size(); k += static_cast<size_t>(n))
      kept.push_back(std::move(out[k]));
    out = std::move(kept);
  }
  return out;
}

bool runs_eagerly(const CaseFile& f, const ops::OpDef& op, const json& c) {
  if (c.at("expect").contains("error")) return false;
  try {
    return result_tensors(ops::call(op, build_stack(f, op, c, /*meta=*/false))).has_value();
  } catch (const std::exception&) {
    return false;
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
  if (is_complex(expected.dtype())) {
    int64_t first = -1, bad = 0;
    double max_abs = 0;
    for (size_t i = 0; i < a.size() / 2; ++i) {
      const Complex x{a[2 * i], a[2 * i + 1]}, y{e[2 * i], e[2 * i + 1]};
      if (complex_close(x, y, rtol, atol)) continue;
      ++bad;
      max_abs = std::max(max_abs, std::abs(x - y));
      if (first < 0) first = static_cast<int64_t>(i);
    }
    if (bad == 0) return;
    std::ostringstream os;
    os.precision(9);
    const auto f = static_cast<size_t>(first);
    os << what << ": " << bad << "/" << a.size() / 2 << " complex elements differ; first at "
       << index_str(f, expected.sizes()) << ": got " << Complex{a[2 * f], a[2 * f + 1]} << ", expected "
       << Complex{e[2 * f], e[2 * f + 1]} << "; max abs error " << max_abs << " (rtol " << rtol << ", atol " << atol
       << ", on the complex modulus as torch.isclose)";
    throw Mismatch{os.str()};
  }
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
    } else if (result[i].is_none() && e.contains("cpu") && e.at("cpu").value("none", false)) {
      // PyTorch's CPU leaves this output out and its device does not (gen_cases.py,
      // mark_device_differences): Ember leaving it out too is its CPU's behaviour.
      continue;
    } else {
      if (!result[i].is_tensor()) throw Mismatch{"output " + std::to_string(i) + " is not a tensor"};
      out.emplace_back(result[i].to_tensor(), e);
    }
  }
  return out;
}

bool trace_cases() {
  static const bool on = std::getenv("EMBER_CONFORMANCE_TRACE") != nullptr;
  return on;
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
  if (!skipped.empty()) {
    int64_t n = 0;
    std::ostringstream why;
    for (const auto& [op, count] : skipped) {
      n += count;
      why << (why.tellp() > 0 ? ", " : "") << op << " (" << count << ")";
    }
    std::cout << label << ": " << n << " cases skipped, reaching ops without a kernel for their device: "
              << why.str() << std::endl;
  }
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

// --- running a case -----------------------------------------------------------------

namespace {

const Tensor* first_tensor_arg(const Stack& args) {
  for (const auto& a : args)
    if (a.is_tensor()) return &a.to_tensor();
  return nullptr;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

/// An error saying that an op has no kernel for `device` ("Could not run 'aten::mm' with
/// arguments from the 'CUDA' backend", ops/dispatch.cpp) becomes NoKernel naming that op.
void throw_if_no_kernel(const Error& e, Device device) {
  if (!device.is_cuda() || e.kind() != ErrorKind::NotImplementedError) return;
  const std::string msg = e.what();
  const std::string head = "Could not run '";
  const size_t at = msg.find(head);
  if (at == std::string::npos || msg.find("with arguments from the 'CUDA' backend", at) == std::string::npos) return;
  const size_t start = at + head.size();
  throw NoKernel{msg.substr(start, msg.find('\'', start) - start)};
}

/// An output entry recorded on a device names its type ("cuda"): Ember's output must be
/// on that device type too.
void check_device(const Tensor& actual, const json& e, const std::string& what) {
  if (!e.contains("device") || !actual.defined()) return;
  const Device want(e.at("device").get<std::string>());
  if (actual.device().type != want.type)
    throw Mismatch{what + ": on " + actual.device().str() + ", PyTorch's is on " + want.str()};
}

}  // namespace

/// Random ops: statistics of Ember's sample against PyTorch's distribution.
void check_stat(const Stack& args, const std::vector<std::pair<Tensor, json>>& outs, const json& stat) {
  const std::string kind = stat.at("kind").get<std::string>();
  const Tensor& out = outs.at(0).first;
  const auto v = values_of(out);
  if (v.empty()) return;
  const double m = mean_of(v);
  auto near = [&](double got, const char* name, double want, double tol) {
    if (std::fabs(got - want) > tol) {
      std::ostringstream os;
      os << kind << " " << name << " " << got << ", PyTorch's distribution gives " << want << " (tolerance " << tol
         << ")";
      throw Mismatch{os.str()};
    }
  };
  if (kind == "uniform" || kind == "normal") {
    double var = 0;
    for (double x : v) var += (x - m) * (x - m);
    const double sd = std::sqrt(var / static_cast<double>(v.size() > 1 ? v.size() - 1 : 1));
    if (kind == "uniform") {
      const double lo = stat.at("low").get<double>(), hi = stat.at("high").get<double>();
      for (size_t i = 0; i < v.size(); ++i) {
        const bool upper_ok = is_reduced_float(out.dtype()) ? v[i] <= hi : v[i] < hi;
        if (!(v[i] >= lo && upper_ok)) {
          throw Mismatch{"uniform value " + std::to_string(v[i]) + " at " + index_str(i, out.sizes()) + " outside [" +
                         std::to_string(lo) + ", " + std::to_string(hi) + ")"};
        }
      }
    }
    near(m, "mean", stat.at("mean").get<double>(), stat.at("tol_mean").get<double>());
    near(sd, "std", stat.at("std").get<double>(), stat.at("tol_std").get<double>());
  } else if (kind == "bernoulli") {
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] != 0 && v[i] != 1) throw Mismatch{"bernoulli value " + std::to_string(v[i]) + " is neither 0 nor 1"};
    near(m, "mean", stat.at("mean").get<double>(), stat.at("tol_mean").get<double>());
  } else if (kind == "dropout") {
    const Tensor* input = first_tensor_arg(args);
    if (!input) throw Mismatch{"dropout case without an input tensor"};
    const auto in = values_of(*input);
    const double p = stat.at("p").get<double>();
    const bool train = stat.at("train").get<bool>();
    const double scale = train ? (p == 1 ? 0 : 1 / (1 - p)) : 1;
    std::vector<double> keep(v.size());
    if (outs.size() > 1)
      keep = values_of(outs[1].first);
    else
      for (size_t i = 0; i < v.size(); ++i) keep[i] = v[i] != 0;
    const auto [rtol, atol] = tolerances(out.dtype());
    for (size_t i = 0; i < v.size(); ++i) {
      const double want = keep[i] != 0 ? in[i] * scale : 0;
      if (std::fabs(v[i] - want) > atol + rtol * std::fabs(want) + 1e-7) {
        throw Mismatch{"dropout output " + std::to_string(v[i]) + " at " + index_str(i, out.sizes()) + ", expected " +
                       std::to_string(want) + " (input " + std::to_string(in[i]) + ", kept " + std::to_string(keep[i]) +
                       ")"};
      }
    }
    near(mean_of(keep), "kept fraction", stat.at("keep_mean").get<double>(), stat.at("tol_mean").get<double>());
  } else if (kind == "permutation") {
    // randperm: each of 0 … n-1 exactly once (the order is the generator's).
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (sorted[i] != static_cast<double>(i)) {
        throw Mismatch{"not a permutation of 0 … " + std::to_string(sorted.size() - 1) + ": sorted, position " +
                       std::to_string(i) + " holds " + std::to_string(sorted[i])};
      }
    }
    if (static_cast<int64_t>(v.size()) != stat.at("n").get<int64_t>()) throw Mismatch{"permutation of the wrong length"};
  } else {
    throw Mismatch{"unknown statistical check '" + kind + "'"};
  }
}

/// Views: an output PyTorch returns as a view of (or as) argument `view_of` must have
/// PyTorch's strides on every dim (size-1 dims too: a later view or a compiled graph
/// recorded by PyTorch reads them) and its storage offset, and (off meta) share that
/// argument's storage; an output PyTorch returns as a new tensor must share no
/// argument's storage (a write to it would show through the input).
void check_aliasing(const Tensor& actual, const json& e, const ops::OpDef& op, const Stack& args,
                    const std::string& what, bool meta) {
  if (!actual.defined()) return;
  if (e.contains("view_of")) {
    const auto st = e.at("strides").get<std::vector<int64_t>>();
    if (actual.strides() != IntArrayRef(st))
      throw Mismatch{what + ": strides " + shape_str(actual.strides()) + ", PyTorch's view has " + shape_str(st)};
    const auto offset = e.at("storage_offset").get<int64_t>();
    if (actual.storage_offset() != offset) {
      throw Mismatch{what + ": storage offset " + std::to_string(actual.storage_offset()) + ", PyTorch's view has " +
                     std::to_string(offset)};
    }
    if (meta) return;
    const std::string name = e.at("view_of").get<std::string>();
    const int i = op.schema.index_of(name);
    if (i < 0 || !args[static_cast<size_t>(i)].is_tensor())
      throw Mismatch{"view_of names no tensor argument '" + name + "'"};
    if (actual.storage() != args[static_cast<size_t>(i)].to_tensor().storage())
      throw Mismatch{what + ": a new tensor; PyTorch returns a view of argument '" + name + "'"};
    return;
  }
  if (meta || actual.numel() == 0) return;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_tensor() && args[i].to_tensor().defined() && args[i].to_tensor().storage() == actual.storage()) {
      throw Mismatch{what + ": a view of argument '" + op.schema.arguments[i].name + "'; PyTorch returns a new tensor"};
    }
  }
}

CaseRun run_case(const CaseFile& f, const ops::OpDef& op, const json& c, Device device) {
  Stack args = build_stack(f, op, c, device);
  const Stack kept = args;  // handles to the inputs, to check in-place writes afterwards
  const json& expect = c.at("expect");
  if (expect.contains("error")) {
    try {
      ops::call(op, args);
    } catch (const InternalError& e) {
      throw Mismatch{"expected a user error (" + expect.at("error").get<std::string>() + ": " +
                     expect.value("message", "") + "), got an internal error: " + e.what()};
    } catch (const Error& e) {
      throw_if_no_kernel(e, device);
      return {kept, {}};
    }
    throw Mismatch{"PyTorch raises " + expect.at("error").get<std::string>() + " (" + expect.value("message", "") +
                   "), Ember returned normally"};
  }
  Stack result;
  try {
    result = ops::call(op, args);
  } catch (const Error& e) {
    throw_if_no_kernel(e, device);
    throw Mismatch{std::string("raised ") + error_kind_name(e.kind()) + ": " + e.what()};
  }
  const bool values = c.value("values", true) && !expect.contains("stat");
  const bool strides = c.value("check_strides", false);
  auto outs = pair_outputs(result, expect.at("outputs"));
  for (size_t i = 0; i < outs.size(); ++i) {
    check_output(f, outs[i].first, outs[i].second, "output " + std::to_string(i), values, strides);
    check_device(outs[i].first, outs[i].second, "output " + std::to_string(i));
    check_aliasing(outs[i].first, outs[i].second, op, kept, "output " + std::to_string(i), /*meta=*/false);
  }
  for (const json& m : expect.value("mutated", json::array())) {
    const std::string name = m.at("arg").get<std::string>();
    const int i = op.schema.index_of(name);
    if (i < 0 || !kept[i].is_tensor()) throw Mismatch{"mutated argument '" + name + "' not found"};
    check_output(f, kept[i].to_tensor(), m, "argument '" + name + "' after the call", values, false);
  }
  if (expect.contains("stat")) check_stat(kept, outs, expect.at("stat"));
  return {kept, std::move(result)};
}

void run_grad(const CaseFile& f, const ops::OpDef& op, const json& c, Device device) {
  EnableGradGuard enable;
  Stack args = build_stack(f, op, c, device);
  const json& g = c.at("grads");
  std::vector<Tensor> inputs;
  for (const json& in : g.at("inputs")) {
    Tensor t = grad_input(op, args, in);
    t.requires_grad_();
    inputs.push_back(t);
  }
  // In-place ops write a clone of their leaf input, as the generator did.
  for (const json& name : g.value("clone_written", json::array())) {
    const int i = op.schema.index_of(name.get<std::string>());
    if (i < 0 || !args[static_cast<size_t>(i)].is_tensor())
      throw Mismatch{"clone_written: no tensor argument " + name.dump()};
    args[static_cast<size_t>(i)] = args[static_cast<size_t>(i)].to_tensor().clone();
  }
  Stack result;
  try {
    result = ops::call(op, args);
  } catch (const Error& e) {
    throw_if_no_kernel(e, device);
    throw Mismatch{std::string("[grad] forward raised ") + error_kind_name(e.kind()) + ": " + e.what()};
  }
  std::vector<Tensor> flat;
  for (const IValue& r : result) {
    if (r.is_tensor_list()) {
      for (const Tensor& t : r.to_tensor_list()) flat.push_back(t);
    } else if (r.is_tensor()) {
      flat.push_back(r.to_tensor());
    }
  }
  const json& up = g.at("upstream");
  if (up.size() != flat.size()) {
    throw Mismatch{"[grad] " + std::to_string(flat.size()) + " outputs, PyTorch has " + std::to_string(up.size())};
  }
  std::vector<Tensor> outs, ups;
  for (size_t k = 0; k < flat.size(); ++k) {
    if (up[k].is_null()) continue;
    outs.push_back(flat[k]);
    ups.push_back(f.tensors.at(up[k].get<std::string>()).to(device).clone());
  }
  std::vector<Tensor> got;
  try {
    got = autograd::grad(outs, inputs, ups, /*retain_graph=*/false, /*allow_unused=*/true);
  } catch (const Error& e) {
    throw_if_no_kernel(e, device);
    throw Mismatch{std::string("[grad] autograd::grad raised ") + error_kind_name(e.kind()) + ": " + e.what()};
  }
  if (got.size() != inputs.size()) throw Mismatch{"[grad] autograd::grad returned the wrong number of gradients"};
  for (size_t k = 0; k < inputs.size(); ++k) {
    const json& in = g.at("inputs")[k];
    const std::string what = "gradient of '" + in.at("arg").get<std::string>() +
                             (in.contains("index") ? "'[" + std::to_string(in.at("index").get<int64_t>()) + "]" : "'");
    if (in.at("ref").is_null()) {
      if (got[k].defined()) {
        for (double v : values_of(got[k]))
          if (v != 0) throw Mismatch{what + ": PyTorch gives none (unused input), Ember a nonzero gradient"};
      }
      continue;
    }
    const Tensor& expected = f.tensors.at(in.at("ref").get<std::string>());
    if (!got[k].defined()) {
      for (double v : values_of(expected))
        if (v != 0) throw Mismatch{what + ": Ember gives none, PyTorch a nonzero gradient"};
      continue;
    }
    if (got[k].device().type != device.type)
      throw Mismatch{what + ": on " + got[k].device().str() + ", expected " + device.str()};
    if (got[k].dtype() != expected.dtype()) {
      throw Mismatch{what + ": dtype " + std::string(dtype_name(got[k].dtype())) + ", expected " +
                     std::string(dtype_name(expected.dtype()))};
    }
    if (got[k].sizes() != expected.sizes()) {
      throw Mismatch{what + ": shape " + shape_str(got[k].sizes()) + ", expected " + shape_str(expected.sizes())};
    }
    // tol_dtype: the gradient was computed in a lower precision than the input's (the
    // case's grads.tol_reason says why).
    std::optional<ScalarType> tol;
    if (in.contains("tol_dtype")) tol = dtype_of(in.at("tol_dtype").get<std::string>());
    check_close(got[k], expected, what, tol);
  }
}

}  // namespace ember::conformance
