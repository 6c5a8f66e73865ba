// Bindings of graph functions; see loom/graph/bindings.h.
#include "loom/graph/bindings.h"

#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/op.h"
#include "loom/object/traversal.h"
#include "loom/support/stack.h"

namespace loom::graph {

std::unordered_map<const Object*, int> var_uses(const ir::Expr& e) {
  // A variable's uses are the references to it: one per node that names it
  // as a child.  Each node is walked once, so an expression shared by
  // several parents (a DAG: an unrolled RNN reads its state thrice a
  // step) counts its references once, and the walk stays linear where a
  // walk of the tree it unfolds to doubles with every level.
  std::unordered_map<const Object*, int> uses;
  std::unordered_set<const Object*> seen;
  std::vector<Any> stack;  // values, not pointers: a field's getter may make the object it returns
  auto reach = [&](const Any& value) {
    const Object* o = value.object();
    if (!o || value.kind() != AnyKind::kObject || o->is_instance<ir::TypeNode>()) return;  // types hold no variables
    if (o->is_instance<VarNode>()) {
      ++uses[o];
    } else if (seen.insert(o).second) {
      stack.push_back(value);
    }
  };
  reach(Any(e));
  std::vector<Any> walked;  // kept alive, so no address in `seen` is reused
  while (!stack.empty()) {
    Any value = stack.back();
    stack.pop_back();
    const Object* node = value.object();
    if (node->is_instance<LetNode>()) {  // its var is a binding, not a use
      const auto* let = static_cast<const LetNode*>(node);
      reach(Any(let->value));
      reach(Any(let->body));
    } else if (node->is_instance<ArrayNode>()) {
      for (const Any& item : static_cast<const ArrayNode*>(node)->items) reach(item);
    } else if (node->is_instance<MapNode>()) {
      for (const auto& [key, item] : static_cast<const MapNode*>(node)->items) reach(item);
    } else {
      for (const FieldInfo& field : TypeRegistry::info(node->type_index()).fields) {
        if (!(field.flags & kDerived)) reach(field.get(node));
      }
    }
    walked.push_back(std::move(value));
  }
  return uses;
}

ir::Expr substitute(const ir::Expr& e, const std::unordered_map<const Object*, ir::Expr>& with) {
  if (with.empty()) return e;
  Mutator m;
  auto replace = [&](const Object* node, const ObjectRef& self) -> Any {
    auto found = with.find(node);
    return found == with.end() ? Any(self) : Any(found->second);
  };
  m.on<VarNode>([&](const VarNode* var, const ObjectRef& self) { return replace(var, self); });
  m.on<ConstantNode>([&](const ConstantNode* c, const ObjectRef& self) { return replace(c, self); });
  return m.mutate_as<ir::Expr>(e);
}

ir::Expr rewrite_lets(const ir::Expr& e,
                      const std::function<ir::Expr(const Var&, const ir::Expr&, const ir::Expr&)>& rewrite) {
  // Nested expressions (in values, branches, tuples) are rewritten by a
  // mutator whose let handler walks the chain.
  Mutator m;
  m.on<LetNode>([&](const LetNode*, const ObjectRef& self) -> Any {
    std::vector<const LetNode*> chain;
    ir::Expr cur = downcast<ir::Expr>(self);
    cur = for_each_binding(cur, [&](const LetNode& let) { chain.push_back(&let); });
    ir::Expr body = m.mutate_as<ir::Expr>(cur);
    for (size_t k = chain.size(); k-- > 0;) {
      body = rewrite(chain[k]->var, m.mutate_as<ir::Expr>(chain[k]->value), body);
    }
    return Any(body);
  });
  return m.mutate_as<ir::Expr>(e);
}

ir::Expr drop_dead_bindings(const ir::Expr& e) {
  // Each chain is walked once from its end, with the uses seen so far in
  // the part kept: linear in the chain, however long.
  Mutator m;
  m.on<LetNode>([&](const LetNode*, const ObjectRef& self) -> Any {
    std::vector<ir::Expr> chain;
    ir::Expr cur = downcast<ir::Expr>(self);
    while (const auto* let = cur.as<LetNode>()) {  // the chain's handles, to keep a binding as it is
      chain.push_back(cur);
      cur = let->body;
    }
    ir::Expr body = m.mutate_as<ir::Expr>(cur);
    std::unordered_map<const Object*, int> uses = var_uses(body);
    bool same = body.same_as(cur);
    for (size_t k = chain.size(); k-- > 0;) {
      const auto* let = chain[k].as<LetNode>();
      ir::Expr value = m.mutate_as<ir::Expr>(let->value);
      if (!uses.count(let->var.get()) && is_pure(value)) {
        same = false;
        continue;
      }
      for (const auto& [var, n] : var_uses(value)) uses[var] += n;
      if (same && value.same_as(let->value)) {
        body = chain[k];
      } else {
        body = Let(let->var, value, body);
        same = false;
      }
    }
    return Any(body);
  });
  return m.mutate_as<ir::Expr>(e);
}

std::pair<std::vector<Binding>, ir::Expr> flatten_chain(const ir::Expr& body) {
  std::vector<Binding> bindings;
  int fresh = 0;
  std::function<ir::Expr(const ir::Expr&)> flatten;
  // A call nested in an argument or a tuple field (of a tuple value or of
  // a tuple argument: call_packed's, call_dps's, at any depth), bound to a
  // variable of its own (after its own nested calls); anything else as it
  // is.  A call node reached twice (a DAG: hard-swish reads its input
  // twice) is bound once: without that, each level of sharing doubled the
  // chain (MobileNetV3's graph ran out of memory).
  std::unordered_map<const Object*, Var> seen;
  auto bound = [&](const ir::Expr& e, bool* changed) -> ir::Expr {
    if (e.as<TupleNode>()) {  // a tuple argument (call_packed's, call_dps's) or field: the calls in it are bound
      ir::Expr fields = with_stack([&] { return flatten(e); });  // tuples nest as deep as calls
      *changed = *changed || !fields.same_as(e);
      return fields;
    }
    if (!e.as<CallNode>()) return e;
    *changed = true;
    if (auto found = seen.find(e.get()); found != seen.end()) return found->second;
    Var v("t" + std::to_string(fresh++));
    ir::Expr inner = with_stack([&] { return flatten(e); });  // one level of stack per level of nesting
    const_cast<VarNode*>(v.get())->checked_type = e->checked_type;
    bindings.push_back({v, inner});
    seen.emplace(e.get(), v);
    return v;
  };
  flatten = [&](const ir::Expr& value) -> ir::Expr {
    bool changed = false;
    if (const auto* tuple = value.as<TupleNode>()) {
      // A tuple of calls (a function returning two results): each call is
      // bound too, so the passes over the chain see it.
      std::vector<ir::Expr> fields;
      for (const Any& f : tuple->fields) fields.push_back(bound(f.cast<ir::Expr>(), &changed));
      if (!changed) return value;
      Tuple rebuilt(fields);
      const_cast<TupleNode*>(rebuilt.get())->checked_type = value->checked_type;
      return rebuilt;
    }
    const auto* call = value.as<CallNode>();
    if (!call) return value;
    std::vector<ir::Expr> args;
    for (const Any& a : call->args) args.push_back(bound(a.cast<ir::Expr>(), &changed));
    if (!changed) return value;
    std::vector<ir::Type> type_args;
    for (const Any& t : call->type_args) type_args.push_back(t.cast<ir::Type>());
    Call rebuilt(call->callee, args, call->attrs, type_args);
    const_cast<CallNode*>(rebuilt.get())->checked_type = call->checked_type;
    return rebuilt;
  };
  ir::Expr cur = body;
  cur = for_each_binding(cur, [&](const LetNode& let) {
    ir::Expr value = flatten(let.value);
    bindings.push_back({let.var, value});
  });
  ir::Expr result = flatten(cur);
  return {bindings, result};
}

Lifted lift_free_values(const std::vector<Binding>& members, bool constants) {
  Lifted out;
  std::set<const Object*> inside;
  for (const Binding& b : members) inside.insert(b.var.get());
  auto lift = [&](const ir::ExprNode* node, const std::string& name, const ir::Type& type) {
    Var p(name, type);
    out.param_of[node] = p;
    out.params.push_back(p);
    out.args.push_back(downcast<ir::Expr>(ObjectRef(ObjectPtr<Object>(const_cast<ir::ExprNode*>(node)))));
  };
  for (const Binding& b : members) {
    Visitor v;
    v.on<VarNode>([&](const VarNode* var) {
      if (inside.count(var) || out.param_of.count(var)) return;
      lift(var, var->name, var->checked_type.defined() ? var->checked_type : var->annotation);
    });
    if (constants) {
      v.on<ConstantNode>([&](const ConstantNode* c) {
        if (out.param_of.count(c)) return;
        lift(c, "c",
             c->checked_type.defined() ? c->checked_type : tir::tensor_type(c->data.shape_vector(), c->data->dtype));
      });
    }
    v.visit(Any(b.value));
  }
  return out;
}

ir::Expr build_chain(const std::vector<Binding>& bindings, const ir::Expr& result) {
  ir::Expr body = result;
  for (size_t k = bindings.size(); k-- > 0;) body = Let(bindings[k].var, bindings[k].value, body);
  return body;
}

bool is_pure(const ir::Expr& e) {
  bool pure = true;
  Visitor v;
  v.on<CallNode>([&](const CallNode* call) {
    if (const auto* op = call->callee.as<ir::OpNode>(); op && op->name == "call_packed") pure = false;
    if (call->callee.as<ir::GlobalVarNode>()) pure = false;  // a graph or extern function may call_packed
    v.visit_children(call);
  });
  v.visit(Any(e));
  return pure;
}

Function with_body(const FunctionNode& f, const ir::Expr& body, const Map& attrs) {
  std::vector<Var> params;
  for (const Any& p : f.params) params.push_back(p.cast<Var>());
  return Function(params, body, f.ret_type, attrs.defined() ? attrs : f.attrs);
}

}  // namespace loom::graph
