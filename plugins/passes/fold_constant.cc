#include "fold_constant.h"

#include "graph_util.h"
#include "legalize_ops.h"
#include "loom/driver/build.h"
#include "loom/ir/op.h"
#include "loom/runtime/ndarray.h"
#include "loom/target/target.h"
#include "loom/transform/infer_type.h"

namespace loom::passes {

namespace {
// The value of `call` (its arguments constants), or an undefined Expr when
// it cannot be evaluated here.
ir::Expr evaluate(const graph::CallNode& call, const std::vector<ir::Expr>& args) {
  const auto* op = call.callee.as<ir::OpNode>();
  if (!op || !ir::OpRegistry::property(op->name, "FLower")) return ir::Expr();
  graph::Call constant_call(call.callee, args, call.attrs, [&] {
    std::vector<ir::Type> types;
    for (const Any& t : call.type_args) types.push_back(t.cast<ir::Type>());
    return types;
  }());
  ir::IRModule module(std::map<std::string, Any>{{"main", graph::Function({}, constant_call)}});
  module = LegalizeOps()(transform::InferType()(module));
  Any value = driver::build(module, target::Target("ref")).get_function("main")();
  if (dynamic_cast<const runtime::NDArrayNode*>(value.object())) return graph::Constant(value.cast<runtime::NDArray>());
  if (const auto* tuple = dynamic_cast<const ArrayNode*>(value.object())) {
    std::vector<ir::Expr> fields;
    for (const Any& item : tuple->items) fields.push_back(graph::Constant(item.cast<runtime::NDArray>()));
    return graph::Tuple(fields);
  }
  return ir::Expr();
}
}  // namespace

transform::Pass FoldConstant() {
  transform::PassInfo info{"FoldConstant",
                           "evaluates operator calls on constants (with the reference interpreter) and items of constant "
                           "tuples",
                           1, {}, {},
                           {"types_inferred"}, {}, {"ops_lowered", "fused", "buffers_flat", "intrinsics_lowered"}};
  return transform::function_pass<graph::FunctionNode>(
      info, [](const ir::BaseFunc& func, const ir::IRModule&, const transform::PassContext&) -> ir::BaseFunc {
        const auto* f = func.as<graph::FunctionNode>();
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
          ir::Expr folded = evaluate(*call, args);
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
          while (const auto* let = cur.as<graph::LetNode>()) {
            ir::Expr value = m.mutate_as<ir::Expr>(let->value);
            changed |= !value.same_as(let->value);
            bool constant_tuple = false;
            if (const auto* t = value.as<graph::TupleNode>()) {
              constant_tuple = true;
              for (const Any& field : t->fields) constant_tuple &= field.as_object_ref().as<graph::ConstantNode>() != nullptr;
            }
            if (value.as<graph::ConstantNode>() || constant_tuple) known[let->var.get()] = value;
            chain.emplace_back(let->var, value);
            cur = let->body;
          }
          ir::Expr body = m.mutate_as<ir::Expr>(cur);
          if (!changed && body.same_as(cur)) return Any(self);
          for (size_t k = chain.size(); k-- > 0;) body = graph::Let(chain[k].first, chain[k].second, body);
          return Any(body);
        });
        ir::Expr body = m.mutate_as<ir::Expr>(f->body);
        if (body.same_as(f->body)) return func;
        return with_body(*f, body);
      });
}

}  // namespace loom::passes
