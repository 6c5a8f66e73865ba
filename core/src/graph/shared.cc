// bind_shared_values (loom/graph/shared.h).
//
// Three walks over the distinct nodes of the body:
//  1. count each node's uses (edges from parents) and list the nodes in
//     post-order;
//  2. in reverse post-order (every parent before its children), give each
//     node its scope: the innermost scope holding all of its uses.  Scopes
//     form a tree: the body is scope 0, each if opens one scope per branch
//     inside the if's own scope;
//  3. rebuild: each scope collects bindings (the lets it already had,
//     hoisted out of expression positions, and one per shared value) in the
//     order the values are first evaluated, and wraps its result in them.
// A node is rebuilt once; the second use of a shared value reads its
// variable, which is bound earlier in a scope enclosing the use.
#include "loom/graph/shared.h"

#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/support/stack.h"

namespace loom::graph {

namespace {

// Nodes that are computed (and so may need a binding), as opposed to
// variables, constants, globals, operators and nested functions, which are
// read where they are used.
bool computed(const Object* node) {
  return node->is_instance<CallNode>() || node->is_instance<TupleNode>() || node->is_instance<TupleGetItemNode>() ||
         node->is_instance<IfNode>() || node->is_instance<LetNode>();
}

// The children of a computed node, with the scope each edge opens: -1 for
// the parent's scope, 1 for an if's then branch, 2 for its else branch.
template <class T>
const T* as(const Object* node) {
  return node->is_instance<T>() ? static_cast<const T*>(node) : nullptr;
}

template <class F>
void for_each_child(const Object* node, F&& f) {
  if (const auto* c = as<CallNode>(node)) {
    f(c->callee, -1);
    for (const Any& a : c->args) f(a.cast<Expr>(), -1);
  } else if (const auto* t = as<TupleNode>(node)) {
    for (const Any& a : t->fields) f(a.cast<Expr>(), -1);
  } else if (const auto* g = as<TupleGetItemNode>(node)) {
    f(g->tuple, -1);
  } else if (const auto* l = as<LetNode>(node)) {
    f(l->value, -1);
    f(l->body, -1);
  } else if (const auto* i = as<IfNode>(node)) {
    f(i->cond, -1);
    f(i->then_branch, 1);
    f(i->else_branch, 2);
  }
}

class Uses {
 public:
  explicit Uses(const Expr& body) { visit(body); }

  void visit(const Expr& e) {
    if (!e.defined()) return;
    const Object* node = e.get();
    if (uses_[node]++ > 0 || !computed(node)) return;
    with_stack([&] { for_each_child(node, [&](const Expr& child, int) { visit(child); }); });
    post_order_.push_back(node);
  }

  int uses(const Object* node) const {
    auto found = uses_.find(node);
    return found == uses_.end() ? 0 : found->second;
  }
  bool any_shared() const {
    for (const Object* node : post_order_)
      if (uses(node) > 1) return true;
    return false;
  }
  const std::vector<const Object*>& post_order() const { return post_order_; }
  std::unordered_map<const Object*, int> take_counts() { return std::move(uses_); }

 private:
  std::unordered_map<const Object*, int> uses_;
  std::vector<const Object*> post_order_;
};

class Binder {
 public:
  Binder(const Expr& body, const Uses& uses, std::unordered_set<const Object*>* introduced)
      : uses_(uses), introduced_(introduced) {
    parent_.push_back(-1);
    depth_.push_back(0);
    scope_[body.get()] = 0;
    const auto& order = uses.post_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const Object* node = *it;
      int scope = scope_.at(node);
      int then_scope = -1, else_scope = -1;
      if (node->is_instance<IfNode>()) {
        then_scope = new_scope(scope);
        else_scope = new_scope(scope);
        branches_[node] = {then_scope, else_scope};
      }
      for_each_child(node, [&](const Expr& child, int edge) {
        if (!child.defined() || !computed(child.get())) return;
        int s = edge == 1 ? then_scope : edge == 2 ? else_scope : scope;
        auto found = scope_.find(child.get());
        scope_[child.get()] = found == scope_.end() ? s : common(found->second, s);
      });
    }
  }

  Expr run(const Expr& body) { return rebuild_scope(body, 0); }

 private:
  int new_scope(int parent) {
    parent_.push_back(parent);
    depth_.push_back(depth_[parent] + 1);
    bindings_.emplace_back();
    return static_cast<int>(parent_.size()) - 1;
  }
  int common(int a, int b) const {
    while (depth_[a] > depth_[b]) a = parent_[a];
    while (depth_[b] > depth_[a]) b = parent_[b];
    while (a != b) a = parent_[a], b = parent_[b];
    return a;
  }

  Expr rebuild_scope(const Expr& e, int scope) {
    if (static_cast<size_t>(scope) >= bindings_.size()) bindings_.resize(scope + 1);
    std::vector<std::pair<Var, Expr>> saved = std::move(bindings_[scope]);
    bindings_[scope].clear();
    Expr result = walk(e);
    std::vector<std::pair<Var, Expr>> mine = std::move(bindings_[scope]);
    bindings_[scope] = std::move(saved);
    if (mine.empty() && result.same_as(e)) return e;
    for (size_t k = mine.size(); k-- > 0;) {
      ir::Type type = result->checked_type;
      result = Let(mine[k].first, mine[k].second, result);
      const_cast<ExprNode*>(result.get())->checked_type = type;  // the body's: types stay inferred
    }
    return result;
  }

  // The node as it reads where it is used: a shared value's variable, or
  // the rebuilt node itself.
  Expr walk(const Expr& e) {
    if (!e.defined() || !computed(e.get())) return e;
    auto done = memo_.find(e.get());
    if (done != memo_.end()) return done->second;
    Expr result = with_stack([&] { return rebuild(e); });
    memo_[e.get()] = result;
    return result;
  }

  Expr rebuild(const Expr& e) {
    const Object* node = e.get();
    int scope = scope_.at(node);
    if (e.as<LetNode>()) {
      // A let binds in its scope's list; a chain of them is walked
      // without recursion.
      std::vector<const Object*> chain;
      Expr cur = e;
      while (const auto* let = cur.as<LetNode>()) {
        if (memo_.count(cur.get()) ||
            (!chain.empty() && (uses_.uses(cur.get()) > 1 || scope_.at(cur.get()) != scope))) {
          break;
        }
        bindings_[scope].emplace_back(let->var, walk(let->value));
        chain.push_back(cur.get());
        cur = let->body;
      }
      Expr result = walk(cur);
      if (uses_.uses(node) > 1 && computed(result.get())) result = bind(scope, e, result);
      for (const Object* c : chain) memo_[c] = result;
      return result;
    }
    Expr rebuilt = e;
    if (const auto* c = e.as<CallNode>()) {
      Expr callee = walk(c->callee);
      bool same = callee.same_as(c->callee);
      std::vector<Expr> args;
      for (const Any& a : c->args) {
        args.push_back(walk(a.cast<Expr>()));
        same = same && args.back().same_as(a.cast<Expr>());
      }
      if (!same) {
        std::vector<Type> type_args;
        for (const Any& t : c->type_args) type_args.push_back(t.cast<Type>());
        rebuilt = Call(callee, args, c->attrs, type_args);
      }
    } else if (const auto* t = e.as<TupleNode>()) {
      std::vector<Expr> fields;
      bool same = true;
      for (const Any& a : t->fields) {
        fields.push_back(walk(a.cast<Expr>()));
        same = same && fields.back().same_as(a.cast<Expr>());
      }
      if (!same) rebuilt = Tuple(fields);
    } else if (const auto* g = e.as<TupleGetItemNode>()) {
      Expr tuple = walk(g->tuple);
      if (!tuple.same_as(g->tuple)) rebuilt = TupleGetItem(tuple, g->index);
    } else if (const auto* i = e.as<IfNode>()) {
      auto [then_scope, else_scope] = branches_.at(node);
      Expr cond = walk(i->cond);
      Expr then_branch = rebuild_scope(i->then_branch, then_scope);
      Expr else_branch = rebuild_scope(i->else_branch, else_scope);
      if (!cond.same_as(i->cond) || !then_branch.same_as(i->then_branch) || !else_branch.same_as(i->else_branch)) {
        rebuilt = If(cond, then_branch, else_branch);
      }
    }
    // checked_type is a cache (loom/graph/type_infer.h): the same value has the same type.
    if (!rebuilt.same_as(e)) const_cast<ExprNode*>(rebuilt.get())->checked_type = e->checked_type;
    return uses_.uses(node) > 1 ? bind(scope, e, rebuilt) : rebuilt;
  }

  // A variable bound to `value` (what `original` became) in `scope`.
  Var bind(int scope, const Expr& original, const Expr& value) {
    Var var("v");
    const_cast<VarNode*>(var.get())->checked_type = original->checked_type;
    if (introduced_) introduced_->insert(var.get());
    bindings_[scope].emplace_back(var, value);
    return var;
  }

  const Uses& uses_;
  std::unordered_set<const Object*>* introduced_;
  std::unordered_map<const Object*, int> scope_;
  std::unordered_map<const Object*, std::pair<int, int>> branches_;
  std::vector<int> parent_, depth_;
  std::vector<std::vector<std::pair<Var, Expr>>> bindings_{1};
  std::unordered_map<const Object*, Expr> memo_;
};

}  // namespace

std::unordered_map<const Object*, int> use_counts(const Expr& body) { return Uses(body).take_counts(); }

bool has_shared_values(const Expr& body) { return Uses(body).any_shared(); }

Expr bind_shared_values(const Expr& body) { return bind_shared_values(body, nullptr); }

Expr bind_shared_values(const Expr& body, std::unordered_set<const Object*>* introduced) {
  Uses uses(body);
  if (!uses.any_shared()) return body;
  return Binder(body, uses, introduced).run(body);
}

}  // namespace loom::graph
