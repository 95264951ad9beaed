// Fuzzing the safetensors reader: valid files, their bytes mutated (bits flipped, bytes
// inserted, deleted and spliced from another file, the 8-byte header length made extreme
// or off by a little) and their JSON header mutated (characters, numbers made extreme —
// shapes and data_offsets —, entries repeated or dropped), either load or raise an
// ember::Error naming the file. What loads must be exactly what the header describes: the
// tensors tile the data section with no gap, overlap or trailing byte.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ember/ember.h"
#include "ember/serialize.h"
#include "fuzz/mutator.h"
#include "support/safetensors.h"

namespace ember {
namespace {

/// Valid files: several dtypes, an empty tensor, a 0-dim one, metadata.
std::vector<std::string> seed_files() {
  std::vector<std::string> out;
  auto encode = [](const std::map<std::string, Tensor>& tensors, const std::map<std::string, std::string>& meta) {
    const std::string path =
        (std::filesystem::temp_directory_path() / ("ember_fuzz_seed_" + std::to_string(getpid()))).string();
    save_safetensors(tensors, path, meta);
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove(path);
    return bytes;
  };
  out.push_back(encode({{"w", arange(Scalar(6.0)).reshape({2, 3})},
                        {"idx", arange(Scalar(int64_t{4}))},
                        {"mask", zeros({0, 3}, TensorOptions(kBool))},
                        {"s", scalar_tensor(Scalar(1.5), TensorOptions(kHalf))},
                        {"b", ones({2, 2}, TensorOptions(kBFloat16))}},
                       {{"format", "pt"}, {"note", "seed"}}));
  out.push_back(encode({{"a", full({3}, Scalar(int64_t{7}), TensorOptions(kInt32))},
                        {"b", ones({1}, TensorOptions(kUInt8))},
                        {"c", ones({2}, TensorOptions(kDouble))}},
                       {}));
  return out;
}

/// The JSON header of a file image and its data section.
std::pair<std::string, std::string> split(const std::string& file) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(file[static_cast<size_t>(i)]);
  return {file.substr(8, n), file.substr(8 + n)};
}

std::string join(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>(header.size() >> (8 * i));
  return out + header + data;
}

/// Characters of JSON, and some that are not.
constexpr char kJsonChars[] = "{}[]\":,0123456789-+.eE \\u\x01\xff";
constexpr std::string_view kJson(kJsonChars, sizeof kJsonChars - 1);

/// One mutant: byte-level, header-level, or an entry repeated (a duplicated key).
std::string mutant(fuzz::Mutator& mut, const std::vector<std::string>& seeds, int iter) {
  const std::string& seed = seeds[static_cast<size_t>(iter) % seeds.size()];
  const std::string& donor = seeds[static_cast<size_t>(iter + 1) % seeds.size()];
  switch (mut.pick(4)) {
    case 0:
      return mut.mutate_bytes(seed, donor, {0});
    case 1: {  // the header's text, its length field rewritten to match
      auto [header, data] = split(seed);
      // JSON is one line: break it at ',' so that line edits move entries and fields.
      for (char& c : header)
        if (c == ',') c = '\n';
      std::string edited = mut.mutate_text(header, kJson);
      for (char& c : edited)
        if (c == '\n') c = ',';
      return join(edited, mut.chance(0.3) ? mut.mutate_bytes(data, donor) : data);
    }
    case 2: {  // numbers only (shapes, offsets), the rest intact
      auto [header, data] = split(seed);
      return join(mut.replace_number(header), data);
    }
    default: {  // the first entry given again, with the same or another key
      auto [header, data] = split(seed);
      const size_t open = header.find('{', 1);
      const size_t close = header.find('}', open);
      const size_t key = header.rfind('"', header.rfind('"', open) - 1);
      if (open == std::string::npos || close == std::string::npos || key == std::string::npos) return seed;
      std::string entry = header.substr(key, close + 1 - key);
      if (mut.chance(0.5)) entry.insert(1, "x");  // another key: its bytes overlap
      header.insert(key, entry + ",");
      return join(header, data);
    }
  }
}

TEST(SafetensorsFuzz, MutatedFilesLoadExactlyOrRaiseEmberErrorsNamingTheFile) {
  fuzz::Mutator mut(20240611);
  const std::vector<std::string> seeds = seed_files();
  fuzz::Tally tally;
  tally.iterations = fuzz::run_loop(20000, 10.0, [&](int iter) {
    const std::string bytes = mutant(mut, seeds, iter);
    support::SafetensorsFile file;
    const std::string name = "fuzz" + std::to_string(iter) + ".safetensors";
    const fuzz::Outcome o = fuzz::outcome_of(
        [&] { file = support::decode_safetensors(std::vector<uint8_t>(bytes.begin(), bytes.end()), name); },
        [&](const std::string& msg) {
          EXPECT_NE(msg.find("malformed safetensors file '" + name + "'"), std::string::npos) << msg;
        },
        "safetensors image #" + std::to_string(iter));
    if (o == fuzz::Outcome::Rejected) ++tally.rejected;
    if (o != fuzz::Outcome::Accepted) return;
    ++tally.accepted;
    // Accepted: every byte after the header belongs to exactly one tensor, whose size is
    // its shape times its dtype's size.
    size_t covered = 0;
    for (const auto& [key, e] : file.entries) {
      size_t numel = 1;
      for (int64_t d : e.shape) numel *= static_cast<size_t>(d);
      EXPECT_EQ(numel * support::safetensors_dtype_size(e.dtype), e.end - e.begin) << key;
      covered += e.end - e.begin;
    }
    EXPECT_EQ(covered, file.bytes.size() - file.data_start) << "image #" << iter;
  });
  EXPECT_GT(tally.accepted, tally.iterations / 100) << tally.iterations << " iterations";
  EXPECT_GT(tally.rejected, tally.iterations / 2) << tally.iterations << " iterations";
}

TEST(SafetensorsFuzz, MutatedFilesOnDiskLoadAsTensorsOrRaiseEmberErrorsNamingThePath) {
  // Through the public reader, which builds tensors from what the codec accepted.
  fuzz::Mutator mut(7);
  const std::vector<std::string> seeds = seed_files();
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ember_fuzz_" + std::to_string(getpid()) + ".safetensors")).string();
  fuzz::run_loop(2000, 5.0, [&](int iter) {
    const std::string bytes = mutant(mut, seeds, iter);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    fuzz::outcome_of(
        [&] {
          for (const auto& [name, t] : load_safetensors(path)) {
            if (t.dtype() != kBool) continue;  // bools are normalized: kernels see only 0 and 1
            const auto* p = static_cast<const uint8_t*>(t.raw_data_ptr());
            for (int64_t i = 0; i < t.numel(); ++i) EXPECT_LE(p[i], 1) << name;
          }
        },
        [&](const std::string& msg) { EXPECT_NE(msg.find(path), std::string::npos) << msg; },
        "file #" + std::to_string(iter));
  });
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ember
