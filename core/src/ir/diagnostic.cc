#include "loom/ir/diagnostic.h"

namespace loom::ir {

std::string Diagnostic::to_string() const {
  std::string out = "@" + function + ": " + message;
  if (!node.empty()) {
    std::string shown = node.size() > 200 ? node.substr(0, 197) + "..." : node;
    for (size_t at = shown.find('\n'); at != std::string::npos; at = shown.find('\n', at + 5))
      shown.replace(at, 1, "\n       ");
    out += "\n    in: " + shown;
  }
  return out;
}

std::string diagnostic_lines(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) out += "\n  " + d.to_string();
  return out;
}

}  // namespace loom::ir
