// support/safetensors.h — the safetensors file format at the byte level: an 8-byte
// little-endian header length, a JSON header {name: {dtype, shape, data_offsets}} with an
// optional "__metadata__" {str: str}, then the raw little-endian tensor bytes. Knows no
// Tensor (core/serialize.cpp builds tensors on top); every malformed input raises an
// ember::Error naming the file and the problem, never reads out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ember::support {

/// One tensor of a safetensors file: dtype as the format spells it ("F32", "BOOL", …),
/// shape, and where its bytes lie in the data section.
struct SafetensorsEntry {
  std::string dtype;
  std::vector<int64_t> shape;
  size_t begin = 0;  // offsets into the data section (after the header)
  size_t end = 0;
};

/// A decoded file: the whole byte buffer, the entries pointing into it, and metadata.
struct SafetensorsFile {
  std::vector<uint8_t> bytes;
  size_t data_start = 0;  // where the data section begins in `bytes`
  std::map<std::string, SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;

  /// The bytes of one entry (valid while this object lives).
  std::span<const uint8_t> data(const SafetensorsEntry& e) const {
    return {bytes.data() + data_start + e.begin, e.end - e.begin};
  }
};

/// One tensor to write: its bytes must be exactly prod(shape) * dtype size.
struct SafetensorsView {
  std::string dtype;
  std::vector<int64_t> shape;
  std::span<const uint8_t> data;
};

/// Bytes per element of a safetensors dtype name; 0 for an unknown name.
size_t safetensors_dtype_size(std::string_view dtype);

/// Parses a whole file image; `source` names the file in error messages.
SafetensorsFile decode_safetensors(std::vector<uint8_t> bytes, const std::string& source);
/// Builds a file image (header padded with spaces to a multiple of 8, as the reference
/// implementation writes it; tensors laid out in name order).
std::vector<uint8_t> encode_safetensors(const std::map<std::string, SafetensorsView>& tensors,
                                        const std::map<std::string, std::string>& metadata);

SafetensorsFile read_safetensors_file(const std::string& path);
void write_safetensors_file(const std::string& path, const std::map<std::string, SafetensorsView>& tensors,
                            const std::map<std::string, std::string>& metadata);

}  // namespace ember::support
