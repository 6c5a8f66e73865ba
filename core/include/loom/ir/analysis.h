// Well-formedness checking and type inference (see docs/ir.md).
#ifndef LOOM_IR_ANALYSIS_H_
#define LOOM_IR_ANALYSIS_H_

#include <string>
#include <vector>

#include "loom/ir/module.h"

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

// Every well-formedness problem of the module (empty: well formed).
std::vector<Diagnostic> well_formed(const IRModule& module);

// Type inference over the graph functions: returns the module with each
// graph expression's checked_type set and missing result types filled in.
// Type errors are returned in `diagnostics` (the module is then partial).
IRModule infer_types(const IRModule& module, std::vector<Diagnostic>* diagnostics);

// well_formed, then infer_types; throws Error listing every diagnostic.
IRModule check_module(const IRModule& module);

}  // namespace loom::ir

#endif  // LOOM_IR_ANALYSIS_H_
