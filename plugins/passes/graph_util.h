// Names for the functions the graph passes add; the binding helpers they
// share are the core's (loom/graph/bindings.h).
#ifndef LOOM_PLUGINS_PASSES_GRAPH_UTIL_H_
#define LOOM_PLUGINS_PASSES_GRAPH_UTIL_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/graph/bindings.h"
#include "loom/graph/function.h"
#include "loom/ir/module.h"
#include "loom/object/traversal.h"
#include "loom/runtime/ndarray.h"
#include "loom/transform/pass.h"

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

// The body of the graph function `call` calls (a primitive function a
// group anchors on, or one FuseTIR inlines), with its parameters replaced
// by the call's arguments and its bindings by fresh variables: its
// bindings and its result.
std::pair<std::vector<graph::Binding>, ir::Expr> inline_primitive(const ir::IRModule& module,
                                                                  const graph::CallNode& call);

// The call of operator `name` that `e` is, or null.
const graph::CallNode* call_of(const ir::Expr& e, const char* name);

// The call of a product with an out_dtype (conv2d, matmul or dense) that
// `e` is, or null: what QDQToInteger and ToMixedPrecision rewrite.
const graph::CallNode* product_call(const ir::Expr& e);

// A one-element constant of `dtype` holding `value`, whose C type T is
// the dtype's (float for float32, int16_t for int16, ...).
template <typename T>
ir::Expr scalar_constant(DataType dtype, T value) {
  return graph::Constant(
      runtime::NDArray::from_bytes({}, dtype, std::string(reinterpret_cast<const char*>(&value), sizeof value)));
}

// A call of the operator `op` (attributes a pass writes: unchecked here,
// InferType checks them).
ir::Expr call_op(const char* op, std::vector<ir::Expr> args, Map attrs = Map(std::map<std::string, Any>{}));

// `attrs` with `changes` set (added or replaced).
Map with_attrs(const Map& attrs, const std::map<std::string, Any>& changes);

// `e` with each call rewritten bottom-up: rewrite(original, mutated) sees
// the call as it was (typed) and with its arguments already rewritten, and
// returns its replacement, or an undefined Expr to keep `mutated`.
using CallRewrite = std::function<ir::Expr(const graph::CallNode& original, const graph::CallNode& mutated)>;
ir::Expr rewrite_calls(const ir::Expr& e, const CallRewrite& rewrite);

// `module` with the body of each graph function that is neither fused
// (primitive) nor a codegen's partition replaced by rewrite(name, f) (the
// same body for "no change"): for passes that read the function's target.
ir::IRModule rewrite_graph_bodies(
    const ir::IRModule& module, const std::function<ir::Expr(const std::string&, const graph::FunctionNode&)>& rewrite);

// A function pass over graph functions that rewrites each body:
// rewrite(function, context) returns the new body, or the same one for
// "no change" (the function is then kept as it is).
transform::Pass graph_body_pass(
    const transform::PassInfo& info,
    std::function<ir::Expr(const graph::FunctionNode&, const transform::PassContext&)> rewrite);

}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_GRAPH_UTIL_H_
