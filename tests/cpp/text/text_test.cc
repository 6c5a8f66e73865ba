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
