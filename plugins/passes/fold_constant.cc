#include "fold_constant.h"

#include "graph_util.h"
#include "loom/graph/type_infer.h"
#include "loom/ir/op.h"
#include "loom/runtime/ndarray.h"
#include "loom/tir/function.h"

namespace loom::passes {

transform::Pass FoldConstant() {
  transform::PassInfo info = transform::PassInfo::named("FoldConstant")
                                 .summary(
                                     "evaluates operator calls on constants (their lowerings, run by the reference "
                                     "interpreter) and items of constant tuples")
                                 .opt_level(1)
                                 .needs({"types_inferred"})
                                 .changes({"graph"})
                                 .preserves({"ops_lowered", "fused"});
  return graph_body_pass(info, [](const graph::FunctionNode& f, const transform::PassContext&) {
    std::unordered_map<const Object*, ir::Expr> known;  // variables bound to constants
    auto constant_of = [&](const ir::Expr& e) -> ir::Expr {
      if (e.as<graph::ConstantNode>()) return e;
      auto found = known.find(e.get());
      return found == known.end() ? ir::Expr() : found->second;
    };
    Mutator m;
    m.on<graph::CallNode>([&](const graph::CallNode* call, const ObjectRef& self) -> Any {
      ObjectRef mutated = m.mutate_children(self);
      std::vector<ir::Expr> args;
      for (const Any& a : mutated.as<graph::CallNode>()->args) {
        ir::Expr c = constant_of(a.cast<ir::Expr>());
        if (!c.defined() || !c.as<graph::ConstantNode>()) return Any(mutated);
        args.push_back(c);
      }
      ir::Expr folded = evaluate_call(*call, args);
      return folded.defined() ? Any(folded) : Any(mutated);
    });
    m.on<graph::TupleGetItemNode>([&](const graph::TupleGetItemNode*, const ObjectRef& self) -> Any {
      ObjectRef mutated = m.mutate_children(self);
      const auto* item = mutated.as<graph::TupleGetItemNode>();
      ir::Expr tuple = item->tuple.as<graph::TupleNode>() ? item->tuple : constant_of(item->tuple);
      const auto* t = tuple.defined() ? tuple.as<graph::TupleNode>() : nullptr;
      if (t && item->index >= 0 && static_cast<size_t>(item->index) < t->fields.size() &&
          t->fields[item->index].as_object_ref().as<graph::ConstantNode>()) {
        return t->fields[item->index];
      }
      return Any(mutated);
    });
    m.on<graph::LetNode>([&](const graph::LetNode*, const ObjectRef& self) -> Any {
      std::vector<std::pair<graph::Var, ir::Expr>> chain;
      ir::Expr cur = downcast<ir::Expr>(self);
      bool changed = false;
      cur = graph::for_each_binding(cur, [&](const graph::LetNode& let) {
        ir::Expr value = m.mutate_as<ir::Expr>(let.value);
        changed |= !value.same_as(let.value);
        bool constant_tuple = false;
        if (const auto* t = value.as<graph::TupleNode>()) {
          constant_tuple = true;
          for (const Any& field : t->fields)
            constant_tuple &= field.as_object_ref().as<graph::ConstantNode>() != nullptr;
        }
        if (value.as<graph::ConstantNode>() || constant_tuple) known[let.var.get()] = value;
        chain.emplace_back(let.var, value);
      });
      ir::Expr body = m.mutate_as<ir::Expr>(cur);
      if (!changed && body.same_as(cur)) return Any(self);
      for (size_t k = chain.size(); k-- > 0;) body = graph::Let(chain[k].first, chain[k].second, body);
      return Any(body);
    });
    return m.mutate_as<ir::Expr>(f.body);
  });
}

}  // namespace loom::passes
