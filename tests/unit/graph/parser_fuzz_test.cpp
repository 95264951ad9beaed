// Fuzzing parse_graph: valid graph texts, mutated thousands of times (truncated, characters
// flipped, tokens and lines deleted or repeated), either parse or raise ember::Error —
// never crash, never an internal error. What parses must itself round-trip.
#include <gtest/gtest.h>

#include <cmath>

#include <random>

#include "support/graph_helpers.h"

namespace ember {
namespace {

using testing::add_op;
using testing::meta_of;

std::vector<std::string> seed_texts() {
  std::vector<std::string> out;
  {
    Graph g("fn");
    Node* x = g.add_placeholder("x", meta_of({4, 4}));
    Node* w = g.add_attribute("fc1.weight", meta_of({8, 4}));
    Node* c = g.add_constant("_tensor_constant0", tensor<float>({1, 2, 3, 4}));
    Node* t = add_op(g, "aten::t", {x}, SourceLoc("model.cpp", 12));
    Node* mx = add_op(g, "aten::max.dim", {t, 1}, SourceLoc("C:/a:b.cpp", 13));
    Node* mm = add_op(g, "aten::mm", {w, x});
    Node* cat = add_op(g, "aten::cat", {std::vector<ValueRef>{mx->out(0), c->out()}, 0});
    cat->set_grad_enabled(false);
    Node* sp = add_op(g, "aten::split_with_sizes", {mm, std::vector<int64_t>{3, 5}});
    g.set_output({t->out(), mx->out(1), sp->out(1), cat->out()});
    out.push_back(to_string(g));
  }
  {
    Graph g("scalars");
    Node* x = g.add_placeholder("x", meta_of({4, 3}, kFloat, {1, 4}, 2));
    Node* b = g.add_placeholder("b", meta_of({4, 3}, kBool));
    Node* i = g.add_placeholder("i", meta_of({2}, kInt64));
    Node* a = add_op(g, "aten::add.Tensor", {x, x, 2});
    Node* m = add_op(g, "aten::mul.Scalar", {a, -2.5e-07});
    Node* n = add_op(g, "aten::native_layer_norm", {m, std::vector<int64_t>{3}, None{}, None{}, 1e-05});
    Node* c = add_op(g, "aten::clamp", {n->out(0), -std::numeric_limits<double>::infinity(), None{}});
    Node* f = add_op(g, "aten::masked_fill.Scalar", {c, b, std::nan("")});
    Node* ix = add_op(g, "aten::index.Tensor", {f, std::vector<std::optional<ValueRef>>{i->out(), std::nullopt}});
    Node* ge = add_op(g, "aten::gelu", {ix, "tanh"});
    Node* cp = add_op(g, "aten::_to_copy", {ge, kHalf, None{}, Device("meta")});
    Node* s = add_op(g, "aten::sum.dim_IntList", {f, std::vector<int64_t>{0, 1}, true});
    g.set_output({cp->out(), s->out()});
    out.push_back(to_string(g));
  }
  return out;
}

/// Characters that mean something to the format, plus a few that do not.
constexpr char kAlphabet[] = "%[](),.:=#\"\\ -0123456789eEinfaNTFx_{}\n\t\x01\xff";

std::string mutate(std::string text, std::mt19937& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const int edits = 1 + static_cast<int>(pick(3));
  for (int e = 0; e < edits && !text.empty(); ++e) {
    switch (pick(6)) {
      case 0:  // truncate
        text.resize(pick(text.size()));
        break;
      case 1:  // flip a character
        text[pick(text.size())] = kAlphabet[pick(sizeof kAlphabet - 1)];
        break;
      case 2: {  // delete a token (a run of non-blank characters)
        size_t at = pick(text.size());
        size_t end = text.find_first_of(" \n", at);
        text.erase(at, (end == std::string::npos ? text.size() : end) - at);
        break;
      }
      case 3: {  // insert a character
        const auto at = static_cast<std::ptrdiff_t>(pick(text.size() + 1));
        text.insert(text.begin() + at, kAlphabet[pick(sizeof kAlphabet - 1)]);
        break;
      }
      case 4: {  // delete a line
        size_t at = text.rfind('\n', pick(text.size()));
        at = at == std::string::npos ? 0 : at + 1;
        size_t end = text.find('\n', at);
        text.erase(at, (end == std::string::npos ? text.size() : end + 1) - at);
        break;
      }
      case 5: {  // repeat a line elsewhere
        size_t at = text.rfind('\n', pick(text.size()));
        at = at == std::string::npos ? 0 : at + 1;
        size_t end = text.find('\n', at);
        std::string line = text.substr(at, (end == std::string::npos ? text.size() : end + 1) - at);
        size_t to = text.rfind('\n', pick(text.size()));
        text.insert(to == std::string::npos ? 0 : to + 1, line);
        break;
      }
    }
  }
  return text;
}

TEST(GraphTextFuzz, MutatedTextsParseOrRaiseEmberErrors) {
  std::mt19937 rng(1234);
  const std::vector<std::string> seeds = seed_texts();
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 6000; ++iter) {
    const std::string text = mutate(seeds[static_cast<size_t>(iter) % seeds.size()], rng);
    std::unique_ptr<Graph> g;
    try {
      g = parse_graph(text);
    } catch (const InternalError& e) {
      ADD_FAILURE() << "internal error on:\n" << text << "\n" << e.what();
      continue;
    } catch (const Error& e) {
      ++rejected;
      // Every rejection names its line.
      EXPECT_TRUE(std::string(e.what()).starts_with("graph text line ")) << e.what();
      continue;
    }
    ++parsed;
    // What parses round-trips, and the other readers of a graph accept it.
    EXPECT_TRUE(testing::round_trips(*g)) << text;
    EXPECT_NO_THROW(to_runnable_cpp(*g)) << text;
  }
  // Both outcomes happen often, or the mutations test nothing.
  EXPECT_GT(parsed, 100);
  EXPECT_GT(rejected, 3000);
}

TEST(GraphTextFuzz, RandomBytesRaiseEmberErrors) {
  std::mt19937 rng(99);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string text = "graph g {\n  %x : f32[4] = placeholder[x]\n  %a : f32[4] = aten::";
    const size_t n = std::uniform_int_distribution<size_t>(0, 40)(rng);
    for (size_t i = 0; i < n; ++i) text += static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    text += "\n}\n";
    try {
      parse_graph(text);
    } catch (const InternalError& e) {
      ADD_FAILURE() << "internal error: " << e.what();
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace ember
