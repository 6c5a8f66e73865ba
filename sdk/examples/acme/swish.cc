// The operator acme.swish(x, beta=1.0) = x * sigmoid(beta * x), and the
// pass AcmeFuseSwish that finds it in models written without it.
//
// The operator is defined with the SDK's define_operator
// (loom/graph/operator.h): a schema, a type rule (a float tensor in, the
// same type out; a TypeError otherwise) and a lowering built with the
// core's PrimBuilder (loom/tir/builder.h), which LegalizeOps calls.
//
// The pass runs first in target acme's default pipeline: it rewrites
// silu(x) and multiply(x, sigmoid(x)) (either order) into acme.swish(x),
// one operator the Acme compiler has a tuned routine for.  It needs types
// (the pass manager runs InferType first) and leaves the sigmoid's binding
// to DeadCodeElimination.
#include <loom/graph/function.h>
#include <loom/graph/operator.h>
#include <loom/graph/pattern.h>
#include <loom/ir/op.h>
#include <loom/object/traversal.h>
#include <loom/tir/builder.h>
#include <loom/tir/util.h>
#include <loom/transform/pass.h>

#include "acme.h"

namespace acme {

namespace {
using loom::Any;
using loom::Map;
using loom::graph::CallNode;
using loom::ir::Expr;

loom::tir::PrimExpr swish(const loom::tir::PrimExpr& x, double beta) {
  loom::tir::PrimExpr scaled = loom::tir::Mul(loom::tir::make_const(x.dtype(), beta), x);
  return loom::tir::Mul(x, loom::tir::Call(x.dtype(), "sigmoid", {scaled}));
}

void define_swish() {
  loom::graph::define_operator(
      "acme.swish", 1, {{"beta", "float", 1.0, "the slope inside the sigmoid"}}, loom::ir::PatternKind::kElementwise,
      "x * sigmoid(beta * x), elementwise (Acme's tuned activation)",
      [](const CallNode& call) -> loom::ir::Type {
        const auto& x = loom::graph::tensor_arg(call, 0);
        if (!loom::tir::is_float(x.dtype)) {
          LOOM_THROW(TypeError) << "needs a float tensor, got " << x.dtype.to_string();
        }
        return loom::ir::TensorType(x.shape, x.dtype);
      },
      [](const CallNode& call) {
        double beta = loom::graph::attrs_of(call).at("beta").as_float();
        loom::tir::PrimBuilder b;
        loom::tir::Buffer x = b.param(loom::graph::tensor_arg(call, 0), "X");
        loom::tir::Buffer y = b.param(loom::graph::result_type(call), "Y");
        return b.finish(loom::tir::compute(
            y, [&](const loom::tir::Indices& i) { return swish(loom::tir::BufferLoad(x, i), beta); }));
      });
}

// silu(x), multiply(x, sigmoid(x)) and multiply(sigmoid(x), x), with x
// one expression (the pattern is a DAG: the wildcard used twice).
loom::graph::Pattern swish_pattern(const loom::graph::Pattern& x) {
  using loom::graph::op;
  loom::graph::Pattern sigmoid = op("sigmoid", {x});
  return op("silu", {x}) | op("multiply", {x, sigmoid}) | op("multiply", {sigmoid, x});
}

loom::transform::Pass FuseSwish() {
  loom::transform::PassInfo info =
      loom::transform::PassInfo::named("AcmeFuseSwish")
          .summary("silu(x) and x * sigmoid(x) become acme.swish(x), which Acme runs as one routine")
          .needs({"types_inferred"})
          .changes({"graph"});  // keeps every tir property
  return loom::transform::function_pass<loom::graph::FunctionNode>(
      info,
      [](const loom::ir::BaseFunc& func, const loom::ir::IRModule&,
         const loom::transform::PassContext&) -> loom::ir::BaseFunc {
        const auto* f = func.as<loom::graph::FunctionNode>();
        if (!loom::graph::codegen_of(func).empty()) return func;  // a partitioned region: its codegen's
        // What each let-bound variable stands for, so the pattern sees
        // through `let %s = sigmoid(%x)`.
        std::unordered_map<const loom::Object*, Expr> values;
        loom::Visitor collect;
        collect.on<loom::graph::LetNode>([&](const loom::graph::LetNode* let) {
          values[let->var.get()] = let->value;
          collect.visit_children(let);
        });
        collect.visit(Any(f->body));
        auto bindings = [&](const loom::graph::VarNode* v) -> std::optional<Expr> {
          auto it = values.find(v);
          return it == values.end() ? std::nullopt : std::optional<Expr>(it->second);
        };
        loom::graph::Pattern pattern = swish_pattern(loom::graph::wildcard());
        loom::ir::Op acme_swish = loom::ir::Op::get("acme.swish");
        loom::Mutator m;
        m.on<CallNode>([&](const CallNode*, const loom::ObjectRef& self) -> Any {
          loom::ObjectRef call = m.mutate_children(self);
          std::optional<loom::graph::Match> found = loom::graph::match(pattern, Any(call).cast<Expr>(), bindings);
          if (!found || found->inputs.size() != 1) return Any(call);
          return Any(loom::graph::Call(acme_swish, {found->inputs[0]}));
        });
        Expr body = m.mutate_as<Expr>(f->body);
        if (body.same_as(f->body)) return func;
        std::vector<loom::graph::Var> params;
        for (const Any& p : f->params) params.push_back(p.cast<loom::graph::Var>());
        return loom::graph::Function(params, body, f->ret_type, f->attrs);
      });
}
}  // namespace

void register_swish() {
  define_swish();
  // What `loomc plugin test` checks the operator on, against the reference
  // interpreter (docs/plugin-tools.md): the default beta, and another.
  loom::graph::set_op_examples("acme.swish", {{"acme.swish(%a0)", {"Tensor[(3, 5), float32]"}},
                                              {"acme.swish(%a0, beta=2.0)", {"Tensor[(4, 8), float32]"}, -6, 6}});
  loom::transform::PassRegistry::register_pass(FuseSwish());
}

}  // namespace acme
