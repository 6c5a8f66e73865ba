// A problem found in a module by a whole-module check (well-formedness,
// type inference): the function, the message and the offending node.
#ifndef LOOM_IR_DIAGNOSTIC_H_
#define LOOM_IR_DIAGNOSTIC_H_

#include <string>
#include <vector>

namespace loom::ir {

struct Diagnostic {
  std::string function;  // the global name, without '@'
  std::string message;
  std::string node;  // the offending node in text form (may be empty)
  // "@f: message\n    in: node"
  std::string to_string() const;
};

// The diagnostics as message lines, each after a newline and indented.
std::string diagnostic_lines(const std::vector<Diagnostic>& diagnostics);

}  // namespace loom::ir

#endif  // LOOM_IR_DIAGNOSTIC_H_
