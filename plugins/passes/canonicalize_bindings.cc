#include "canonicalize_bindings.h"

#include "graph_util.h"

namespace loom::passes {

transform::Pass CanonicalizeBindings() {
  transform::PassInfo info =
      transform::PassInfo::named("CanonicalizeBindings")
          .summary(
              "let %y = %x uses %x for %y; (a, b).0 of a let-bound tuple literal becomes a; a cast to the dtype its "
              "operand has is the operand")
          .changes({"graph"})
          .preserves({"ops_lowered", "fused"});
  return graph_body_pass(info, [](const graph::FunctionNode& f, const transform::PassContext&) {
    // Casts that change nothing (an importer's Cast of a uint8 to uint8):
    // the operand itself, so that the bindings below alias it.
    Mutator casts;
    casts.on<graph::CallNode>([&](const graph::CallNode* original, const ObjectRef& self) -> Any {
      ObjectRef mutated = casts.mutate_children(self);
      const graph::CallNode* cast = call_of(downcast<ir::Expr>(mutated), "cast");
      if (!cast || cast->args.size() != 1) return Any(mutated);
      // The operand's type as InferType left it (a rebuilt operand has none).
      auto typed = original->args[0].cast<ir::Expr>();
      const auto* t = typed->checked_type.defined() ? typed->checked_type.as<ir::TensorTypeNode>() : nullptr;
      if (!t || !cast->attrs.contains("dtype") || cast->attrs.at("dtype").as_dtype() != t->dtype) return Any(mutated);
      return cast->args[0];
    });
    ir::Expr body = graph::rewrite_lets(casts.mutate_as<ir::Expr>(f.body),
                                        [&](const graph::Var& var, const ir::Expr& value, const ir::Expr& rest) {
                                          if (value.as<graph::VarNode>())
                                            return graph::substitute(rest, {{var.get(), value}});
                                          return ir::Expr(graph::Let(var, value, rest));
                                        });
    // Tuple literals bound by lets, by their variable.
    std::unordered_map<const Object*, const graph::TupleNode*> tuples;
    Visitor collect;
    collect.on<graph::LetNode>([&](const graph::LetNode* let) {
      if (const auto* t = let->value.as<graph::TupleNode>()) tuples[let->var.get()] = t;
      collect.visit_children(let);
    });
    collect.visit(Any(body));
    Mutator items;
    items.on<graph::TupleGetItemNode>([&](const graph::TupleGetItemNode*, const ObjectRef& self) -> Any {
      ObjectRef mutated = items.mutate_children(self);
      const auto* item = mutated.as<graph::TupleGetItemNode>();
      const graph::TupleNode* tuple = item->tuple.as<graph::TupleNode>();
      if (!tuple) {
        auto found = tuples.find(item->tuple.get());
        if (found != tuples.end()) tuple = found->second;
      }
      if (tuple && item->index >= 0 && static_cast<size_t>(item->index) < tuple->fields.size()) {
        return tuple->fields[item->index];
      }
      return Any(mutated);
    });
    return items.mutate_as<ir::Expr>(body);
  });
}

}  // namespace loom::passes
