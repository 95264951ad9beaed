// export/pt2_format.cpp — the shared tables and conversions of the .pt2 schema (see pt2_format.h).
#include "export/pt2_format.h"

#include <cmath>
#include <limits>

#include "ember/error.h"

namespace ember::exporting {
namespace {

struct DtypeRow {
  int code;
  ScalarType dtype;
};
// schema.ScalarType codes of the dtypes Ember has (complex32 and float8 have none here).
constexpr DtypeRow kDtypes[] = {
    {1, kUInt8}, {2, kInt8}, {3, kInt16}, {4, kInt32}, {5, kInt64}, {6, kHalf},
    {7, kFloat}, {8, kDouble}, {10, kComplexFloat}, {11, kComplexDouble}, {12, kBool}, {13, kBFloat16},
};

struct FormatRow {
  int code;
  const char* name;
};
constexpr FormatRow kMemoryFormats[] = {
    {1, "contiguous_format"}, {2, "channels_last"}, {3, "channels_last_3d"}, {4, "preserve_format"},
};

}  // namespace

int dtype_code(ScalarType t) {
  for (const DtypeRow& r : kDtypes)
    if (r.dtype == t) return r.code;
  EMBER_INTERNAL_ASSERT(false) << "no schema code for dtype " << t;
  return 0;
}

std::optional<ScalarType> dtype_of_code(int64_t code) {
  for (const DtypeRow& r : kDtypes)
    if (r.code == code) return r.dtype;
  return std::nullopt;
}

std::optional<std::string> memory_format_of_code(int64_t code) {
  for (const FormatRow& r : kMemoryFormats)
    if (r.code == code) return std::string(r.name);
  return std::nullopt;
}

int memory_format_code(std::string_view name) {
  for (const FormatRow& r : kMemoryFormats)
    if (name == r.name) return r.code;
  EMBER_CHECK_VALUE(false) << "no torch.export memory format for '" << name << "'";
  return 0;
}

double json_to_double(const json& j) {
  if (j.is_number()) return j.get<double>();
  EMBER_CHECK_VALUE(j.is_string()) << "expected a float, got " << j.dump();
  const std::string s = j.get<std::string>();
  if (s == "Infinity") return std::numeric_limits<double>::infinity();
  if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  EMBER_CHECK_VALUE(false) << "expected a float or Infinity/-Infinity/NaN, got \"" << s << "\"";
  return 0;
}

json double_to_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return d;
}

Device json_to_device(const json& j) {
  const std::string type = j.at("type").get<std::string>();
  const json& index = j.contains("index") ? j.at("index") : json();
  std::string spec = type;
  if (!index.is_null()) spec += ":" + std::to_string(index.get<int64_t>());
  EMBER_CHECK_VALUE(type == "cpu" || type == "cuda" || type == "meta")
      << "expected a cpu, cuda or meta device, got '" << spec << "'";
  return Device(std::string_view(spec));
}

json device_to_json(Device d) {
  json j;
  j["type"] = d.is_cpu() ? "cpu" : d.is_meta() ? "meta" : "cuda";
  j["index"] = d.index < 0 ? json() : json(static_cast<int>(d.index));
  return j;
}

std::optional<int64_t> static_sym_int(const json& j) {
  if (j.contains("as_int")) return j.at("as_int").get<int64_t>();
  return std::nullopt;
}

TensorMeta json_to_meta(const json& j, const std::string& where) {
  TensorMeta m;
  const int64_t code = j.at("dtype").get<int64_t>();
  const auto dtype = dtype_of_code(code);
  EMBER_CHECK_TYPE(dtype.has_value()) << where << ": dtype code " << code
                                      << " (torch.export's ScalarType) has no Ember dtype";
  m.dtype = *dtype;
  m.device = json_to_device(j.at("device"));
  EMBER_CHECK_VALUE(j.value("layout", kStridedLayout) == kStridedLayout)
      << where << ": layout code " << j.at("layout").dump() << " is not torch.strided, the one layout Ember has";
  auto ints = [&](const json& list, const char* what) {
    std::vector<int64_t> out;
    for (size_t d = 0; d < list.size(); ++d) {
      const auto v = static_sym_int(list.at(d));
      EMBER_CHECK_VALUE(v.has_value()) << where << ": " << what << " of dim " << d << " is symbolic ("
                                       << list.at(d).dump() << "); Ember imports static shapes only";
      out.push_back(*v);
    }
    return out;
  };
  m.sizes = ints(j.at("sizes"), "the size");
  m.strides = ints(j.at("strides"), "the stride");
  EMBER_CHECK_VALUE(m.sizes.size() == m.strides.size())
      << where << ": " << m.sizes.size() << " sizes but " << m.strides.size() << " strides";
  for (size_t d = 0; d < m.sizes.size(); ++d)
    EMBER_CHECK_VALUE(m.sizes[d] >= 0 && m.strides[d] >= 0 && m.sizes[d] < (int64_t{1} << 40) &&
                      m.strides[d] < (int64_t{1} << 40))
        << where << ": size " << m.sizes[d] << " or stride " << m.strides[d] << " of dim " << d << " is out of range";
  const auto offset = static_sym_int(j.at("storage_offset"));
  EMBER_CHECK_VALUE(offset.has_value() && *offset >= 0 && *offset < (int64_t{1} << 40))
      << where << ": the storage offset " << j.at("storage_offset").dump() << " is symbolic or out of range";
  m.storage_offset = *offset;
  // The storage the geometry reaches must fit in 64-bit byte offsets, so that no reader
  // of the graph computes a size that wraps (as the graph text parser requires).
  int64_t extent = m.storage_offset + 1, term = 0;
  bool empty = false;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    empty = empty || m.sizes[d] == 0;
    const bool overflow = __builtin_mul_overflow(std::max<int64_t>(m.sizes[d] - 1, 0), m.strides[d], &term) ||
                          __builtin_add_overflow(extent, term, &extent);
    EMBER_CHECK_VALUE(!overflow) << where << ": sizes and strides reach past 64-bit offsets";
  }
  int64_t bytes = 0;
  EMBER_CHECK_VALUE(empty || !__builtin_mul_overflow(extent, static_cast<int64_t>(element_size(m.dtype)), &bytes))
      << where << ": sizes and strides reach past 64-bit offsets";
  return m;
}

int64_t storage_extent(const TensorMeta& m) {
  int64_t extent = m.storage_offset + 1;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (m.sizes[d] == 0) return m.storage_offset;
    extent += (m.sizes[d] - 1) * m.strides[d];
  }
  return extent;
}

json meta_to_json(const TensorMeta& m, bool requires_grad) {
  json j;
  j["dtype"] = dtype_code(m.dtype);
  j["sizes"] = json::array();
  j["strides"] = json::array();
  for (int64_t s : m.sizes) j["sizes"].push_back({{"as_int", s}});
  for (int64_t s : m.strides) j["strides"].push_back({{"as_int", s}});
  j["requires_grad"] = requires_grad;
  j["device"] = device_to_json(m.device);
  j["storage_offset"] = {{"as_int", m.storage_offset}};
  j["layout"] = kStridedLayout;
  return j;
}

}  // namespace ember::exporting
