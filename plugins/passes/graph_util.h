// Helpers shared by the graph passes.
#ifndef LOOM_PLUGINS_PASSES_GRAPH_UTIL_H_
#define LOOM_PLUGINS_PASSES_GRAPH_UTIL_H_

#include <functional>
#include <set>
#include <string>
#include <unordered_map>

#include "loom/ir/function.h"
#include "loom/ir/module.h"
#include "loom/object/traversal.h"

namespace loom::passes {

// How often each graph variable is used in `e` (bindings are not uses).
std::unordered_map<const Object*, int> var_uses(const ir::Expr& e);

// `e` with variables replaced by `with` (by identity).
ir::Expr substitute(const ir::Expr& e, const std::unordered_map<const Object*, ir::Expr>& with);

// Rebuilds every let chain of `e` bottom-up: `rewrite(var, value, body)`
// returns the replacement of `let var = value; body` (the value and body
// already rewritten).  Iterative over long chains.
ir::Expr rewrite_lets(const ir::Expr& e,
                      const std::function<ir::Expr(const graph::Var&, const ir::Expr&, const ir::Expr&)>& rewrite);

// Whether evaluating `e` has no effect besides its value (call_packed may
// have one).
bool is_pure(const ir::Expr& e);

// Names for the functions a pass adds to a module: the hint with '.' made
// '_', then "_1", "_2", ... until it is free; each name handed out is taken.
class FunctionNames {
 public:
  explicit FunctionNames(const ir::IRModule& module);
  std::string fresh(const std::string& hint);

 private:
  std::set<std::string> taken_;
};

// A graph function with a new body (parameters, type and attributes kept).
graph::Function with_body(const graph::FunctionNode& f, const ir::Expr& body);

}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_GRAPH_UTIL_H_
