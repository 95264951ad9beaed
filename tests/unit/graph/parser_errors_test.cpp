// parse_graph on malformed text: each mistake raises a ValueError naming the line, what
// was expected and the text found there.
#include <gtest/gtest.h>

#include "support/error_of.h"
#include "support/graph_helpers.h"

namespace ember {
namespace {

using testing::error_of;

/// The message parse_graph raises for `body` (lines between the graph's braces).
std::string parse_error(const std::string& body) {
  return error_of([&] { parse_graph("graph g {\n  %x : f32[4] = placeholder[x]\n" + body + "}\n"); },
                  ErrorKind::ValueError);
}

TEST(GraphTextErrors, UnknownOpListsItsOverloads) {
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::add.Tensr(%x, %x, 1)\n"),
            "graph text line 3: expected a registered op; overloads that exist:\n"
            "  aten::add.Scalar\n"
            "  aten::add.Tensor, found 'aten::add.Tensr'");
}

TEST(GraphTextErrors, UnknownOpSuggestsNamesATypoAway) {
  const std::string msg = parse_error("  %a : f32[4] = aten::rleu(%x)\n");
  EXPECT_TRUE(msg.starts_with("graph text line 3: expected a registered op; did you mean:\n  aten::relu\n")) << msg;
  EXPECT_TRUE(msg.ends_with(", found 'aten::rleu'")) << msg;
}

TEST(GraphTextErrors, TooFewArgumentsNameTheSchema) {
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::add.Tensor(%x, %x)\n"),
            "graph text line 3: expected 3 arguments for aten::add.Tensor (self, other, alpha), found 2: "
            "'aten::add.Tensor(%x, %x)'");
}

TEST(GraphTextErrors, TooManyArgumentsNameTheSchema) {
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::neg(%x, %x)\n"),
            "graph text line 3: expected 1 arguments for aten::neg (self), found more: '%x)'");
}

TEST(GraphTextErrors, ValueUsedBeforeItIsDefined) {
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::neg(%b)\n  %b : f32[4] = aten::neg(%x)\n"),
            "graph text line 3: expected a value defined on an earlier line, found '%b'");
}

TEST(GraphTextErrors, NameDefinedTwice) {
  EXPECT_EQ(parse_error("  %x : f32[4] = aten::neg(%x)\n"),
            "graph text line 3: expected a name not used before, found 'x'");
}

TEST(GraphTextErrors, BadDtype) {
  EXPECT_EQ(parse_error("  %a : f33[4] = aten::neg(%x)\n"),
            "graph text line 3: expected a dtype (f32, f64, f16, bf16, i64, i32, i16, i8, u8, b8), found "
            "'f33[4] = aten::neg(%x)'");
}

TEST(GraphTextErrors, BadDtypeLiteral) {
  EXPECT_EQ(parse_error("  %a : f64[4] = aten::_to_copy(%x, torch.float99, None, None, None, False, None)\n"),
            "graph text line 3: expected a dtype name (float32, float64, float16, bfloat16, int64, int32, int16, "
            "int8, uint8, bool), found 'float99, None, None, None, False, None)'");
}

TEST(GraphTextErrors, ArgumentOfTheWrongTypeNamesTheParameter) {
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::add.Tensor(%x, 2, 1)\n"),
            "graph text line 3: expected Tensor for argument 'other' (position 1) of aten::add.Tensor, found '2'");
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::sum.dim_IntList(%x, 0, False, None)\n"),
            "graph text line 3: expected int[1]? for argument 'dim' (position 1) of aten::sum.dim_IntList, found '0'");
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::sum.dim_IntList(%x, [0], 1, None)\n"),
            "graph text line 3: expected bool for argument 'keepdim' (position 2) of aten::sum.dim_IntList, found "
            "'1'");
  EXPECT_EQ(parse_error("  %a : f32[] = aten::select.int(%x, 0, 1.5)\n"),
            "graph text line 3: expected SymInt for argument 'index' (position 2) of aten::select.int, found '1.5'");
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::cat([%x, None], 0)\n"),
            "graph text line 3: expected Tensor[] for argument 'tensors' (position 0) of aten::cat, found "
            "'[%x, None]'");
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::neg(None)\n"),
            "graph text line 3: expected Tensor for argument 'self' (position 0) of aten::neg, found 'None'");
}

TEST(GraphTextErrors, WrongNumberOfOutputGeometries) {
  EXPECT_EQ(parse_error("  %a : f32[] = aten::max.dim(%x, 0, False)\n"),
            "graph text line 3: expected 2 output geometries for aten::max.dim, found 1");
}

TEST(GraphTextErrors, OutputIndexOutOfRangeOrMissing) {
  const std::string max = "  %m : (f32[], i64[]) = aten::max.dim(%x, 0, False)\n";
  EXPECT_EQ(parse_error(max + "  return (%m.2)\n"),
            "graph text line 4: expected an output index below 2, found '%m.2'");
  EXPECT_EQ(parse_error(max + "  return (%m)\n"), "graph text line 4: expected %m.k: it has 2 outputs, found '%m'");
  EXPECT_EQ(parse_error("  return (%x.0)\n"),
            "graph text line 3: expected %x without an index (it has one output), found '%x.0'");
}

TEST(GraphTextErrors, BadGeometry) {
  EXPECT_EQ(parse_error("  %a : f32[4] strides=[1, 1] = aten::neg(%x)\n"),
            "graph text line 3: expected as many strides as sizes (1), found '[1, 1]'");
  EXPECT_EQ(parse_error("  %a : f32[-4] = aten::neg(%x)\n"), "graph text line 3: expected sizes >= 0, found 'f32[-4]'");
  EXPECT_EQ(parse_error("  %a : f32[4] device=tpu = aten::neg(%x)\n"),
            "graph text line 3: expected a device (cpu, meta, cuda, cuda:N), found 'tpu = aten::neg(%x)'");
  EXPECT_EQ(parse_error("  %a : f32[4] device=cuda:300 = aten::neg(%x)\n"),
            "graph text line 3: expected a device index in 0..127, found 'cuda:300 = aten::neg(%x)'");
  EXPECT_EQ(parse_error("  %a : f32[4611686018427387904, 4] = aten::neg(%x)\n"),
            "graph text line 3: expected sizes whose product fits in 64 bits, found "
            "'f32[4611686018427387904, 4]'");
  EXPECT_EQ(parse_error("  %a : f32[99999999999999999999] = aten::neg(%x)\n"),
            "graph text line 3: expected an integer in sizes '[…]' after the dtype (within 64 bits), found "
            "'99999999999999999999] = aten::neg(%x)'");
}

TEST(GraphTextErrors, StorageWhoseBytesDoNotFitIn64BitsIsRejected) {
  // Each size fits and their product fits, but the bytes the storage spans do not: the
  // interpreter and runnable programs would allocate a wrapped-around size.
  EXPECT_EQ(parse_error("  %a : f32[2] strides=[9223372036854775807] = placeholder[a]\n"),
            "graph text line 3: expected a geometry whose storage (offset + sum((size-1)*stride) + 1 elements) fits "
            "in 64-bit byte offsets, found 'f32[2] strides=[9223372036854775807]'");
  EXPECT_EQ(parse_error("  %a : f32[2305843009213693952] = placeholder[a]\n"),
            "graph text line 3: expected a geometry whose storage (offset + sum((size-1)*stride) + 1 elements) fits "
            "in 64-bit byte offsets, found 'f32[2305843009213693952]'");
  EXPECT_EQ(parse_error("  %a : u8[] offset=9223372036854775807 = placeholder[a]\n"),
            "graph text line 3: expected a geometry whose storage (offset + sum((size-1)*stride) + 1 elements) fits "
            "in 64-bit byte offsets, found 'u8[] offset=9223372036854775807'");
  // An empty tensor spans no elements: its offset alone counts.
  EXPECT_NO_THROW(
      parse_graph("graph g {\n  %a : u8[0] strides=[9223372036854775807] = placeholder[a]\n  return (%a)\n}\n"));
}

TEST(GraphTextErrors, BadLiterals) {
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::gelu(%x, \"tanh)\n"),
            "graph text line 3: expected a closing '\"', found end of line");
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::gelu(%x, \"ta\\qnh\")\n"),
            "graph text line 3: expected an escape (\\\", \\\\, \\n, \\t), found 'qnh\")'");
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::mul.Scalar(%x, 1.5.5)\n"),
            "graph text line 3: expected a number, found '1.5.5)'");
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::mul.Scalar(%x, two)\n"),
            "graph text line 3: expected an argument (a value %name, a list, None, True/False, a number, a string, "
            "torch.<dtype> or device(\"…\")), found 'two)'");
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::cat([[%x]], 0)\n"),
            "graph text line 3: expected a list element (a value %name, None or a literal), found '[%x]], 0)'");
}

TEST(GraphTextErrors, BadLocation) {
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::neg(%x)  # model.cpp\n"),
            "graph text line 3: expected a location 'file:line', found 'model.cpp'");
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::neg(%x)  # model.cpp:twelve\n"),
            "graph text line 3: expected a line number after the last ':' of the location, found 'twelve'");
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::neg(%x) junk\n"),
            "graph text line 3: expected '# file:line' or end of line, found 'junk'");
}

TEST(GraphTextErrors, BadStructure) {
  EXPECT_EQ(error_of([] { parse_graph(""); }, ErrorKind::ValueError),
            "graph text line 1: expected 'graph <name> {', found end of text");
  EXPECT_EQ(error_of([] { parse_graph("grph g {\n}\n"); }, ErrorKind::ValueError),
            "graph text line 1: expected 'graph <name> {', found 'grph g {'");
  EXPECT_EQ(error_of([] { parse_graph("graph g {\n  %x : f32[4] = placeholder[x]\n"); }, ErrorKind::ValueError),
            "graph text line 3: expected a node, 'return (…)' or '}', found end of text");
  EXPECT_EQ(parse_error("  return (%x)\n  %y : f32[4] = aten::neg(%x)\n"),
            "graph text line 4: expected '}' after the return line, found '%y : f32[4] = aten::neg(%x)'");
  EXPECT_EQ(error_of([] { parse_graph("graph g {\n}\nmore\n"); }, ErrorKind::ValueError),
            "graph text line 3: expected end of text after '}', found 'more'");
  EXPECT_EQ(parse_error("  x : f32[4] = aten::neg(%x)\n"),
            "graph text line 3: expected '%name : …' (a node), 'return (…)' or '}', found "
            "'x : f32[4] = aten::neg(%x)'");
  EXPECT_EQ(parse_error("  %a f32[4] = aten::neg(%x)\n"),
            "graph text line 3: expected ':' after the node name, found 'f32[4] = aten::neg(%x)'");
  EXPECT_EQ(parse_error("  %a : (f32[4], f32[4]) = placeholder[a]\n"),
            "graph text line 3: expected one geometry for an input or constant, found '(f32[4], f32[4])'");
  EXPECT_EQ(parse_error("  %a : f32[4] = placeholder[a\n"),
            "graph text line 3: expected a target followed by ']', found 'a'");
}

TEST(GraphTextErrors, ControlCharactersAreShownEscaped) {
  EXPECT_EQ(parse_error("  %a : f32[4] = aten::neg(\x01%x)\n"),
            "graph text line 3: expected an argument (a value %name, a list, None, True/False, a number, a string, "
            "torch.<dtype> or device(\"…\")), found '\\x01%x)'");
}

TEST(GraphTextErrors, SizeOverASymbolTheHeaderDoesNotDeclare) {
  const std::string msg = error_of(
      [] { parse_graph("graph g {\n  symbol s0 = 4 for x.size(0) [2, inf]\n  %x : f32[s0, s1] = placeholder[x]\n}\n"); },
      ErrorKind::ValueError);
  EXPECT_TRUE(msg.starts_with("graph text line 3: expected a size expression over the symbols of the header (")) << msg;
  EXPECT_TRUE(msg.ends_with(", found 's1'")) << msg;
}

TEST(GraphTextErrors, SymbolicSizeWithoutAHeader) {
  EXPECT_EQ(parse_error("  %a : f32[s0] = aten::neg(%x)\n"),
            "graph text line 3: expected an integer in sizes '[…]' after the dtype, found 's0] = aten::neg(%x)'");
}

TEST(GraphTextErrors, SymbolWhoseExampleValueIsOutsideItsRange) {
  EXPECT_EQ(error_of([] { parse_graph("graph g {\n  symbol s0 = 1 for x.size(0) [2, inf]\n}\n"); },
                     ErrorKind::ValueError),
            "graph text line 2: expected an example value inside the range [2, inf], found '1 for x.size(0)'");
}

TEST(GraphTextErrors, SymbolsOutOfOrder) {
  EXPECT_EQ(error_of([] { parse_graph("graph g {\n  symbol s1 = 4 for x.size(0) [2, inf]\n}\n"); },
                     ErrorKind::ValueError),
            "graph text line 2: expected symbol s0 (symbols are numbered in order), found 's1'");
}

TEST(GraphTextErrors, GuardWithoutARelation) {
  EXPECT_EQ(error_of([] { parse_graph("graph g {\n  symbol s0 = 4 for x.size(0) [2, inf]\n  guard s0 = 4\n}\n"); },
                     ErrorKind::ValueError),
            "graph text line 3: expected a guard 'LHS REL RHS' (REL one of ==, !=, <=, <), found 's0 = 4'");
}

}  // namespace
}  // namespace ember
