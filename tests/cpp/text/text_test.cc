// The IR text format: printer, parser, round trips and error messages.
#include "loom/text/text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <fstream>

#include "loom/object/structural.h"
#include "loom/object/serialization.h"
#include "loom/object/traversal.h"
#include "ir/random_ir.h"
#include "ir/sample_module.h"
#include "test_util.h"

namespace loom {
using namespace loom::test;  // NOLINT

namespace {
ir::IRModule round_trip(const ir::IRModule& mod) {
  std::string text = text::print_module(mod);
  ir::IRModule back;
  try {
    back = text::parse_module(text, "printed.loom");
  } catch (const ParseError& e) {
    ADD_FAILURE() << e.what() << "\n--- text ---\n" << text;
    return mod;
  }
  auto diff = structural_difference(mod, back);
  EXPECT_FALSE(diff) << *diff << "\n--- text ---\n" << text;
  EXPECT_EQ(text::print_module(back), text) << "printing is not a fixed point";
  return back;
}
}  // namespace

TEST(Text, SampleModuleRoundTrips) {
  ir::IRModule mod = sample_module();
  std::cout << text::print_module(mod);
  round_trip(mod);
}

}  // namespace loom

namespace loom {
// 1000 random modules through text and through JSON.
TEST(Text, RandomModulesRoundTripThroughTextAndJson) {
  for (uint32_t seed = 0; seed < 1000; ++seed) {
    test::RandomIR gen(seed);
    ir::IRModule mod = gen.module();
    std::string text = text::print_module(mod);
    ir::IRModule back;
    try {
      back = text::parse_module(text, "random.loom");
    } catch (const ParseError& e) {
      FAIL() << "seed " << seed << ": " << e.what() << "\n--- text ---\n" << text;
    }
    auto diff = structural_difference(mod, back);
    ASSERT_FALSE(diff) << "seed " << seed << ": " << *diff << "\n--- text ---\n" << text;
    ASSERT_EQ(text::print_module(back), text) << "seed " << seed << ": printing is not a fixed point";
    Any from_json = load_json(save_json(mod));
    diff = structural_difference(mod, from_json);
    ASSERT_FALSE(diff) << "seed " << seed << " (JSON): " << *diff;
  }
}
}  // namespace loom

namespace loom {
// Every file in tests/fixtures/ir/errors starts with "# expect-error:
// LINE:COL: MESSAGE"; parsing it must fail with exactly that (the source
// named by the file), followed by the source line and a caret.
TEST(Text, MalformedInputsGiveTheirExpectedErrors) {
  auto files = test::expected_error_files(std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/ir/errors");
  ASSERT_GE(files.size(), 25u);
  for (const auto& file : files) {
    try {
      text::parse_module(file.text, file.name);
      ADD_FAILURE() << file.name << " parsed without error";
    } catch (const ParseError& e) {
      std::string what = e.what();
      EXPECT_EQ(what.substr(0, what.find('\n')), file.expected) << file.name;
      // The source line and a caret under the column follow.
      size_t caret = what.rfind('^');
      EXPECT_NE(caret, std::string::npos) << what;
      EXPECT_EQ(static_cast<int>(caret - what.rfind('\n', caret) - 1) - 2, e.column() - 1) << what;
    }
  }
}
}  // namespace loom

namespace loom {
// Golden files: canonical text (after leading comment lines) that parses and
// prints back exactly, round-trips through JSON, and together covers every
// concrete IR node type.
TEST(Text, GoldenFilesAreCanonicalAndCoverEveryNodeType) {
  namespace fs = std::filesystem;
  std::set<std::string> seen;
  int files = 0;
  for (const auto& entry : fs::directory_iterator(std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/ir/golden")) {
    ++files;
    std::ifstream in(entry.path());
    std::string text((std::istreambuf_iterator<char>(in)), {});
    while (text.rfind("#", 0) == 0) text.erase(0, text.find('\n') + 1);
    ir::IRModule mod = text::parse_module(text, entry.path().filename().string());
    EXPECT_EQ(text::print_module(mod), text) << entry.path() << " is not canonical";
    Any back = load_json(save_json(mod));
    EXPECT_TRUE(structural_equal(mod, back)) << entry.path();
    Visitor collect;
    collect.on<Object>([&](const Object* node) {
      seen.insert(node->type_key());
      collect.visit_children(node);
    });
    collect.visit(mod);
  }
  EXPECT_GE(files, 2);
  for (const std::string& key : TypeRegistry::list_keys()) {
    bool ir_node = key.rfind("ir.", 0) == 0 || key.rfind("tir.", 0) == 0 || key.rfind("graph.", 0) == 0;
    if (!ir_node || !TypeRegistry::info(key).create) continue;  // abstract bases
    EXPECT_TRUE(seen.count(key)) << "no golden file contains a " << key;
  }
}
}  // namespace loom

namespace loom {
// Payload positions: where a line and column of an extern function's
// payload stand in the text it was parsed from (text::payload_position),
// through a one-line string's escapes and in a multi-line string.
namespace {
const ir::ExternFuncNode& extern_func(const ir::IRModule& mod, const std::string& name) {
  const auto* f = mod.lookup(name).as<ir::ExternFuncNode>();
  EXPECT_NE(f, nullptr) << name;
  return *f;
}
}  // namespace

TEST(Text, PayloadPositionsMapThroughTheEscapesOfAOneLineString) {
  // Column of the opening quote: 1 + the length of what precedes it.
  std::string head = "@k = extern \"x\" dps fn(Tensor[(4), float32]) -> none payload ";
  int quote = static_cast<int>(head.size()) + 1;
  // payload: "ab\n\tc\"d\n\u00e9x\n" -> lines "ab", "\tc\"d", "\xc3\xa9x"
  std::string text = "# a comment line\n" + head + "\"ab\\n\\tc\\\"d\\n\\u00e9x\\n\"\n";
  ir::IRModule mod = text::parse_module(text, "k.loom");
  const ir::ExternFuncNode& f = extern_func(mod, "k");
  ASSERT_EQ(f.payload, "ab\n\tc\"d\n\xc3\xa9x\n");
  auto at = [&](int column) { return "k.loom:2:" + std::to_string(quote + column); };
  EXPECT_EQ(text::payload_position(f, 1, 1), at(1));   // a
  EXPECT_EQ(text::payload_position(f, 1, 2), at(2));   // b
  EXPECT_EQ(text::payload_position(f, 1, 3), at(3));   // the \n escape ends line 1
  EXPECT_EQ(text::payload_position(f, 1, 9), at(3));   // past the end: the line's end
  EXPECT_EQ(text::payload_position(f, 2, 1), at(5));   // \t
  EXPECT_EQ(text::payload_position(f, 2, 2), at(7));   // c
  EXPECT_EQ(text::payload_position(f, 2, 3), at(8));   // \"
  EXPECT_EQ(text::payload_position(f, 2, 4), at(10));  // d
  EXPECT_EQ(text::payload_position(f, 3, 1), at(13));  // \u00e9 (two bytes)
  EXPECT_EQ(text::payload_position(f, 3, 3), at(19));  // x
  EXPECT_EQ(text::payload_position(f, 4, 1), at(22));  // the closing quote: the payload's end
  EXPECT_EQ(text::payload_position(f, 5, 1), "");      // no such line
  EXPECT_EQ(text::payload_position(f, 0, 1), "");
}

TEST(Text, PayloadPositionsOfAMultiLineStringAreItsOwnLines) {
  std::string text =
      "@k = extern \"x\" dps fn(Tensor[(4), float32]) -> none payload \"\"\"\n"
      "func.func @k() {\n"
      "  return \"\\n\"\n"  // no escapes: a backslash is a backslash
      "}\n"
      "\"\"\"\n";
  ir::IRModule mod = text::parse_module(text, "k.loom");
  const ir::ExternFuncNode& f = extern_func(mod, "k");
  ASSERT_EQ(f.payload, "func.func @k() {\n  return \"\\n\"\n}\n");
  EXPECT_EQ(text::payload_position(f, 1, 1), "k.loom:2:1");
  EXPECT_EQ(text::payload_position(f, 2, 3), "k.loom:3:3");
  EXPECT_EQ(text::payload_position(f, 2, 12), "k.loom:3:12");
  EXPECT_EQ(text::payload_position(f, 3, 1), "k.loom:4:1");
  EXPECT_EQ(text::payload_position(f, 4, 1), "k.loom:5:1");  // the closing """
  // The same function as a one-line string: structurally equal; the
  // printer writes the one-line form (the canonical text is unchanged).
  std::string printed = text::print_module(mod);
  EXPECT_EQ(printed.find("\"\"\""), std::string::npos) << printed;
  ir::IRModule back = text::parse_module(printed, "printed.loom");
  EXPECT_TRUE(structural_equal(mod, back));
  EXPECT_EQ(text::print_module(back), printed);
  // A payload that does not end in a line break closes on its last line.
  ir::IRModule tight = text::parse_module(
      "@k = extern \"x\" dps fn(Tensor[(4), float32]) -> none payload \"\"\"\nab\ncd\"\"\"", "t.loom");
  EXPECT_EQ(extern_func(tight, "k").payload, "ab\ncd");
  EXPECT_EQ(text::payload_position(extern_func(tight, "k"), 2, 2), "t.loom:3:2");
}

TEST(Text, PayloadPositionsAreNotPartOfTheIR) {
  std::string text = "@k = extern \"x\" dps fn(Tensor[(4), float32]) -> none payload \"a\\nb\"\n";
  ir::IRModule mod = text::parse_module(text, "k.loom");
  EXPECT_EQ(text::payload_position(extern_func(mod, "k"), 2, 1), "k.loom:1:66");
  // Equal to the same function built in C++, which has no position; JSON
  // does not carry it either.
  ir::IRModule built(std::map<std::string, Any>{{"k", ir::ExternFunc("x", "a\nb", extern_func(mod, "k").signature)}},
                     Map::empty(), Map::empty());
  EXPECT_TRUE(structural_equal(mod, built));
  EXPECT_EQ(structural_hash(mod), structural_hash(built));
  EXPECT_EQ(text::payload_position(extern_func(built, "k"), 2, 1), "");
  ir::IRModule from_json = load_json(save_json(mod)).cast<ir::IRModule>();
  EXPECT_EQ(text::payload_position(extern_func(from_json, "k"), 2, 1), "");
  // A position kept with another payload maps nothing.
  ir::ExternFunc changed("x", "a\nc", extern_func(mod, "k").signature);
  const_cast<ir::ExternFuncNode*>(changed.get())->payload_source = extern_func(mod, "k").payload_source;
  EXPECT_EQ(text::payload_position(*changed.get(), 2, 1), "");
  // A base64 payload has no lines to map.
  ir::IRModule blob = text::parse_module(
      "@k = extern \"x\" packed fn(Tensor[(4), float32]) -> none encoding \"base64\" payload \"AAEC\"", "b.loom");
  EXPECT_EQ(extern_func(blob, "k").payload_source, nullptr);
}

TEST(Text, MalformedMultiLineStringsAreRefused) {
  auto error = [](const std::string& text) {
    try {
      text::parse_module(text, "m.loom");
    } catch (const ParseError& e) {
      std::string what = e.what();
      return what.substr(0, what.find('\n'));
    }
    return std::string("parsed");
  };
  std::string head = "@k = extern \"x\" dps fn(Tensor[(4), float32]) -> none payload ";
  EXPECT_EQ(error(head + "\"\"\"ab\n\"\"\""),
            "m.loom:1:62: a multi-line string's opening \"\"\" ends its line (the text starts on the next line)");
  EXPECT_EQ(error(head + "\"\"\"\nab\n"), "m.loom:1:62: unterminated multi-line string (it ends with \"\"\")");
}
}  // namespace loom

namespace loom {
// Attribute values that are dimensions (a reshape's target, a slice's end)
// read back in every form the printer writes them: a call (min, max,
// select), a number first (4 * %n, 0 - %n), parenthesised ((%n + 1) // 2).
TEST(Text, DimensionsInAttributesRoundTrip) {
  tir::Var n("n", DataType::Int(64));
  std::vector<tir::PrimExpr> dims = {
      tir::Min(n, tir::IntImm(DataType::Int(64), 150)),
      tir::Max(n, tir::IntImm(DataType::Int(64), 2)),
      tir::Mul(tir::IntImm(DataType::Int(64), 4), n),
      tir::Sub(tir::IntImm(DataType::Int(64), 0), n),
      tir::FloorDiv(tir::Add(n, tir::IntImm(DataType::Int(64), 1)), tir::IntImm(DataType::Int(64), 2)),
      tir::Mul(tir::Add(n, tir::IntImm(DataType::Int(64), 1)), tir::Min(n, tir::IntImm(DataType::Int(64), 3))),
      tir::Select(tir::GT(n, tir::IntImm(DataType::Int(64), 3)), n, tir::IntImm(DataType::Int(64), 3))};
  graph::Var x("x",
               ir::TensorType(Array({Any(tir::PrimExpr(n)), Any(tir::PrimExpr(tir::IntImm(DataType::Int(64), 4)))}),
                              DataType::Float(32)));
  for (const tir::PrimExpr& d : dims) {
    graph::Expr body = graph::Call(ir::Op::get("reshape"), {x}, Map({{"shape", Array({Any(d), Any(int64_t{-1})})}}));
    ir::IRModule mod({{"main", graph::Function({x}, body, ir::Type(), Map::empty())}}, Map::empty());
    round_trip(mod);
  }
}
}  // namespace loom
