// Type inference of graph functions (docs/ir.md, "Type inference").
#ifndef LOOM_GRAPH_TYPE_INFER_H_
#define LOOM_GRAPH_TYPE_INFER_H_

#include <vector>

#include "loom/ir/diagnostic.h"
#include "loom/ir/expr.h"
#include "loom/ir/module.h"
#include "loom/ir/type.h"

namespace loom::graph {

// Type inference over the graph functions: returns the module with each
// graph expression's checked_type set and missing result types filled in.
// Type errors are returned in `diagnostics` (the module is then partial).
ir::IRModule infer_types(const ir::IRModule& module, std::vector<ir::Diagnostic>* diagnostics);

// The type of one graph expression (an importer's or builder's view while
// it builds): fills checked_type of it and of every sub-expression not yet
// typed, so typing each new node of a growing graph costs only the new
// node.  Calls of @functions are typed against `module`.  Throws
// TypeInferenceError listing the problems.
ir::Type infer_expr_type(const ir::Expr& expr, const ir::IRModule& module);

}  // namespace loom::graph

#endif  // LOOM_GRAPH_TYPE_INFER_H_
