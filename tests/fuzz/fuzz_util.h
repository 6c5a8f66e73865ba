// What every fuzz target shares (docs/reliability.md, "Fuzzing"): an input
// may be refused with a loom::Error -- that is the contract -- and
// anything else (another exception, a signal, a sanitizer report, a
// timeout) is a finding.
#ifndef LOOM_TESTS_FUZZ_FUZZ_UTIL_H_
#define LOOM_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "loom/support/error.h"

namespace loom::fuzz {

inline std::string bytes(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Runs f; a loom::Error is a refusal, any other exception aborts with its
// text (internal text such as "stoll" or "std::bad_alloc" must not reach
// users).
template <class F>
bool refused(F&& f) {
  try {
    f();
    return false;
  } catch (const Error&) {
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: an exception that is not a loom::Error: %s\n", e.what());
    std::abort();
  }
}

}  // namespace loom::fuzz

#endif  // LOOM_TESTS_FUZZ_FUZZ_UTIL_H_
