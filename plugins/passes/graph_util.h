// Helpers shared by the graph passes.
#ifndef LOOM_PLUGINS_PASSES_GRAPH_UTIL_H_
#define LOOM_PLUGINS_PASSES_GRAPH_UTIL_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "loom/graph/function.h"
#include "loom/ir/module.h"
#include "loom/object/traversal.h"

namespace loom::passes {

// How often each graph variable is used in `e` (bindings are not uses).
std::unordered_map<const Object*, int> var_uses(const ir::Expr& e);

// `e` with variables and constants replaced by `with` (by identity).
ir::Expr substitute(const ir::Expr& e, const std::unordered_map<const Object*, ir::Expr>& with);

// Rebuilds every let chain of `e` bottom-up: `rewrite(var, value, body)`
// returns the replacement of `let var = value; body` (the value and body
// already rewritten).  Iterative over long chains.
ir::Expr rewrite_lets(const ir::Expr& e,
                      const std::function<ir::Expr(const graph::Var&, const ir::Expr&, const ir::Expr&)>& rewrite);

// `e` without the let bindings whose variable is unused and whose value is
// pure (repeatedly: a binding used only by a dropped one goes too).
ir::Expr drop_dead_bindings(const ir::Expr& e);

// One binding of a function's top-level let chain.
struct Binding {
  graph::Var var;
  ir::Expr value;
};

// The top-level let chain of `body` as bindings, with every call nested
// inside a binding's value (or the result) bound to a fresh variable of
// its own, typed as the call was ("t0", "t1", ...): `gelu(add(h, b))`
// becomes two bindings, and so does the tuple `(relu(a), tanh(b))`.
// Returns the bindings and the result expression.
std::pair<std::vector<Binding>, ir::Expr> flatten_chain(const ir::Expr& body);

// What a set of bindings reads from outside it, made parameters of the
// function they become: the variables the values use that no member
// binds, and, with `constants`, the constants they use (a fused group's
// weights, passed in like any tensor), each once, in order of first use.
struct Lifted {
  std::vector<graph::Var> params;  // typed as what they stand for
  std::vector<ir::Expr> args;      // what a call of the function passes for each
  std::unordered_map<const Object*, ir::Expr> param_of;  // outside value -> its parameter
};
Lifted lift_free_values(const std::vector<Binding>& members, bool constants);

// let b0 = ...; let b1 = ...; result
ir::Expr build_chain(const std::vector<Binding>& bindings, const ir::Expr& result);

// Whether evaluating `e` has no effect besides its value: call_packed may
// have one, and so may a direct call of a graph or extern function (its
// body is not looked at).  call_dps of a kernel writes only its output.
bool is_pure(const ir::Expr& e);

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

// A graph function with a new body (parameters, type and attributes kept,
// or the attributes `attrs` when given).
graph::Function with_body(const graph::FunctionNode& f, const ir::Expr& body, const Map& attrs = Map());

}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_GRAPH_UTIL_H_
