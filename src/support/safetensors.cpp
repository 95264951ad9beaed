// support/safetensors.cpp — see safetensors.h. Validation follows the reference
// implementation (huggingface/safetensors): bounded header, no key twice, known dtypes,
// byte count == numel * element size, and the tensors' data_offsets tiling the data
// section exactly — no overlap, no gap, no trailing bytes (its "InvalidOffset" and
// "MetadataIncompleteBuffer"). Every error names the file, and the entry or byte offset.
#include "support/safetensors.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "ember/error.h"

namespace ember::support {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100u * 1000u * 1000u;  // the reference implementation's limit

[[noreturn]] void malformed(const std::string& source, const std::string& problem) {
  EMBER_FAIL() << "malformed safetensors file '" << source << "': " << problem;
}

uint64_t read_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

SafetensorsEntry parse_entry(const std::string& source, const std::string& name, const json& j, size_t data_size) {
  if (!j.is_object()) malformed(source, "entry '" + name + "' is not a JSON object");
  SafetensorsEntry e;
  auto dt = j.find("dtype");
  if (dt == j.end() || !dt->is_string()) malformed(source, "entry '" + name + "' has no string \"dtype\"");
  e.dtype = dt->get<std::string>();
  const size_t elem = safetensors_dtype_size(e.dtype);
  if (elem == 0) malformed(source, "entry '" + name + "' has unknown dtype \"" + e.dtype + "\"");

  auto sh = j.find("shape");
  if (sh == j.end() || !sh->is_array()) malformed(source, "entry '" + name + "' has no \"shape\" array");
  uint64_t numel = 1;
  // The product of the nonzero sizes: a contiguous stride, which must fit in an int64
  // even when another size is 0 and the tensor is empty.
  int64_t span = 1;
  bool overflow = false, span_overflow = false;
  for (const json& d : *sh) {
    if (!d.is_number_unsigned()) malformed(source, "entry '" + name + "' has a shape entry that is not a non-negative integer");
    const uint64_t v = d.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
    else if (v != 0 && numel > std::numeric_limits<uint64_t>::max() / v) overflow = true;
    else numel *= v;
    const int64_t size = static_cast<int64_t>(std::min<uint64_t>(v, std::numeric_limits<int64_t>::max()));
    if (__builtin_mul_overflow(span, std::max<int64_t>(size, 1), &span)) span_overflow = true;
    e.shape.push_back(size);
  }

  auto off = j.find("data_offsets");
  if (off == j.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned()) {
    malformed(source, "entry '" + name + "' needs \"data_offsets\": [begin, end] of non-negative integers");
  }
  const uint64_t begin = (*off)[0].get<uint64_t>();
  const uint64_t end = (*off)[1].get<uint64_t>();
  if (begin > end) {
    malformed(source, "entry '" + name + "' has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                          "] with begin after end");
  }
  if (end > data_size) {
    malformed(source, "entry '" + name + "' has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                          "] out of range of the " + std::to_string(data_size) + "-byte data section");
  }
  std::string shape = "[";
  for (size_t i = 0; i < e.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(e.shape[i]);
  shape += "]";
  if (overflow || numel > std::numeric_limits<uint64_t>::max() / elem || numel * elem != end - begin) {
    malformed(source, "entry '" + name + "' has shape " + shape + " of dtype " + e.dtype + " but " +
                          std::to_string(end - begin) + " bytes of data (shape/size mismatch)");
  }
  if (span_overflow) {
    malformed(source, "entry '" + name + "' has shape " + shape + ", whose contiguous strides do not fit in 64 bits");
  }
  e.begin = static_cast<size_t>(begin);
  e.end = static_cast<size_t>(end);
  return e;
}

}  // namespace

size_t safetensors_dtype_size(std::string_view dtype) {
  static const std::pair<std::string_view, size_t> kSizes[] = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},
      {"I16", 2}, {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"C64", 8}, {"C128", 16},
  };
  for (const auto& [name, size] : kSizes)
    if (name == dtype) return size;
  return 0;
}

SafetensorsFile decode_safetensors(std::vector<uint8_t> bytes, const std::string& source) {
  if (bytes.size() < 8) {
    malformed(source, "truncated: " + std::to_string(bytes.size()) + " bytes, fewer than the 8-byte header length");
  }
  const uint64_t header_len = read_le64(bytes.data());
  if (header_len > kMaxHeaderBytes) {
    malformed(source, "header length " + std::to_string(header_len) + " (bytes 0..7) exceeds the limit of " +
                          std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (header_len > bytes.size() - 8) {
    malformed(source, "header length " + std::to_string(header_len) + " is larger than the file (" +
                          std::to_string(bytes.size()) + " bytes)");
  }
  const char* header_begin = reinterpret_cast<const char*>(bytes.data() + 8);
  // A key given twice would leave one of its values silently unused: refuse it, as the
  // reference implementation does (serde rejects duplicate fields).
  std::vector<std::set<std::string>> keys;
  auto check_keys = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second) {
      malformed(source, "the header gives key '" + parsed.get<std::string>() + "' twice" +
                            (keys.size() > 1 ? " in one object" : ""));
    }
    return true;
  };
  json header;
  try {
    header = json::parse(header_begin, header_begin + header_len, check_keys);
  } catch (const json::parse_error& e) {
    // e.byte counts from 1 within the header, which starts at byte 8 of the file.
    malformed(source, "header is not valid JSON at byte " + std::to_string(8 + e.byte - (e.byte > 0)) +
                          " of the file: " + e.what());
  } catch (const json::exception& e) {
    malformed(source, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object())
    malformed(source, "header is not a JSON object (bytes 8.." + std::to_string(8 + header_len) + " of the file)");

  SafetensorsFile file;
  file.data_start = static_cast<size_t>(8 + header_len);
  const size_t data_size = bytes.size() - file.data_start;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) malformed(source, "\"__metadata__\" is not a JSON object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) malformed(source, "metadata value of '" + m.key() + "' is not a string");
        file.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    file.entries[it.key()] = parse_entry(source, it.key(), *it, data_size);
  }

  // The tensors tile the data section: sorted by offsets, each begins where the one
  // before ended (an empty tensor occupies no bytes but still sits at a boundary), and
  // the last ends at the end of the file.
  std::vector<std::pair<const std::string*, const SafetensorsEntry*>> order;
  for (const auto& [name, e] : file.entries) order.emplace_back(&name, &e);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second->begin, a.second->end) < std::pair(b.second->begin, b.second->end);
  });
  size_t at = 0;
  const std::string* previous = nullptr;
  for (const auto& [name, e] : order) {
    if (e->begin < at) {
      malformed(source, "entries '" + *previous + "' and '" + *name + "' have overlapping data_offsets");
    }
    if (e->begin > at) {
      malformed(source, "entry '" + *name + "' begins at data offset " + std::to_string(e->begin) + " (byte " +
                            std::to_string(file.data_start + e->begin) + " of the file), but " +
                            (previous ? "entry '" + *previous + "' ends" : std::string("the data section begins")) +
                            " at " + std::to_string(at) + ": " + std::to_string(e->begin - at) +
                            " bytes belong to no tensor");
    }
    at = e->end;
    previous = name;
  }
  if (at != data_size) {
    malformed(source, std::to_string(data_size - at) + " bytes after the last tensor's data (from byte " +
                          std::to_string(file.data_start + at) + " of the file) belong to no tensor");
  }
  file.bytes = std::move(bytes);
  return file;
}

std::vector<uint8_t> encode_safetensors(const std::map<std::string, SafetensorsView>& tensors,
                                        const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    EMBER_CHECK_VALUE(name != "__metadata__") << "safetensors: a tensor may not be named \"__metadata__\"";
    const size_t elem = safetensors_dtype_size(t.dtype);
    EMBER_CHECK_VALUE(elem != 0) << "safetensors: unknown dtype \"" << t.dtype << "\" for tensor '" << name << "'";
    size_t numel = 1;
    for (int64_t d : t.shape) {
      EMBER_CHECK_VALUE(d >= 0) << "safetensors: negative size in the shape of tensor '" << name << "'";
      numel *= static_cast<size_t>(d);
    }
    EMBER_CHECK_VALUE(numel * elem == t.data.size())
        << "safetensors: tensor '" << name << "' has " << t.data.size() << " bytes, expected " << numel * elem;
    header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<uint8_t> out(8 + text.size() + offset);
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(len >> (8 * i));
  std::copy(text.begin(), text.end(), out.begin() + 8);
  size_t pos = 8 + text.size();
  for (const auto& [name, t] : tensors) {
    std::copy(t.data.begin(), t.data.end(), out.begin() + static_cast<std::ptrdiff_t>(pos));
    pos += t.data.size();
  }
  return out;
}

SafetensorsFile read_safetensors_file(const std::string& path) {
  std::error_code ec;
  // A directory opens as a stream, then throws std::ios_base::failure on the first read.
  EMBER_CHECK(!std::filesystem::is_directory(path, ec))
      << "cannot read safetensors file '" << path << "': it is a directory";
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in.good()) << "cannot open safetensors file '" << path << "' for reading";
  std::vector<uint8_t> bytes;
  try {
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure& e) {
    EMBER_FAIL() << "error reading safetensors file '" << path << "': " << e.what();
  }
  EMBER_CHECK(!in.bad()) << "error reading safetensors file '" << path << "'";
  return decode_safetensors(std::move(bytes), path);
}

void write_safetensors_file(const std::string& path, const std::map<std::string, SafetensorsView>& tensors,
                            const std::map<std::string, std::string>& metadata) {
  std::vector<uint8_t> bytes = encode_safetensors(tensors, metadata);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  EMBER_CHECK(out.good()) << "cannot open safetensors file '" << path << "' for writing";
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  EMBER_CHECK(out.good()) << "error writing safetensors file '" << path << "'";
}

}  // namespace ember::support
