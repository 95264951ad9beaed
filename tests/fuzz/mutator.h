// tests/fuzz/mutator.h — the seeded mutation loop every reader of outside data is fuzzed
// with (graph text, safetensors, execution records, repro and launcher files).
//
// A fuzz test starts from valid inputs (seeds), mutates them (see Mutator), hands each
// mutant to the reader and classifies what happens with `outcome_of`: the reader either
// accepts the input or raises an ember::Error that is not an InternalError; any other
// exception fails the test, and a crash or hang fails the process (CTest's timeout). The
// loops are deterministic (fixed seeds) and capped both in iterations and in time, so the
// whole fuzz suite stays within a minute on two cores, sanitizers included.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ember/error.h"

namespace ember::fuzz {

/// Mutations of text and of binary images, from one seeded generator.
class Mutator {
 public:
  explicit Mutator(uint32_t seed) : rng_(seed) {}

  /// Uniform in [0, n); 0 when n is 0.
  size_t pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  /// Line-oriented edits for text formats: truncate, replace or insert a character of
  /// `alphabet`, delete a token (a run of non-blank characters), delete a line, repeat a
  /// line elsewhere, replace a number with an extreme one. 1-3 edits.
  std::string mutate_text(std::string text, std::string_view alphabet) {
    const int edits = 1 + static_cast<int>(pick(3));
    for (int e = 0; e < edits && !text.empty(); ++e) {
      switch (pick(7)) {
        case 0:  // truncate
          text.resize(pick(text.size()));
          break;
        case 1:  // replace a character
          text[pick(text.size())] = alphabet[pick(alphabet.size())];
          break;
        case 2: {  // delete a token
          const size_t at = pick(text.size());
          const size_t end = text.find_first_of(" \n", at);
          text.erase(at, (end == std::string::npos ? text.size() : end) - at);
          break;
        }
        case 3: {  // insert a character
          const auto at = static_cast<std::ptrdiff_t>(pick(text.size() + 1));
          text.insert(text.begin() + at, alphabet[pick(alphabet.size())]);
          break;
        }
        case 4: {  // delete a line
          const auto [at, end] = line_around(text, pick(text.size()));
          text.erase(at, end - at);
          break;
        }
        case 5: {  // repeat a line elsewhere (duplicated keys, nodes, entries)
          const auto [at, end] = line_around(text, pick(text.size()));
          const std::string line = text.substr(at, end - at);
          text.insert(line_around(text, pick(text.size())).first, line);
          break;
        }
        case 6:  // an extreme number in place of one
          text = replace_number(std::move(text));
          break;
      }
    }
    return text;
  }

  /// Replaces one run of decimal digits with a value at the edge of some type's range (or
  /// past it), keeping a leading '-' where there was one.
  std::string replace_number(std::string text) {
    static constexpr const char* kExtremes[] = {"0",
                                                "1",
                                                "2147483647",
                                                "2147483648",
                                                "4294967295",
                                                "4294967296",
                                                "9223372036854775807",
                                                "9223372036854775808",
                                                "18446744073709551615",
                                                "18446744073709551616",
                                                "1e400",
                                                "100000000000000000000000000000"};
    std::vector<size_t> starts;
    for (size_t i = 0; i < text.size(); ++i)
      if (std::isdigit(static_cast<unsigned char>(text[i])) &&
          (i == 0 || !std::isdigit(static_cast<unsigned char>(text[i - 1]))))
        starts.push_back(i);
    if (starts.empty()) return text;
    const size_t at = starts[pick(starts.size())];
    size_t end = at;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    text.replace(at, end - at, kExtremes[pick(std::size(kExtremes))]);
    return text;
  }

  /// Byte-level edits for binary images: flip bits, overwrite bytes with extreme values,
  /// truncate, insert or delete a range, splice in a range of `donor` (another valid
  /// image), overwrite a little-endian 64-bit field at `fields` (offsets of length fields)
  /// with an extreme or off-by-a-little value. 1-3 edits.
  std::string mutate_bytes(std::string bytes, const std::string& donor, const std::vector<size_t>& fields = {}) {
    const int edits = 1 + static_cast<int>(pick(3));
    for (int e = 0; e < edits; ++e) {
      switch (pick(8)) {
        case 0:  // flip one bit
          if (!bytes.empty()) bytes[pick(bytes.size())] ^= static_cast<char>(1u << pick(8));
          break;
        case 1: {  // an extreme byte
          static constexpr unsigned char kBytes[] = {0x00, 0xff, 0x7f, 0x80, '{', '}', '"', ',', ':', '[', ']', '\\'};
          if (!bytes.empty()) bytes[pick(bytes.size())] = static_cast<char>(kBytes[pick(std::size(kBytes))]);
          break;
        }
        case 2:  // truncate
          bytes.resize(pick(bytes.size() + 1));
          break;
        case 3: {  // insert a few random bytes
          const size_t at = pick(bytes.size() + 1);
          std::string junk(1 + pick(16), '\0');
          for (char& c : junk) c = static_cast<char>(pick(256));
          bytes.insert(at, junk);
          break;
        }
        case 4: {  // delete a range
          const size_t at = pick(bytes.size() + 1);
          bytes.erase(at, 1 + pick(32));
          break;
        }
        case 5: {  // splice a range of the donor in place of a range of ours
          if (donor.empty()) break;
          const size_t from = pick(donor.size());
          const std::string piece = donor.substr(from, 1 + pick(64));
          const size_t at = pick(bytes.size() + 1);
          bytes.replace(at, pick(64), piece);
          break;
        }
        case 6:
        case 7: {  // a length or offset field made extreme, or off by a little
          if (fields.empty()) break;
          const size_t at = fields[pick(fields.size())];
          if (at + 8 > bytes.size()) break;
          uint64_t v = 0;
          for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + static_cast<size_t>(i)]);
          static constexpr uint64_t kValues[] = {0,
                                                 1,
                                                 7,
                                                 8,
                                                 0x7fffffffffffffffull,
                                                 0x8000000000000000ull,
                                                 0xffffffffffffffffull,
                                                 100000001,
                                                 0xfffffffffffffff8ull};
          v = chance(0.5) ? kValues[pick(std::size(kValues))] : v + static_cast<uint64_t>(pick(17)) - 8;
          for (int i = 0; i < 8; ++i) bytes[at + static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
          break;
        }
      }
    }
    return bytes;
  }

 private:
  /// [start, end) of the line holding position `at`, its '\n' included.
  static std::pair<size_t, size_t> line_around(const std::string& text, size_t at) {
    size_t start = text.rfind('\n', at);
    start = start == std::string::npos ? 0 : start + 1;
    if (start > text.size()) start = text.size();
    const size_t nl = text.find('\n', start);
    return {start, nl == std::string::npos ? text.size() : nl + 1};
  }

  std::mt19937 rng_;
};

/// How a reader took one input.
enum class Outcome { Accepted, Rejected, Failed };

/// Counts of a fuzz loop's outcomes.
struct Tally {
  int accepted = 0;
  int rejected = 0;
  int iterations = 0;
};

/// Runs `read` (which reads one input) and classifies it: Accepted when it returns,
/// Rejected on an ember::Error (then `check_message` judges the message, e.g. that it
/// names the file), Failed — with a test failure naming `input_desc` — on an
/// InternalError or any other exception.
template <typename Read, typename Check>
Outcome outcome_of(Read&& read, Check&& check_message, const std::string& input_desc) {
  try {
    read();
    return Outcome::Accepted;
  } catch (const InternalError& e) {
    ADD_FAILURE() << "internal error on " << input_desc << ":\n" << e.what();
  } catch (const Error& e) {
    check_message(std::string(e.what()));
    return Outcome::Rejected;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "an exception that is not an ember::Error on " << input_desc << ": " << typeid(e).name() << ": "
                  << e.what();
  }
  return Outcome::Failed;
}

/// Calls `step(iteration)` until `max_iterations` have run or `seconds` have passed (the
/// time cap keeps a sanitized build within CI's budget; the iteration cap keeps a fast
/// build deterministic). Stops early once a test failure was recorded.
template <typename Step>
int run_loop(int max_iterations, double seconds, Step&& step) {
  const auto start = std::chrono::steady_clock::now();
  int i = 0;
  for (; i < max_iterations; ++i) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) break;
    if (::testing::Test::HasFailure()) break;
    step(i);
  }
  return i;
}

}  // namespace ember::fuzz
