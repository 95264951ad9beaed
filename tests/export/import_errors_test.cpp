// What load_exported and an imported program refuse, each with an ember::Error saying
// what was expected and what came: files that are not archives, truncated or corrupt
// archives, unknown schema versions, ops Ember lacks, symbolic sizes Ember's graphs cannot hold, and user inputs of the
// wrong number, names, sizes or dtypes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ember/ember.h"
#include "ember/export.h"
#include "export/pt2_format.h"
#include "export/zip_archive.h"

namespace ember {
namespace {

std::string program_path(const std::string& name) { return std::string(EMBER_EXPORT_PROGRAMS_DIR) + "/" + name; }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ember_export_" + std::to_string(getpid()) + "_" + name)).string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

/// The message of the ember::Error `f` raises (failing the test when it raises none, or
/// raises an internal error).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InternalError& e) {
    ADD_FAILURE() << "internal error: " << e.what();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error raised";
  return "";
}

/// mlp.pt2 with one entry's text edited by `edit`, written to a temporary file.
std::string edited_archive(const std::string& entry, const std::function<void(std::string&)>& edit) {
  auto zip = exporting::read_zip(program_path("mlp.pt2"));
  std::vector<std::pair<std::string, std::string>> entries(zip.entries.begin(), zip.entries.end());
  for (auto& [name, data] : entries)
    if (name == "mlp/" + entry) edit(data);
  const std::string path = temp_path(entry.substr(entry.rfind('/') + 1) + ".pt2");
  exporting::write_zip(path, entries);
  return path;
}

void replace_once(std::string& s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  s.replace(at, from.size(), to);
}

TEST(ImportErrors, ComplexDtypeCodesReadAsComplexTypesAndComplex32IsRefused) {
  // torch._export.serde.schema.ScalarType: COMPLEXHALF 9, COMPLEXFLOAT 10, COMPLEXDOUBLE 11.
  EXPECT_EQ(exporting::dtype_of_code(10), kComplexFloat);
  EXPECT_EQ(exporting::dtype_of_code(11), kComplexDouble);
  EXPECT_EQ(exporting::dtype_code(kComplexDouble), 11);
  EXPECT_EQ(exporting::dtype_of_code(9), std::nullopt);
}

TEST(ImportErrors, FileThatIsNotAZipIsRefusedNamingIt) {
  const std::string path = temp_path("not_a_zip.pt2");
  write_bytes(path, "this is not an archive");
  const std::string msg = error_of([&] { load_exported(path); });
  EXPECT_NE(msg.find("cannot read '" + path + "' as a zip archive"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

TEST(ImportErrors, MissingFileIsRefusedNamingItAndTheCallersLine) {
  const std::string msg = error_of([] { load_exported("/nonexistent/model.pt2"); });
  EXPECT_NE(msg.find("'/nonexistent/model.pt2'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("import_errors_test.cpp:" + std::to_string(__LINE__ - 2)), std::string::npos) << msg;
}

TEST(ImportErrors, TruncatedArchiveIsRefused) {
  const std::string bytes = read_bytes(program_path("mlp.pt2"));
  const std::string path = temp_path("truncated.pt2");
  for (size_t keep : {bytes.size() / 2, bytes.size() - 10, size_t{100}}) {
    write_bytes(path, bytes.substr(0, keep));
    const std::string msg = error_of([&] { load_exported(path); });
    EXPECT_NE(msg.find(path), std::string::npos) << keep << ": " << msg;
  }
  std::filesystem::remove(path);
}

TEST(ImportErrors, CorruptEntryFailsItsChecksum) {
  std::string bytes = read_bytes(program_path("mlp.pt2"));
  // PyTorch stores entries uncompressed: the JSON text is in the file as is.
  const size_t at = bytes.find("\"graph_module\"");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 3] = 'X';
  const std::string path = temp_path("corrupt.pt2");
  write_bytes(path, bytes);
  const std::string msg = error_of([&] { load_exported(path); });
  EXPECT_NE(msg.find("is truncated or corrupt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("models/model.json"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

TEST(ImportErrors, UnknownSchemaMajorVersionIsRefused) {
  const std::string path = edited_archive("models/model.json", [](std::string& s) {
    replace_once(s, "\"schema_version\": {\"major\": 8", "\"schema_version\": {\"major\": 9");
  });
  const std::string msg = error_of([&] { load_exported(path); });
  EXPECT_NE(msg.find("schema version 9.17"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Ember reads schema major version 8"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

TEST(ImportErrors, UnknownOpNamesTheOpAndTheNode) {
  const std::string path = edited_archive("models/model.json", [](std::string& s) {
    replace_once(s, "torch.ops.aten.gelu.default", "torch.ops.aten.frobnicate.default");
  });
  const std::string msg = error_of([&] { load_exported(path); });
  EXPECT_NE(msg.find("node %gelu (torch.ops.aten.frobnicate.default)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("calls aten::frobnicate, an op Ember does not have"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

TEST(ImportErrors, ProgramReadingItemIsRefusedNamingTheNodeAndTheUsersLine) {
  // reads_item.pt2: `n = (x > 0).sum().item()` in make_programs.py, Core ATen's
  // _local_scalar_dense, whose value (u0) exists only when the program runs.
  const std::string msg = error_of([&] { load_exported(program_path("reads_item.pt2")); });
  EXPECT_NE(msg.find("node %_local_scalar_dense (torch.ops.aten._local_scalar_dense.default)"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("at tests/export/make_programs.py:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reads a value from tensor data (u0"), std::string::npos) << msg;
}

TEST(ImportErrors, ResizeOfAProgramInputIsRefusedNamingTheNode) {
  // resizes_input_training_ir.pt2: `x.resize_(2, 2)` of the user input x in make_programs.py.
  const std::string msg = error_of([&] { load_exported(program_path("resizes_input_training_ir.pt2")); });
  EXPECT_NE(msg.find("node %resize_"), std::string::npos) << msg;
  EXPECT_NE(msg.find("resize_ of %x, an input of the program, is not supported"), std::string::npos) << msg;
}

TEST(ImportErrors, NonAtenTargetIsRefusedNamingIt) {
  const std::string path = edited_archive("models/model.json", [](std::string& s) {
    replace_once(s, "torch.ops.aten.gelu.default", "torch.ops.higher_order.cond");
  });
  const std::string msg = error_of([&] { load_exported(path); });
  EXPECT_NE(msg.find("calls 'torch.ops.higher_order.cond', which is not an ATen op"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

TEST(ImportErrors, ArgumentTheSchemaLacksIsNamed) {
  const std::string path = edited_archive("models/model.json", [](std::string& s) {
    replace_once(s, "\"name\": \"mat1\"", "\"name\": \"matrix1\"");
  });
  const std::string msg = error_of([&] { load_exported(path); });
  EXPECT_NE(msg.find("aten::addmm has no argument 'matrix1'"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

TEST(ImportErrors, MalformedJsonIsRefused) {
  const std::string path = edited_archive("models/model.json", [](std::string& s) { s.resize(s.size() / 2); });
  const std::string msg = error_of([&] { load_exported(path); });
  EXPECT_NE(msg.find("models/model.json is not a JSON object"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

TEST(ImportErrors, PickledWeightsAreRefused) {
  const std::string path = edited_archive("data/weights/model_weights_config.json", [](std::string& s) {
    replace_once(s, "\"use_pickle\": false", "\"use_pickle\": true");
  });
  const std::string msg = error_of([&] { load_exported(path); });
  EXPECT_NE(msg.find("is pickled"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

TEST(ImportErrors, WeightSmallerThanItsGeometryIsRefused) {
  const std::string path = edited_archive("data/weights/weight_0", [](std::string& s) { s.resize(8); });
  const std::string msg = error_of([&] { load_exported(path); });
  EXPECT_NE(msg.find("reach element"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

TEST(ImportErrors, UserInputOfWrongSizesIsNamed) {
  ExportedProgram p = load_exported(program_path("mlp.pt2"));
  const std::string msg = error_of([&] { p({zeros({5, 16})}); });
  EXPECT_NE(msg.find("input 'x' of the exported program: expected f32[4, 16], got f32[5, 16]"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("import_errors_test.cpp:" + std::to_string(__LINE__ - 3)), std::string::npos) << msg;
}

TEST(ImportErrors, UserInputOfWrongDtypeIsNamed) {
  ExportedProgram p = load_exported(program_path("mlp.pt2"));
  const std::string msg = error_of([&] { p.compile("eager")({zeros({4, 16}, TensorOptions(kDouble))}); });
  EXPECT_NE(msg.find("expected f32[4, 16], got f64[4, 16]"), std::string::npos) << msg;
}

TEST(ImportErrors, WrongNumberOfUserInputsIsRefused) {
  ExportedProgram p = load_exported(program_path("stateful.pt2"));
  const std::string msg = error_of([&] { p({zeros({3, 6})}); });
  EXPECT_NE(msg.find("takes 2 user inputs, got 1"), std::string::npos) << msg;
}

TEST(ImportErrors, UnknownAndMissingInputNamesAreNamed) {
  ExportedProgram p = load_exported(program_path("mlp.pt2"));
  EXPECT_NE(error_of([&] { p.run({}); }).find("input 'x' is missing"), std::string::npos);
  EXPECT_NE(error_of([&] { p.run({{"x", zeros({4, 16})}, {"z", zeros({1})}}); }).find("no input named 'z'"),
            std::string::npos);
}

/// mlp.pt2 with an `_assert_tensor_metadata` node on its input x that asserts the dtype of
/// code `dtype_code` (the schema's ScalarType: 7 float32, 8 float64), as PyTorch's export
/// writes one where user code checks a tensor's metadata.
std::string archive_asserting_x_dtype(int dtype_code) {
  return edited_archive("models/model.json", [&](std::string& s) {
    replace_once(s, "\"nodes\": [",
                 "\"nodes\": [{\"target\": \"torch.ops.aten._assert_tensor_metadata.default\", \"inputs\": ["
                 "{\"name\": \"a\", \"arg\": {\"as_tensor\": {\"name\": \"x\"}}, \"kind\": 1}, "
                 "{\"name\": \"dtype\", \"arg\": {\"as_scalar_type\": " +
                     std::to_string(dtype_code) + "}, \"kind\": 2}], \"outputs\": [], \"metadata\": {}}, ");
  });
}

TEST(ImportedAsserts, AssertTensorMetadataThatHoldsImportsAndRunsAsWithout) {
  const std::string path = archive_asserting_x_dtype(7);
  ExportedProgram with = load_exported(path), without = load_exported(program_path("mlp.pt2"));
  const Tensor x = randn({4, 16});
  const Tensor got = with.run({{"x", x}}).begin()->second, want = without.run({{"x", x}}).begin()->second;
  EXPECT_EQ(max((got - want).abs()).item().to_double(), 0.0);
  std::filesystem::remove(path);
}

/// mlp.pt2 with `c = sym_is_contiguous(x, memory_format)` (format code 1 contiguous_format,
/// 2 channels_last) and `_assert_scalar(c, "x is not contiguous")` on its input x [4, 16].
std::string archive_asserting_x_contiguous(int format_code) {
  return edited_archive("models/model.json", [&](std::string& s) {
    replace_once(s, "\"sym_bool_values\": {}", "\"sym_bool_values\": {\"c\": {\"as_bool\": true}}");
    replace_once(s, "\"nodes\": [",
                 "\"nodes\": [{\"target\": \"torch.ops.aten.sym_is_contiguous.default\", \"inputs\": ["
                 "{\"name\": \"self\", \"arg\": {\"as_tensor\": {\"name\": \"x\"}}, \"kind\": 1}, "
                 "{\"name\": \"memory_format\", \"arg\": {\"as_memory_format\": " +
                     std::to_string(format_code) +
                     "}, \"kind\": 1}], \"outputs\": [{\"as_sym_bool\": {\"as_name\": \"c\"}}], \"metadata\": {}}, "
                     "{\"target\": \"torch.ops.aten._assert_scalar.default\", \"inputs\": ["
                     "{\"name\": \"self\", \"arg\": {\"as_sym_bool\": {\"as_name\": \"c\"}}, \"kind\": 1}, "
                     "{\"name\": \"assert_msg\", \"arg\": {\"as_string\": \"x is not contiguous\"}, \"kind\": 1}], "
                     "\"outputs\": [], \"metadata\": {}}, ");
  });
}

TEST(ImportedAsserts, SymIsContiguousIsFoldedFromTheValuesGeometry) {
  // x [4, 16] is contiguous, and not channels_last contiguous (a 2-D tensor never is).
  const std::string holds = archive_asserting_x_contiguous(1);
  ExportedProgram p = load_exported(holds);
  const Tensor x = randn({4, 16});
  EXPECT_EQ(p.run({{"x", x}}).size(), 1u);
  std::filesystem::remove(holds);
  const std::string fails = archive_asserting_x_contiguous(2);
  const std::string msg = error_of([&] { load_exported(fails); });
  EXPECT_NE(msg.find("the program's assertion fails for its example shapes: x is not contiguous"), std::string::npos)
      << msg;
  std::filesystem::remove(fails);
}

TEST(ImportErrors, AssertTensorMetadataOfAnotherDtypeNamesTheValueAndItsDtype) {
  const std::string path = archive_asserting_x_dtype(8);
  const std::string msg = error_of([&] { load_exported(path); });
  EXPECT_NE(msg.find("asserts a dtype its value %x"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ember
