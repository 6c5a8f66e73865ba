// The IR text format: printer, parser, round trips and error messages.
#include "loom/ir/text.h"

#include <gtest/gtest.h>

#include "loom/object/structural.h"
#include "sample_module.h"

namespace loom {
using namespace loom::test;  // NOLINT

namespace {
ir::IRModule round_trip(const ir::IRModule& mod) {
  std::string text = ir::print_module(mod);
  ir::IRModule back;
  try {
    back = ir::parse_module(text, "printed.loom");
  } catch (const ParseError& e) {
    ADD_FAILURE() << e.what() << "\n--- text ---\n" << text;
    return mod;
  }
  auto diff = structural_difference(mod, back);
  EXPECT_FALSE(diff) << *diff << "\n--- text ---\n" << text;
  EXPECT_EQ(ir::print_module(back), text) << "printing is not a fixed point";
  return back;
}
}  // namespace

TEST(Text, SampleModuleRoundTrips) {
  ir::ExternKindRegistry::register_kind("test_asm", Function::typed([](ObjectRef) {}));
  ir::IRModule mod = sample_module();
  std::cout << ir::print_module(mod);
  round_trip(mod);
}

}  // namespace loom
