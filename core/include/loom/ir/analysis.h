// Well-formedness checking and type inference (see docs/ir.md).
#ifndef LOOM_IR_ANALYSIS_H_
#define LOOM_IR_ANALYSIS_H_

#include <string>
#include <vector>

#include "loom/ir/expr.h"
#include "loom/ir/module.h"
#include "loom/ir/type.h"

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

// The type of one graph expression (an importer's or builder's view while
// it builds): fills checked_type of it and of every sub-expression not yet
// typed, so typing each new node of a growing graph costs only the new
// node.  Calls of @functions are typed against `module`.  Throws
// TypeInferenceError listing the problems.
Type infer_expr_type(const Expr& expr, const IRModule& module);

// well_formed, then infer_types; throws Error listing every diagnostic.
IRModule check_module(const IRModule& module);

}  // namespace loom::ir

#endif  // LOOM_IR_ANALYSIS_H_
