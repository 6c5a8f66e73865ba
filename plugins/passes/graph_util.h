// Names for the functions the graph passes add; the binding helpers they
// share are the core's (loom/graph/bindings.h).
#ifndef LOOM_PLUGINS_PASSES_GRAPH_UTIL_H_
#define LOOM_PLUGINS_PASSES_GRAPH_UTIL_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "loom/graph/bindings.h"
#include "loom/graph/function.h"
#include "loom/ir/module.h"
#include "loom/object/traversal.h"

namespace loom::passes {

// Names for the functions a pass adds to a module: the hint with '.' made
// '_', then "_1", "_2", ... until it is free; each name handed out is taken.
class FunctionNames {
 public:
  explicit FunctionNames(const ir::IRModule& module);
  std::string fresh(const std::string& hint);

 private:
  std::set<std::string> taken_;
  std::map<std::string, int64_t> next_suffix_;
};

// The value of `call` with the constant arguments `args` (a Constant, or
// a Tuple of them), or an undefined Expr when it cannot be evaluated
// here: the operator's lowering run by the reference interpreter
// (ref.run_prim_func, so that folding and running agree bit for bit) on
// the constants' arrays.  FoldConstant's evaluator; ConvertLayout's for
// what padded channels hold.
ir::Expr evaluate_call(const graph::CallNode& call, const std::vector<ir::Expr>& args);

}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_GRAPH_UTIL_H_
