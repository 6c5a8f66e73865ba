// Helpers shared by the C++ tests.
#ifndef LOOM_TESTS_CPP_TEST_UTIL_H_
#define LOOM_TESTS_CPP_TEST_UTIL_H_

#include <exception>
#include <functional>
#include <string>

namespace loom::test {

// The message of the exception `fn` throws, or "no error".
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace loom::test

#endif
