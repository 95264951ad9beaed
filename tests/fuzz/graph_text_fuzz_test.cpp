// Fuzzing parse_graph: valid graph texts, mutated thousands of times (truncated, characters
// flipped, tokens and lines deleted or repeated, numbers made extreme), either parse or
// raise ember::Error naming the line — never crash, never an internal error. What parses
// must itself round-trip.
#include <gtest/gtest.h>

#include "fuzz/mutator.h"
#include "fuzz/seed_graphs.h"
#include "support/graph_helpers.h"

namespace ember {
namespace {

std::vector<std::string> seed_texts() {
  std::vector<std::string> out;
  for (const auto& g : fuzz::seed_graphs()) out.push_back(to_string(*g));
  return out;
}

/// Characters that mean something to the format, plus a few that do not.
constexpr char kChars[] = "%[](),.:=#\"\\ -0123456789eEinfaNTFx_{}\n\t\x01\xff";
constexpr std::string_view kAlphabet(kChars, sizeof kChars - 1);

TEST(GraphTextFuzz, MutatedTextsParseOrRaiseEmberErrorsNamingTheLine) {
  fuzz::Mutator mut(1234);
  const std::vector<std::string> seeds = seed_texts();
  fuzz::Tally tally;
  tally.iterations = fuzz::run_loop(6000, 20.0, [&](int iter) {
    const std::string text = mut.mutate_text(seeds[static_cast<size_t>(iter) % seeds.size()], kAlphabet);
    std::unique_ptr<Graph> g;
    const fuzz::Outcome o = fuzz::outcome_of(
        [&] { g = parse_graph(text); },
        [&](const std::string& msg) { EXPECT_TRUE(msg.starts_with("graph text line ")) << msg << "\non:\n"
                                                                                       << text; },
        "graph text:\n" + text);
    if (o == fuzz::Outcome::Rejected) ++tally.rejected;
    if (o != fuzz::Outcome::Accepted) return;
    ++tally.accepted;
    // What parses round-trips, and the other readers of a graph accept it.
    EXPECT_TRUE(testing::round_trips(*g)) << text;
    EXPECT_NO_THROW(to_runnable_cpp(*g)) << text;
  });
  // Both outcomes happen often, or the mutations test nothing.
  EXPECT_GT(tally.accepted, tally.iterations / 60) << tally.iterations << " iterations";
  EXPECT_GT(tally.rejected, tally.iterations / 2) << tally.iterations << " iterations";
}

TEST(GraphTextFuzz, RandomBytesRaiseEmberErrors) {
  fuzz::Mutator mut(99);
  fuzz::run_loop(2000, 5.0, [&](int) {
    std::string text = "graph g {\n  %x : f32[4] = placeholder[x]\n  %a : f32[4] = aten::";
    const size_t n = mut.pick(41);
    for (size_t i = 0; i < n; ++i) text += static_cast<char>(mut.pick(256));
    text += "\n}\n";
    fuzz::outcome_of([&] { parse_graph(text); }, [](const std::string&) {}, "graph text:\n" + text);
  });
}

}  // namespace
}  // namespace ember
