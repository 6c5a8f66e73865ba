#include "eliminate_common_subexpr.h"

#include <vector>

#include "graph_util.h"
#include "loom/object/structural.h"

namespace loom::passes {

namespace {
// The values bound so far in a scope, by structural hash: a value computed
// again is one that same_expression finds equal (variables by identity,
// everything else by structure).
struct Bound {
  ir::Expr value;
  graph::Var var;
};
using Table = std::unordered_map<uint64_t, std::vector<Bound>>;

// Whether a value may be shared: pure, a computation (not a variable or a
// constant), and not a scope of its own (an if or a let).
bool shareable(const ir::Expr& value) {
  if (value.as<graph::VarNode>() || value.as<graph::ConstantNode>() || value.as<graph::IfNode>() ||
      value.as<graph::LetNode>()) {
    return false;
  }
  return graph::is_pure(value);
}

ir::Expr cse(const ir::Expr& e, Table table, std::unordered_map<const Object*, ir::Expr>& subst);

// Branches of ifs get their own scope (a copy of the table).
ir::Expr cse_nested(const ir::Expr& e, const Table& table, std::unordered_map<const Object*, ir::Expr>& subst) {
  Mutator m;
  m.on<graph::IfNode>([&](const graph::IfNode* node, const ObjectRef& self) -> Any {
    ir::Expr cond = graph::substitute(node->cond, subst);
    ir::Expr then_branch = cse(node->then_branch, table, subst), else_branch = cse(node->else_branch, table, subst);
    if (cond.same_as(node->cond) && then_branch.same_as(node->then_branch) && else_branch.same_as(node->else_branch)) {
      return Any(self);
    }
    return Any(graph::If(cond, then_branch, else_branch));
  });
  m.on<graph::LetNode>([&](const graph::LetNode*, const ObjectRef& self) -> Any {
    return Any(cse(downcast<ir::Expr>(self), table, subst));
  });
  return graph::substitute(m.mutate_as<ir::Expr>(e), subst);
}

ir::Expr cse(const ir::Expr& e, Table table, std::unordered_map<const Object*, ir::Expr>& subst) {
  std::vector<std::pair<graph::Var, ir::Expr>> kept;
  ir::Expr cur = e;
  cur = graph::for_each_binding(cur, [&](const graph::LetNode& let) {
    ir::Expr value = cse_nested(let.value, table, subst);
    const Bound* same = nullptr;
    uint64_t hash = 0;
    if (shareable(value)) {
      hash = expression_hash(Any(value));
      for (const Bound& b : table[hash])
        if (!same && same_expression(Any(b.value), Any(value))) same = &b;
    }
    if (same) {
      subst[let.var.get()] = same->var;
    } else {
      if (shareable(value)) table[hash].push_back(Bound{value, let.var});
      kept.emplace_back(let.var, value);
    }
  });
  ir::Expr body = cse_nested(cur, table, subst);
  for (size_t k = kept.size(); k-- > 0;) body = graph::Let(kept[k].first, kept[k].second, body);
  return body;
}
}  // namespace

transform::Pass EliminateCommonSubexpr() {
  transform::PassInfo info =
      transform::PassInfo::named("EliminateCommonSubexpr")
          .summary("a pure value bound twice in one scope (same callee, attributes, types, arguments) is bound once")
          .opt_level(1)
          .changes({"graph"})
          .preserves({"ops_lowered", "fused"});
  return transform::function_pass<graph::FunctionNode>(
      info, [](const ir::BaseFunc& func, const ir::IRModule&, const transform::PassContext&) -> ir::BaseFunc {
        const auto* f = func.as<graph::FunctionNode>();
        std::unordered_map<const Object*, ir::Expr> subst;
        ir::Expr body = cse(f->body, {}, subst);
        if (subst.empty()) return func;
        return graph::with_body(*f, body);
      });
}

}  // namespace loom::passes
