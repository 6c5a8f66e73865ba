// Rebuilding prim IR nodes with new children, substitution and fresh
// copies (loom/tir/functor.h).
#include "loom/tir/functor.h"

#include <algorithm>

#include "loom/object/traversal.h"
#include "loom/support/stack.h"

namespace loom::tir {

namespace {
template <class Node, class Ref>
bool rebuild_as(const BinaryOpNode* b, const PrimExpr& x, const PrimExpr& y, PrimExpr* out) {
  if (!dynamic_cast<const Node*>(b)) return false;
  *out = Ref(x, y);
  return true;
}

PrimExpr rebuild_binary(const BinaryOpNode* b, const PrimExpr& x, const PrimExpr& y) {
  PrimExpr out;
  rebuild_as<AddNode, Add>(b, x, y, &out) || rebuild_as<SubNode, Sub>(b, x, y, &out) ||
      rebuild_as<MulNode, Mul>(b, x, y, &out) || rebuild_as<DivNode, Div>(b, x, y, &out) ||
      rebuild_as<FloorDivNode, FloorDiv>(b, x, y, &out) || rebuild_as<FloorModNode, FloorMod>(b, x, y, &out) ||
      rebuild_as<MinNode, Min>(b, x, y, &out) || rebuild_as<MaxNode, Max>(b, x, y, &out) ||
      rebuild_as<EQNode, EQ>(b, x, y, &out) || rebuild_as<NENode, NE>(b, x, y, &out) ||
      rebuild_as<LTNode, LT>(b, x, y, &out) || rebuild_as<LENode, LE>(b, x, y, &out) ||
      rebuild_as<GTNode, GT>(b, x, y, &out) || rebuild_as<GENode, GE>(b, x, y, &out) ||
      rebuild_as<AndNode, And>(b, x, y, &out) || rebuild_as<OrNode, Or>(b, x, y, &out);
  if (!out.defined()) LOOM_THROW(Error) << "loop passes: unknown binary node " << b->type_key();
  return out;
}

std::vector<PrimExpr> exprs(const Array& a) {
  std::vector<PrimExpr> out;
  for (const Any& x : a) out.push_back(x.cast<PrimExpr>());
  return out;
}

// Maps a list; true when an element changed.
template <class F>
bool map_list(const Array& in, const F& f, std::vector<PrimExpr>* out) {
  bool changed = false;
  for (const PrimExpr& x : exprs(in)) {
    out->push_back(f(x));
    changed |= !out->back().same_as(x);
  }
  return changed;
}

// A child mapped on enough stack: every recursive walk over prim IR
// descends through map_children, one level of stack per level of nesting.
template <class T, class F>
T on_stack(const F& f, const T& child) {
  return with_stack([&] { return f(child); });
}
}  // namespace

PrimExpr map_children(const PrimExpr& e, const ExprFn& f_) {
  auto f = [&](const PrimExpr& c) { return on_stack(f_, c); };
  if (const auto* b = e.as<BinaryOpNode>()) {
    PrimExpr x = f(b->a), y = f(b->b);
    if (x.same_as(b->a) && y.same_as(b->b)) return e;
    return rebuild_binary(b, x, y);
  }
  if (const auto* n = e.as<NotNode>()) {
    PrimExpr a = f(n->a);
    return a.same_as(n->a) ? e : PrimExpr(Not(a));
  }
  if (const auto* s = e.as<SelectNode>()) {
    PrimExpr c = f(s->condition), t = f(s->true_value), v = f(s->false_value);
    if (c.same_as(s->condition) && t.same_as(s->true_value) && v.same_as(s->false_value)) return e;
    return Select(c, t, v);
  }
  if (const auto* c = e.as<CastNode>()) {
    PrimExpr v = f(c->value);
    if (v.same_as(c->value)) return e;
    return Cast(DataType(static_cast<DataType::Code>(c->dtype.code), c->dtype.bits, v.dtype().lanes), v);
  }
  if (const auto* c = e.as<CallNode>()) {
    std::vector<PrimExpr> args;
    if (!map_list(c->args, f, &args)) return e;
    int lanes = c->dtype.lanes;
    for (const PrimExpr& a : args) lanes = std::max(lanes, static_cast<int>(a.dtype().lanes));
    return Call(DataType(static_cast<DataType::Code>(c->dtype.code), c->dtype.bits, lanes), c->op, args);
  }
  if (const auto* l = e.as<BufferLoadNode>()) {
    std::vector<PrimExpr> indices;
    if (!map_list(l->indices, f, &indices)) return e;
    return BufferLoad(l->buffer, indices);
  }
  if (const auto* r = e.as<RampNode>()) {
    PrimExpr base = f(r->base), stride = f(r->stride);
    if (base.same_as(r->base) && stride.same_as(r->stride)) return e;
    return Ramp(base, stride, r->lanes);
  }
  if (const auto* b = e.as<BroadcastNode>()) {
    PrimExpr v = f(b->value);
    return v.same_as(b->value) ? e : PrimExpr(Broadcast(v, b->lanes));
  }
  if (const auto* l = e.as<LetNode>()) {
    PrimExpr v = f(l->value), body = f(l->body);
    if (v.same_as(l->value) && body.same_as(l->body)) return e;
    return Let(l->var, v, body);
  }
  return e;  // constants and variables
}

Stmt map_children(const Stmt& s, const ExprFn& fe_, const StmtFn& fs_) {
  auto fe = [&](const PrimExpr& c) { return on_stack(fe_, c); };
  auto fs = [&](const Stmt& c) { return on_stack(fs_, c); };
  if (const auto* f = s.as<ForNode>()) {
    PrimExpr min = fe(f->min), extent = fe(f->extent);
    Stmt body = fs(f->body);
    if (min.same_as(f->min) && extent.same_as(f->extent) && body.same_as(f->body)) return s;
    return For(f->loop_var, min, extent, f->for_kind(), body, f->thread, f->annotations);
  }
  if (const auto* st = s.as<BufferStoreNode>()) {
    PrimExpr value = fe(st->value);
    std::vector<PrimExpr> indices;
    bool changed = map_list(st->indices, fe, &indices);
    if (!changed && value.same_as(st->value)) return s;
    return BufferStore(st->buffer, value, indices);
  }
  if (const auto* a = s.as<AllocateNode>()) {
    Stmt body = fs(a->body);
    return body.same_as(a->body) ? s : Stmt(Allocate(a->buffer, body));
  }
  if (const auto* l = s.as<LetStmtNode>()) {
    PrimExpr value = fe(l->value);
    Stmt body = fs(l->body);
    if (value.same_as(l->value) && body.same_as(l->body)) return s;
    return LetStmt(l->var, value, body);
  }
  if (const auto* i = s.as<IfThenElseNode>()) {
    PrimExpr c = fe(i->condition);
    Stmt t = fs(i->then_case);
    Stmt e = i->else_case.defined() ? fs(i->else_case) : Stmt();
    if (c.same_as(i->condition) && t.same_as(i->then_case) && e.same_as(i->else_case)) return s;
    return IfThenElse(c, t, e);
  }
  if (const auto* q = s.as<SeqStmtNode>()) {
    std::vector<Stmt> out;
    bool changed = false;
    for (const Any& x : q->seq) {
      Stmt old = x.cast<Stmt>();
      out.push_back(fs(old));
      changed |= !out.back().same_as(old);
    }
    return changed ? Stmt(SeqStmt(out)) : s;
  }
  if (const auto* ev = s.as<EvaluateNode>()) {
    PrimExpr v = fe(ev->value);
    return v.same_as(ev->value) ? s : Stmt(Evaluate(v));
  }
  if (const auto* at = s.as<AttrStmtNode>()) {
    PrimExpr v = fe(at->value);
    Stmt body = fs(at->body);
    if (v.same_as(at->value) && body.same_as(at->body)) return s;
    return AttrStmt(at->key, v, body);
  }
  return s;
}

PrimExpr Rewriter::run(const PrimExpr& e) const {
  if (pre_expr_)
    if (auto r = pre_expr_(e)) return *r;
  PrimExpr out = map_children(e, [this](const PrimExpr& c) { return run(c); });
  return post_expr_ ? post_expr_(out) : out;
}

Stmt Rewriter::run(const Stmt& s) const {
  if (pre_stmt_)
    if (auto r = pre_stmt_(s)) return *r;
  bool exprs = pre_expr_ || post_expr_;
  Stmt out = map_children(
      s, [this, exprs](const PrimExpr& e) { return exprs ? run(e) : e; }, [this](const Stmt& c) { return run(c); });
  return post_stmt_ ? post_stmt_(out) : out;
}

void pre_order(const Stmt& s, const std::function<bool(const Stmt&)>& on_stmt,
               const std::function<bool(const PrimExpr&)>& on_expr) {
  if (!on_stmt(s)) return;
  std::function<PrimExpr(const PrimExpr&)> expr = [&](const PrimExpr& e) {
    if (on_expr(e)) map_children(e, expr);
    return e;
  };
  map_children(
      s, [&](const PrimExpr& e) { return on_expr ? expr(e) : e; },
      [&](const Stmt& child) {
        pre_order(child, on_stmt, on_expr);
        return child;
      });
}

PrimExpr substitute(const PrimExpr& e, const std::unordered_map<const Object*, PrimExpr>& with) {
  if (with.empty()) return e;
  if (e.as<VarNode>()) {
    auto found = with.find(e.get());
    return found == with.end() ? e : found->second;
  }
  return map_children(e, [&](const PrimExpr& c) { return substitute(c, with); });
}

Stmt substitute(const Stmt& s, const std::unordered_map<const Object*, PrimExpr>& with) {
  if (with.empty()) return s;
  return map_children(
      s, [&](const PrimExpr& e) { return substitute(e, with); }, [&](const Stmt& c) { return substitute(c, with); });
}

Stmt fresh_bindings(const Stmt& s, const std::function<std::string(const std::string&)>& rename) {
  std::unordered_map<const Object*, bool> bound;
  Visitor collect;
  collect.on<ForNode>([&](const ForNode* f) {
    bound[f->loop_var.get()] = true;
    collect.visit_children(f);
  });
  collect.on<LetStmtNode>([&](const LetStmtNode* l) {
    bound[l->var.get()] = true;
    collect.visit_children(l);
  });
  collect.on<LetNode>([&](const LetNode* l) {
    bound[l->var.get()] = true;
    collect.visit_children(l);
  });
  collect.on<AllocateNode>([&](const AllocateNode* a) {
    bound[a->buffer->data.get()] = true;
    collect.visit_children(a);
  });
  collect.visit(Any(s));
  if (bound.empty()) return s;
  Mutator m;  // memoised: each variable, and each buffer over it, is copied once
  m.on<VarNode>([&](const VarNode* v, const ObjectRef& self) -> Any {
    return bound.count(v) ? Any(Var(rename ? rename(v->name) : v->name, v->dtype)) : Any(self);
  });
  return m.mutate_as<Stmt>(s);
}

PrimFunc fresh_copy(const PrimFunc& f) {
  Mutator m;  // memoised: each variable, and each buffer over it, is copied once
  m.on<VarNode>([](const VarNode* v, const ObjectRef&) -> Any { return Any(Var(v->name, v->dtype)); });
  return m.mutate_as<PrimFunc>(f);
}

bool has_loop(const Stmt& s) {
  bool found = false;
  Visitor v;
  v.on<ForNode>([&](const ForNode*) { found = true; });
  v.visit(Any(s));
  return found;
}

bool uses_var(const Any& node, const VarNode* v) {
  bool found = false;
  Visitor visitor;
  visitor.on<VarNode>([&](const VarNode* x) { found |= x == v; });
  visitor.visit(node);
  return found;
}

bool reads_memory(const PrimExpr& e) {
  bool reads = false;
  Visitor v;
  v.on<BufferLoadNode>([&](const BufferLoadNode*) { reads = true; });
  v.visit(Any(e));
  return reads;
}

}  // namespace loom::tir
