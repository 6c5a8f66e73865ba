// The .loom text parser: any text parses or is a ParseError; a module that
// parses is checked, printed, and its printed text parses again to the
// same module.
#include "fuzz_util.h"
#include "loom/graph/well_formed.h"
#include "loom/text/text.h"
#include "loom/object/structural.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;  // NOLINT
  std::string text = fuzz::bytes(data, size);
  ir::IRModule module;
  if (fuzz::refused([&] { module = text::parse_module(text, "fuzz.loom"); })) return 0;
  fuzz::refused([&] { graph::check_module(module); });
  std::string printed = text::print_module(module);
  ir::IRModule again;
  try {
    again = text::parse_module(printed, "printed.loom");
  } catch (const Error& e) {
    std::fprintf(stderr, "fuzz: the printed module does not parse: %s\n--- printed:\n%s\n", e.what(), printed.c_str());
    std::abort();
  }
  if (!structural_equal(Any(module), Any(again))) {
    std::fprintf(stderr, "fuzz: the printed module parses to another module\n--- printed:\n%s\n", printed.c_str());
    std::abort();
  }
  return 0;
}
