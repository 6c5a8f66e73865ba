#include "eliminate_common_subexpr.h"

#include <sstream>
#include <vector>

#include "graph_util.h"
#include "loom/ir/text.h"

namespace loom::passes {

namespace {
// A key equal for two expressions that compute the same value: variables
// and constants by identity, everything else by structure.
std::string key_of(const ir::Expr& e) {
  std::ostringstream k;
  if (e.as<graph::VarNode>() || e.as<graph::ConstantNode>()) {
    k << "#" << e.get();
  } else if (const auto* g = e.as<ir::GlobalVarNode>()) {
    k << "@" << g->name;
  } else if (const auto* op = e.as<ir::OpNode>()) {
    k << "op:" << op->name;
  } else if (const auto* t = e.as<graph::TupleNode>()) {
    k << "(";
    for (const Any& f : t->fields) k << key_of(f.cast<ir::Expr>()) << ",";
    k << ")";
  } else if (const auto* i = e.as<graph::TupleGetItemNode>()) {
    k << key_of(i->tuple) << "." << i->index;
  } else if (const auto* c = e.as<graph::CallNode>()) {
    k << key_of(c->callee) << ir::to_text(Any(c->attrs)) << "<";
    for (const Any& t : c->type_args) k << ir::to_text(t) << ",";
    k << ">(";
    for (const Any& a : c->args) k << key_of(a.cast<ir::Expr>()) << ",";
    k << ")";
  } else {
    k << "!" << e.get();  // never shared (if, let, functions)
  }
  return k.str();
}

using Table = std::unordered_map<std::string, ir::Expr>;

ir::Expr cse(const ir::Expr& e, Table table, std::unordered_map<const Object*, ir::Expr>& subst);

// Branches of ifs get their own scope (a copy of the table).
ir::Expr cse_nested(const ir::Expr& e, const Table& table, std::unordered_map<const Object*, ir::Expr>& subst) {
  Mutator m;
  m.on<graph::IfNode>([&](const graph::IfNode* node, const ObjectRef& self) -> Any {
    ir::Expr cond = substitute(node->cond, subst);
    ir::Expr then_branch = cse(node->then_branch, table, subst), else_branch = cse(node->else_branch, table, subst);
    if (cond.same_as(node->cond) && then_branch.same_as(node->then_branch) && else_branch.same_as(node->else_branch)) {
      return Any(self);
    }
    return Any(graph::If(cond, then_branch, else_branch));
  });
  m.on<graph::LetNode>([&](const graph::LetNode*, const ObjectRef& self) -> Any {
    return Any(cse(downcast<ir::Expr>(self), table, subst));
  });
  return substitute(m.mutate_as<ir::Expr>(e), subst);
}

ir::Expr cse(const ir::Expr& e, Table table, std::unordered_map<const Object*, ir::Expr>& subst) {
  std::vector<std::pair<graph::Var, ir::Expr>> kept;
  ir::Expr cur = e;
  while (const auto* let = cur.as<graph::LetNode>()) {
    ir::Expr value = cse_nested(let->value, table, subst);
    std::string key = key_of(value);
    bool shareable = is_pure(value) && key[0] != '!' && !value.as<graph::VarNode>() && !value.as<graph::ConstantNode>();
    auto found = shareable ? table.find(key) : table.end();
    if (found != table.end()) {
      subst[let->var.get()] = found->second;
    } else {
      if (shareable) table.emplace(key, let->var);
      kept.emplace_back(let->var, value);
    }
    cur = let->body;
  }
  ir::Expr body = cse_nested(cur, table, subst);
  for (size_t k = kept.size(); k-- > 0;) body = graph::Let(kept[k].first, kept[k].second, body);
  return body;
}
}  // namespace

transform::Pass EliminateCommonSubexpr() {
  transform::PassInfo info{"EliminateCommonSubexpr",
                           "a pure value bound twice in one scope (same callee, attributes, types, arguments) is bound "
                           "once",
                           1, {}, {},
                           {}, {}, {"ops_lowered", "fused", "buffers_flat", "intrinsics_lowered"}};
  return transform::function_pass<graph::FunctionNode>(
      info, [](const ir::BaseFunc& func, const ir::IRModule&, const transform::PassContext&) -> ir::BaseFunc {
        const auto* f = func.as<graph::FunctionNode>();
        std::unordered_map<const Object*, ir::Expr> subst;
        ir::Expr body = cse(f->body, {}, subst);
        if (subst.empty()) return func;
        return with_body(*f, body);
      });
}

}  // namespace loom::passes
