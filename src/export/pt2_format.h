// export/pt2_format.h — the pieces of torch.export's serialized schema (PyTorch 2.11,
// torch/_export/serde/schema.py) that both directions share: the archive's paths, the
// enum codes of dtypes, memory formats and layouts (rules as tables), tensor metadata
// and numbers as the JSON spells them. See Note [export].
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "ember/tensor.h"

namespace ember::exporting {

using json = nlohmann::json;

/// The schema major version Ember reads and writes, and the minor it writes (2.11's).
inline constexpr int kSchemaMajor = 8;
inline constexpr int kSchemaMinor = 17;

/// Paths inside the archive's root folder (torch/csrc/export/pt2_archive_constants.h).
inline constexpr std::string_view kArchiveFormatPath = "archive_format";
inline constexpr std::string_view kArchiveVersionPath = "archive_version";
inline constexpr std::string_view kModelJsonPath = "models/model.json";
inline constexpr std::string_view kWeightsDir = "data/weights/";
inline constexpr std::string_view kConstantsDir = "data/constants/";
inline constexpr std::string_view kWeightsConfigPath = "data/weights/model_weights_config.json";
inline constexpr std::string_view kConstantsConfigPath = "data/constants/model_constants_config.json";
inline constexpr std::string_view kSampleInputsPath = "data/sample_inputs/model.pt";

/// schema.ScalarType's code of a dtype, and back (nullopt for codes Ember has no dtype for).
int dtype_code(ScalarType t);
std::optional<ScalarType> dtype_of_code(int64_t code);
/// schema.MemoryFormat's code and Ember's spelling of it ("contiguous_format", …).
std::optional<std::string> memory_format_of_code(int64_t code);
int memory_format_code(std::string_view name);
/// schema.Layout: Ember has the strided layout only.
inline constexpr int kStridedLayout = 7;

/// A float as the schema writes it: a JSON number, or "Infinity", "-Infinity", "NaN".
double json_to_double(const json& j);
json double_to_json(double d);

/// The device of a schema.Device ({"type": "cpu", "index": null}).
Device json_to_device(const json& j);
json device_to_json(Device d);

/// Static geometry of a schema.TensorMeta; `where` names it in errors. A symbolic size,
/// stride or offset raises an Error naming the dim and the expression.
TensorMeta json_to_meta(const json& j, const std::string& where);
json meta_to_json(const TensorMeta& m, bool requires_grad = false);

/// Elements of storage a geometry reaches: offset + Σ(size-1)·stride + 1, or the offset
/// alone when a size is 0 (json_to_meta has checked that it fits).
int64_t storage_extent(const TensorMeta& m);

/// The integer of a schema.SymInt ({"as_int": 4}), or nullopt for an expression.
std::optional<int64_t> static_sym_int(const json& j);

}  // namespace ember::exporting
