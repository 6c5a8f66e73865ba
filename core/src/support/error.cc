#include "loom/support/error.h"

#include <new>
#include <system_error>

namespace loom {

std::string error_message(const std::exception& e) {
  if (dynamic_cast<const Error*>(&e)) return e.what();
  if (dynamic_cast<const std::bad_alloc*>(&e) || dynamic_cast<const std::length_error*>(&e)) {
    // (std::length_error: a string or vector asked for more than its
    // maximum size, e.g. a size read from a file.)
    return "out of memory: the system refused an allocation (the input may describe more data than this "
           "machine holds)";
  }
  if (const auto* system = dynamic_cast<const std::system_error*>(&e)) {
    return "the system refused an operation Loom needed: " + system->code().message();
  }
  return std::string("internal error: ") + e.what() +
         " (this is a bug in Loom: please report it with the input that caused it)";
}

}  // namespace loom
