// safetensors I/O: round trips, a file in PyTorch's layout, and every kind of malformed
// file raising ember::Error that names the file and the problem.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "ember/ember.h"
#include "ember/serialize.h"

namespace ember {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ember_st_" + std::to_string(::getpid()) + "_" + name)).string();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// A file image: 8-byte little-endian header length, the header, then `data`.
std::string image(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out + header + data;
}

/// Loads `bytes` from a file and returns the error text (fails if none is raised).
std::string load_error(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  write_bytes(path, bytes);
  try {
    load_safetensors(path);
  } catch (const Error& e) {
    std::remove(path.c_str());
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << "error does not name the file: " << e.what();
    return e.what();
  }
  std::remove(path.c_str());
  ADD_FAILURE() << name << ": no error raised";
  return "";
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(Safetensors, RoundTripsEveryDtypeAndMetadata) {
  const std::string path = temp_path("roundtrip");
  std::map<std::string, Tensor> in;
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool}) {
    in[std::string(dtype_name(t))] = arange(6).reshape({2, 3}).to(t);
  }
  in["scalar"] = scalar_tensor(2.5);
  in["empty"] = zeros({0, 4});
  save_safetensors(in, path, {{"format", "pt"}, {"note", "hello"}});
  auto out = load_safetensors(path);
  ASSERT_EQ(out.size(), in.size());
  for (const auto& [name, t] : in) {
    const Tensor& u = out.at(name);
    EXPECT_EQ(u.dtype(), t.dtype()) << name;
    EXPECT_EQ(u.sizes(), t.sizes()) << name;
    EXPECT_TRUE(u.is_contiguous()) << name;
    EXPECT_EQ(u.to(kDouble).to_vector<double>(), t.to(kDouble).to_vector<double>()) << name;
  }
  auto meta = load_safetensors_metadata(path);
  EXPECT_EQ(meta.at("format"), "pt");
  EXPECT_EQ(meta.at("note"), "hello");
  std::remove(path.c_str());
}

TEST(Safetensors, RoundTripsComplexAsC64AndC128WithPartsInterleaved) {
  const std::string path = temp_path("complex");
  // (3, 2) real and imaginary parts: 0+1j, 2+3j, 4+5j.
  const Tensor c64 = view_as_complex(arange(6, kFloat).reshape({3, 2}));
  const Tensor c128 = view_as_complex(arange(6, kDouble).reshape({3, 2})).slice(0, 0, 3, 2);  // non-contiguous
  save_safetensors({{"a", c64}, {"b", c128}}, path);
  auto out = load_safetensors(path);
  EXPECT_EQ(out.at("a").dtype(), kComplexFloat);
  EXPECT_EQ(out.at("b").dtype(), kComplexDouble);
  EXPECT_EQ(view_as_real(out.at("a")).to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(view_as_real(out.at("b")).to_vector<double>(), (std::vector<double>{0, 1, 4, 5}));
  // The header names the format's dtypes.
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find("\"C64\""), std::string::npos);
  EXPECT_NE(bytes.find("\"C128\""), std::string::npos);
  std::remove(path.c_str());
}

TEST(Safetensors, SavesNonContiguousTensorsAsTheirValues) {
  const std::string path = temp_path("noncontig");
  Tensor base = arange(12, kFloat).reshape({3, 4});
  save_safetensors({{"t", base.t()}, {"s", base.slice(1, 1, 4, 2)}, {"e", arange(3, kFloat).expand({2, 3})}}, path);
  auto out = load_safetensors(path);
  EXPECT_EQ(out.at("t").sizes(), IntArrayRef({4, 3}));
  EXPECT_EQ(out.at("t").to_vector<float>(), (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  EXPECT_EQ(out.at("s").to_vector<float>(), (std::vector<float>{1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(out.at("e").to_vector<float>(), (std::vector<float>{0, 1, 2, 0, 1, 2}));
  std::remove(path.c_str());
}

TEST(Safetensors, ReadsAFileInPyTorchsLayout) {
  // Written by tests/ops/gen_cases.py in the layout of safetensors.torch.save_file.
  auto t = load_safetensors(EMBER_TEST_DATA_DIR "/torch_layout.safetensors");
  EXPECT_EQ(t.at("a").dtype(), kFloat);
  EXPECT_EQ(t.at("a").sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(t.at("a").to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(t.at("b").to_vector<int64_t>(), (std::vector<int64_t>{-1, 2}));
  EXPECT_EQ(t.at("c").dtype(), kBFloat16);
  EXPECT_EQ(t.at("c").to(kFloat).to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(t.at("d").to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(t.at("e").dim(), 0);
  EXPECT_EQ(t.at("e").item<float>(), 0.5f);
  EXPECT_EQ(t.at("empty").sizes(), IntArrayRef({0, 3}));
  EXPECT_EQ(t.at("f").to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{-3, 7}));
  EXPECT_EQ(t.at("g").to_vector<uint8_t>(), (std::vector<uint8_t>{250}));
  EXPECT_EQ(t.at("h").to_vector<double>(), (std::vector<double>{1e300, -2.5}));
  EXPECT_EQ(t.at("i").to_vector<int32_t>(), (std::vector<int32_t>{-70000}));
  EXPECT_EQ(t.at("j").to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{-300}));
  EXPECT_EQ(load_safetensors_metadata(EMBER_TEST_DATA_DIR "/torch_layout.safetensors").at("format"), "pt");
}

TEST(Safetensors, MissingFileIsAnError) {
  try {
    load_safetensors("/nonexistent/x.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_HAS(std::string(e.what()), "cannot open safetensors file '/nonexistent/x.safetensors'");
  }
}

TEST(Safetensors, ADirectoryIsAnErrorNamingIt) {
  // Used to escape as std::ios_base::failure ("basic_filebuf::underflow ... Is a directory").
  const std::string dir = temp_path("dir");
  std::filesystem::create_directories(dir);
  try {
    load_safetensors(dir);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_HAS(std::string(e.what()), "cannot read safetensors file '" + dir + "': it is a directory");
  }
  std::filesystem::remove_all(dir);
}

TEST(Safetensors, FileShorterThanTheHeaderLengthIsTruncated) {
  EXPECT_HAS(load_error("short", "abc"), "truncated");
}

TEST(Safetensors, HeaderLengthLargerThanTheFile) {
  std::string bytes = image("{}", "");
  bytes[0] = 100;
  EXPECT_HAS(load_error("hlen", bytes), "header length 100 is larger than the file");
}

TEST(Safetensors, HugeHeaderLengthIsRejectedBeforeReading) {
  std::string bytes(16, '\xff');
  EXPECT_HAS(load_error("huge", bytes), "exceeds the limit");
}

TEST(Safetensors, InvalidJsonHeader) {
  EXPECT_HAS(load_error("json", image("{\"a\": [", "")), "header is not valid JSON");
  EXPECT_HAS(load_error("notobj", image("[1, 2]", "")), "header is not a JSON object");
}

TEST(Safetensors, UnknownDtype) {
  EXPECT_HAS(load_error("dtype", image(R"({"a":{"dtype":"F8","shape":[1],"data_offsets":[0,1]}})", "x")),
             "unknown dtype \"F8\"");
}

TEST(Safetensors, OffsetsOutOfRange) {
  EXPECT_HAS(load_error("range", image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234")),
             "out of range of the 4-byte data section");
}

TEST(Safetensors, TruncatedDataSection) {
  const std::string header = R"({"a":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})";
  EXPECT_HAS(load_error("truncdata", image(header, std::string(16, '\0')).substr(0, 8 + header.size() + 9)),
             "out of range");
}

TEST(Safetensors, BeginAfterEnd) {
  EXPECT_HAS(load_error("order", image(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[3,1]}})", "1234")),
             "begin after end");
}

TEST(Safetensors, OverlappingOffsets) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  EXPECT_HAS(load_error("overlap", image(header, std::string(8, '\0'))), "overlapping data_offsets");
}

TEST(Safetensors, ShapeSizeMismatch) {
  EXPECT_HAS(load_error("mismatch", image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                                          std::string(8, '\0'))),
             "shape/size mismatch");
}

TEST(Safetensors, ShapeProductOverflowIsAMismatch) {
  const std::string header =
      R"({"a":{"dtype":"F64","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})";
  EXPECT_HAS(load_error("overflow", image(header, std::string(8, '\0'))), "shape/size mismatch");
}

TEST(Safetensors, MalformedEntryFields) {
  EXPECT_HAS(load_error("noshape", image(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", "1234")), "no \"shape\"");
  EXPECT_HAS(load_error("negshape", image(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "1234")),
             "not a non-negative integer");
  EXPECT_HAS(load_error("nooff", image(R"({"a":{"dtype":"F32","shape":[1]}})", "1234")), "data_offsets");
  EXPECT_HAS(load_error("notobj2", image(R"({"a":3})", "")), "is not a JSON object");
}

TEST(Safetensors, MetadataValuesMustBeStrings) {
  EXPECT_HAS(load_error("meta", image(R"({"__metadata__":{"k":1}})", "")), "metadata value of 'k' is not a string");
}

TEST(Safetensors, KeyGivenTwiceIsRejected) {
  // nlohmann::json keeps the last value of a repeated key: the first entry would vanish.
  const std::string header = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                             R"("a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})";
  EXPECT_HAS(load_error("dupkey", image(header, "1234")), "key 'a' twice");
  EXPECT_HAS(
      load_error("dupfield", image(R"({"a":{"dtype":"U8","dtype":"I8","shape":[1],"data_offsets":[0,1]}})", "1")),
      "key 'dtype' twice in one object");
}

TEST(Safetensors, BytesBetweenTensorsAreRejected) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                             R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})";
  EXPECT_HAS(load_error("gap", image(header, "123456")), "entry 'b' begins at data offset 4");
  EXPECT_HAS(load_error("gapfirst", image(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", "1234")),
             "2 bytes belong to no tensor");
}

TEST(Safetensors, BytesAfterTheLastTensorAreRejected) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  EXPECT_HAS(load_error("trailing", image(header, "12xyz")),
             "3 bytes after the last tensor's data (from byte " + std::to_string(8 + header.size() + 2));
  EXPECT_HAS(load_error("trailing0", image("{}", "x")), "1 bytes after the last tensor's data");
}

TEST(Safetensors, InvalidJsonNamesTheByteOfTheFile) {
  // The header starts at byte 8: the stray '!' of {"a"!} is byte 12.
  EXPECT_HAS(load_error("jsonpos", image(R"({"a"!})", "")), "header is not valid JSON at byte 12 of the file");
}

TEST(Safetensors, EmptyTensorWhoseStridesOverflowIsRejected) {
  // No bytes, but a contiguous stride of 2^62 * 8 does not fit in 64 bits.
  const std::string header = R"({"a":{"dtype":"F32","shape":[0,4611686018427387904,8],"data_offsets":[0,0]}})";
  EXPECT_HAS(load_error("emptyoverflow", image(header, "")), "contiguous strides do not fit in 64 bits");
}

TEST(Safetensors, SavingAMetaTensorIsAnError) {
  EXPECT_THROW(save_safetensors({{"m", empty({2}, kMeta)}}, temp_path("meta")), Error);
}

}  // namespace
}  // namespace ember
