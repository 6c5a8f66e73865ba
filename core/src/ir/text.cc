#include "loom/ir/text.h"

#include <atomic>
#include <exception>

#include "loom/object/structural.h"

namespace loom::ir {

namespace {
std::atomic<std::string (*)(const Any&)> node_printer{nullptr};
}  // namespace

void set_node_printer(std::string (*printer)(const Any& node)) { node_printer.store(printer); }

std::string to_text(const Any& node) {
  // Used in diagnostics about IR that may be broken: never fail.
  auto* printer = node_printer.load();
  if (printer) {
    try {
      return printer(node);
    } catch (const std::exception&) {
    }
  }
  return repr(node);
}

}  // namespace loom::ir
