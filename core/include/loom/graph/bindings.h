// Bindings of graph functions: walking a let chain, the uses of variables,
// substitution, purity, and the helpers that take chains apart and put
// them back together (flattened, rebuilt, regions lifted into functions
// of their own).  What the graph passes, the driver and vendors' passes
// share (docs/ir.md, "Graph functions: let chains").
#ifndef LOOM_GRAPH_BINDINGS_H_
#define LOOM_GRAPH_BINDINGS_H_

#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/graph/expr.h"
#include "loom/graph/function.h"

namespace loom::graph {

// Calls fn(let) for each binding of the let chain that starts at `e`, in
// order (`let x = v; let y = w; r` gives x then y), and returns what follows
// the last binding (`r`; `e` itself when it is not a let).  Iterative, so
// a chain of any length takes no stack.
template <typename Fn>
ir::Expr for_each_binding(ir::Expr e, Fn&& fn) {
  while (const auto* let = e.as<LetNode>()) {
    ir::Expr body = let->body;  // fn may drop the last reference to e
    fn(*let);
    e = std::move(body);
  }
  return e;
}

// The expression after the last binding of the chain that starts at `e`.
inline ir::Expr chain_result(const ir::Expr& e) {
  return for_each_binding(e, [](const LetNode&) {});
}

// How often each graph variable is used in `e` (bindings are not uses).
std::unordered_map<const Object*, int> var_uses(const ir::Expr& e);

// `e` with variables and constants replaced by `with` (by identity).
ir::Expr substitute(const ir::Expr& e, const std::unordered_map<const Object*, ir::Expr>& with);

// Rebuilds every let chain of `e` bottom-up: `rewrite(var, value, body)`
// returns the replacement of `let var = value; body` (the value and body
// already rewritten).  Iterative over long chains.
ir::Expr rewrite_lets(const ir::Expr& e,
                      const std::function<ir::Expr(const Var&, const ir::Expr&, const ir::Expr&)>& rewrite);

// `e` without the let bindings whose variable is unused and whose value is
// pure (repeatedly: a binding used only by a dropped one goes too).
ir::Expr drop_dead_bindings(const ir::Expr& e);

// One binding of a function's top-level let chain.
struct Binding {
  Var var;
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
  std::vector<Var> params;                               // typed as what they stand for
  std::vector<ir::Expr> args;                            // what a call of the function passes for each
  std::unordered_map<const Object*, ir::Expr> param_of;  // outside value -> its parameter
};
Lifted lift_free_values(const std::vector<Binding>& members, bool constants);

// let b0 = ...; let b1 = ...; result
ir::Expr build_chain(const std::vector<Binding>& bindings, const ir::Expr& result);

// Whether evaluating `e` has no effect besides its value: call_packed may
// have one, and so may a direct call of a graph or extern function (its
// body is not looked at).  call_dps of a kernel writes only its output.
bool is_pure(const ir::Expr& e);

// A graph function with a new body (parameters, type and attributes kept,
// or the attributes `attrs` when given).
Function with_body(const FunctionNode& f, const ir::Expr& body, const Map& attrs = Map());

}  // namespace loom::graph

#endif  // LOOM_GRAPH_BINDINGS_H_
