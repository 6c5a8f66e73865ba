#include "loom/support/error.h"

#include <gtest/gtest.h>

#include <new>
#include <string>
#include <system_error>

namespace loom {

// What a command or the Python API shows for an exception: never the C++
// library's internal text.
TEST(ErrorMessage, LibraryExceptionsReadAsWords) {
  EXPECT_EQ(error_message(ParseError("a.loom", 2, 3, "unexpected ')'")), "a.loom:2:3: unexpected ')'");
  std::string out_of_memory = error_message(std::bad_alloc());
  EXPECT_EQ(out_of_memory.rfind("out of memory: the system refused an allocation", 0), 0u) << out_of_memory;
  EXPECT_EQ(out_of_memory.find("std::"), std::string::npos);
  std::string too_long;
  try {
    std::string s;
    s.reserve(s.max_size() + 1);
  } catch (const std::exception& e) {
    too_long = error_message(e);
  }
  EXPECT_EQ(too_long, out_of_memory);  // not "basic_string::_M_create"
  std::string refused =
      error_message(std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again)));
  EXPECT_EQ(refused, "the system refused an operation Loom needed: Resource temporarily unavailable");
  std::string internal = error_message(std::invalid_argument("stoll"));
  EXPECT_EQ(internal, "internal error: stoll (this is a bug in Loom: please report it with the input that caused it)");
}

}  // namespace loom
