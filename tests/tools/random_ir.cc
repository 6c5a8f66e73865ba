// Prints random modules of the generator the round-trip tests use
// (tests/cpp/ir/random_ir.h), for tests in other languages: the hybrid
// script's round trip (tests/python/test_script.py).  Usage:
//   loom_random_ir COUNT [FIRST_SEED]
// Each module's text, then a line "# ----- seed N".  The modules call the
// operators rand.add and rand.conv: a process that parses them loads the
// fixture plugin fx_rand_ops, which registers them.
#include <cstdio>
#include <iostream>
#include <string>

#include "../cpp/ir/random_ir.h"
#include "loom/text/text.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: loom_random_ir COUNT [FIRST_SEED]\n";
    return 2;
  }
  uint32_t count = static_cast<uint32_t>(std::stoul(argv[1]));
  uint32_t first = argc == 3 ? static_cast<uint32_t>(std::stoul(argv[2])) : 0;
  for (uint32_t seed = first; seed < first + count; ++seed) {
    loom::test::RandomIR gen(seed);
    std::cout << loom::text::print_module(gen.module()) << "# ----- seed " << seed << "\n";
  }
  return 0;
}
