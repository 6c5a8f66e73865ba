#include "loom/tir/util.h"

#include <algorithm>
#include <map>

#include "loom/object/structural.h"
#include "loom/object/traversal.h"

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
bool map_list(const Array& in, const ExprFn& f, std::vector<PrimExpr>* out) {
  bool changed = false;
  for (const PrimExpr& x : exprs(in)) {
    out->push_back(f(x));
    changed |= !out->back().same_as(x);
  }
  return changed;
}

bool checked_add(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }
bool checked_mul(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

PrimExpr bool_const(bool v) { return IntImm(DataType::Bool(), v ? 1 : 0); }

PrimExpr int_const(DataType t, int64_t v) { return IntImm(t, v); }

// Wraps `v` to the width of integer type `t`.
int64_t wrap(DataType t, int64_t v) {
  if (t.bits >= 64) return v;
  uint64_t mask = (uint64_t{1} << t.bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (t.code == DataType::kInt && (u >> (t.bits - 1)) & 1) u |= ~mask;
  return static_cast<int64_t>(u);
}
}  // namespace

bool is_int(DataType t) { return t.code == DataType::kInt || t.code == DataType::kUInt; }

std::optional<int64_t> const_int(const PrimExpr& e) {
  if (const auto* i = e.as<IntImmNode>()) return i->value;
  return std::nullopt;
}

PrimExpr map_children(const PrimExpr& e, const ExprFn& f) {
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

Stmt map_children(const Stmt& s, const ExprFn& fe, const StmtFn& fs) {
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

Stmt fresh_bindings(const Stmt& s) {
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
    return bound.count(v) ? Any(Var(v->name, v->dtype)) : Any(self);
  });
  return m.mutate_as<Stmt>(s);
}

Stmt serial_with_note(const ForNode& loop, const std::string& key, const std::string& reason) {
  std::map<std::string, Any> notes = loop.annotations.get() ? loop.annotations->items : std::map<std::string, Any>{};
  notes[key] = Any(reason);
  return For(loop.loop_var, loop.min, loop.extent, ForKind::kSerial, loop.body, "", Map(notes));
}

std::vector<const ForNode*> perfect_nest(const ForNode* top) {
  std::vector<const ForNode*> nest{top};
  while (const auto* next = nest.back()->body.as<ForNode>()) nest.push_back(next);
  return nest;
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

Stmt no_op() { return Evaluate(PrimExpr(0)); }
bool is_no_op(const Stmt& s) {
  const auto* e = s.as<EvaluateNode>();
  return e && e->value.as<IntImmNode>();
}

Stmt seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (const Stmt& s : stmts) {
    if (const auto* q = s.as<SeqStmtNode>()) {
      for (const Any& x : q->seq) {
        Stmt inner = x.cast<Stmt>();
        if (!is_no_op(inner)) flat.push_back(inner);
      }
    } else if (!is_no_op(s)) {
      flat.push_back(s);
    }
  }
  if (flat.empty()) return no_op();
  if (flat.size() == 1) return flat[0];
  return SeqStmt(flat);
}

// ---------------------------------------------------------------------------
// Bounds
// ---------------------------------------------------------------------------
void Analyzer::bind_loop(const ForNode& loop) {
  Bound m = bound(loop.min), e = bound(loop.extent);
  Bound r;
  r.lo = m.lo;
  int64_t hi;
  if (m.hi && e.hi && checked_add(*m.hi, *e.hi - 1, &hi)) r.hi = hi;
  bind(loop.loop_var.get(), r);
}

Bound Analyzer::bound(const PrimExpr& e) const {
  DataType t = e.dtype();
  if (!is_int(t) || t.lanes != 1) return {};
  if (auto c = const_int(e)) return Bound::exact(*c);
  if (const auto* v = e.as<VarNode>()) {
    auto found = ranges_.find(v);
    return found == ranges_.end() ? Bound{} : found->second;
  }
  auto sum = [](std::optional<int64_t> a, std::optional<int64_t> b) -> std::optional<int64_t> {
    int64_t r;
    if (a && b && checked_add(*a, *b, &r)) return r;
    return std::nullopt;
  };
  auto neg = [](std::optional<int64_t> a) -> std::optional<int64_t> {
    if (!a || *a == INT64_MIN) return std::nullopt;
    return -*a;
  };
  if (const auto* b = e.as<AddNode>()) {
    Bound x = bound(b->a), y = bound(b->b);
    return {sum(x.lo, y.lo), sum(x.hi, y.hi)};
  }
  if (const auto* b = e.as<SubNode>()) {
    Bound x = bound(b->a), y = bound(b->b);
    return {sum(x.lo, neg(y.hi)), sum(x.hi, neg(y.lo))};
  }
  if (const auto* b = e.as<MulNode>()) {
    Bound x = bound(b->a), y = bound(b->b);
    if (!x.known() || !y.known()) return {};
    int64_t c[4];
    if (!checked_mul(*x.lo, *y.lo, &c[0]) || !checked_mul(*x.lo, *y.hi, &c[1]) || !checked_mul(*x.hi, *y.lo, &c[2]) ||
        !checked_mul(*x.hi, *y.hi, &c[3])) {
      return {};
    }
    return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
  }
  if (const auto* b = e.as<FloorDivNode>()) {
    auto c = const_int(b->b);
    if (!c || *c <= 0) return {};
    Bound x = bound(b->a);
    Bound r;
    if (x.lo) r.lo = floor_div(*x.lo, *c);
    if (x.hi) r.hi = floor_div(*x.hi, *c);
    return r;
  }
  if (const auto* b = e.as<FloorModNode>()) {
    auto c = const_int(b->b);
    if (!c || *c <= 0) return {};
    Bound x = bound(b->a);
    if (x.known() && *x.lo >= 0 && *x.hi < *c) return x;
    return {int64_t{0}, *c - 1};
  }
  if (e.as<MinNode>() || e.as<MaxNode>()) {
    const auto* b = e.as<BinaryOpNode>();
    bool is_min = e.as<MinNode>() != nullptr;
    Bound x = bound(b->a), y = bound(b->b);
    auto pick = [&](std::optional<int64_t> p, std::optional<int64_t> q, bool lower) -> std::optional<int64_t> {
      // min: lo = min(lo, lo) (unbounded if either is), hi = min(hi, hi)
      // (bounded if either is); max mirrors it.
      if (lower == is_min) {
        if (!p || !q) return std::nullopt;
      } else {
        if (!p) return q;
        if (!q) return p;
      }
      return is_min ? std::min(*p, *q) : std::max(*p, *q);
    };
    return {pick(x.lo, y.lo, true), pick(x.hi, y.hi, false)};
  }
  if (const auto* s = e.as<SelectNode>()) {
    Bound x = bound(s->true_value), y = bound(s->false_value);
    Bound r;
    if (x.lo && y.lo) r.lo = std::min(*x.lo, *y.lo);
    if (x.hi && y.hi) r.hi = std::max(*x.hi, *y.hi);
    return r;
  }
  if (const auto* c = e.as<CastNode>()) {
    Bound x = bound(c->value);
    if (x.known() && wrap(t, *x.lo) == *x.lo && wrap(t, *x.hi) == *x.hi) return x;
    return {};
  }
  return {};
}

namespace {
// The bound of a - b for two integer scalars, with common terms cancelled.
Bound difference(const Analyzer& an, const PrimExpr& a, const PrimExpr& b) {
  return an.bound(simplify(PrimExpr(Sub(a, b)), an));
}
}  // namespace

bool Analyzer::prove(const PrimExpr& cond) const {
  if (auto c = const_int(cond)) return *c != 0;
  if (const auto* n = cond.as<NotNode>()) return disprove(n->a);
  if (const auto* b = cond.as<AndNode>()) return prove(b->a) && prove(b->b);
  if (const auto* b = cond.as<OrNode>()) return prove(b->a) || prove(b->b);
  const auto* b = cond.as<BinaryOpNode>();
  if (!b || !is_int(b->a.dtype()) || b->a.dtype().lanes != 1) return false;
  Bound d = difference(*this, b->a, b->b);
  if (cond.as<LTNode>()) return d.hi && *d.hi < 0;
  if (cond.as<LENode>()) return d.hi && *d.hi <= 0;
  if (cond.as<GTNode>()) return d.lo && *d.lo > 0;
  if (cond.as<GENode>()) return d.lo && *d.lo >= 0;
  if (cond.as<EQNode>()) return d.known() && *d.lo == 0 && *d.hi == 0;
  if (cond.as<NENode>()) return (d.lo && *d.lo > 0) || (d.hi && *d.hi < 0);
  return false;
}

bool Analyzer::disprove(const PrimExpr& cond) const {
  if (auto c = const_int(cond)) return *c == 0;
  if (const auto* n = cond.as<NotNode>()) return prove(n->a);
  if (const auto* b = cond.as<AndNode>()) return disprove(b->a) || disprove(b->b);
  if (const auto* b = cond.as<OrNode>()) return disprove(b->a) && disprove(b->b);
  const auto* b = cond.as<BinaryOpNode>();
  if (!b || !is_int(b->a.dtype()) || b->a.dtype().lanes != 1) return false;
  Bound d = difference(*this, b->a, b->b);
  if (cond.as<LTNode>()) return d.lo && *d.lo >= 0;
  if (cond.as<LENode>()) return d.lo && *d.lo > 0;
  if (cond.as<GTNode>()) return d.hi && *d.hi <= 0;
  if (cond.as<GENode>()) return d.hi && *d.hi < 0;
  if (cond.as<EQNode>()) return (d.lo && *d.lo > 0) || (d.hi && *d.hi < 0);
  if (cond.as<NENode>()) return d.known() && *d.lo == 0 && *d.hi == 0;
  return false;
}

// ---------------------------------------------------------------------------
// Simplification
// ---------------------------------------------------------------------------
namespace {
// sum of coefficient * atom, plus a constant, for integer scalars.
struct Linear {
  std::vector<std::pair<PrimExpr, int64_t>> terms;
  int64_t constant = 0;
  bool ok = true;
};

bool same_atom(const PrimExpr& a, const PrimExpr& b) {
  if (a.same_as(b)) return true;
  if (a.as<VarNode>() || b.as<VarNode>()) return false;
  return same_expression(Any(a), Any(b));
}

void add_term(Linear* l, const PrimExpr& atom, int64_t k) {
  for (auto& [a, c] : l->terms) {
    if (same_atom(a, atom)) {
      l->ok &= checked_add(c, k, &c);
      return;
    }
  }
  l->terms.push_back({atom, k});
}

void to_linear(const PrimExpr& e, int64_t scale, Linear* l) {
  if (!l->ok) return;
  if (auto c = const_int(e)) {
    int64_t v;
    l->ok &= checked_mul(*c, scale, &v) && checked_add(l->constant, v, &l->constant);
    return;
  }
  if (const auto* b = e.as<AddNode>()) {
    to_linear(b->a, scale, l);
    to_linear(b->b, scale, l);
    return;
  }
  if (const auto* b = e.as<SubNode>()) {
    to_linear(b->a, scale, l);
    to_linear(b->b, -scale, l);
    return;
  }
  if (const auto* b = e.as<MulNode>()) {
    auto ca = const_int(b->a), cb = const_int(b->b);
    int64_t s;
    if (cb && checked_mul(scale, *cb, &s)) return to_linear(b->a, s, l);
    if (ca && checked_mul(scale, *ca, &s)) return to_linear(b->b, s, l);
  }
  add_term(l, e, scale);
}

PrimExpr from_linear(const Linear& l, DataType t) {
  PrimExpr acc;
  int64_t constant = l.constant;
  auto term = [&](const PrimExpr& atom, int64_t k) { return k == 1 ? atom : PrimExpr(Mul(atom, int_const(t, k))); };
  for (const auto& [atom, k] : l.terms)
    if (k > 0) acc = acc.defined() ? PrimExpr(Add(acc, term(atom, k))) : term(atom, k);
  for (const auto& [atom, k] : l.terms) {
    if (k >= 0) continue;
    if (!acc.defined() && constant != 0) {
      acc = int_const(t, constant);
      constant = 0;
    }
    acc = acc.defined() ? PrimExpr(Sub(acc, term(atom, -k))) : term(atom, k);
  }
  if (!acc.defined()) return int_const(t, constant);
  if (constant > 0) return Add(acc, int_const(t, constant));
  if (constant < 0 && constant != INT64_MIN) return Sub(acc, int_const(t, -constant));
  if (constant < 0) return Add(acc, int_const(t, constant));
  return acc;
}

class ExprSimplifier {
 public:
  explicit ExprSimplifier(const Analyzer& an) : an_(an) {}

  PrimExpr run(const PrimExpr& e) { return rewrite(map_children(e, [this](const PrimExpr& c) { return run(c); })); }

 private:
  PrimExpr rewrite(const PrimExpr& e) {
    DataType t = e.dtype();
    bool int_scalar = is_int(t) && t.lanes == 1;
    if (int_scalar && (e.as<AddNode>() || e.as<SubNode>() || e.as<MulNode>())) {
      Linear l;
      to_linear(e, 1, &l);
      if (!l.ok) return e;
      PrimExpr out = from_linear(l, t);
      return same_expression(Any(out), Any(e)) ? e : out;
    }
    if (int_scalar && (e.as<FloorDivNode>() || e.as<FloorModNode>())) return div_mod(e, e.as<FloorDivNode>() != nullptr);
    if (int_scalar && (e.as<MinNode>() || e.as<MaxNode>())) {
      const auto* b = e.as<BinaryOpNode>();
      bool is_min = e.as<MinNode>() != nullptr;
      if (same_atom(b->a, b->b)) return b->a;
      if (an_.prove(LE(b->a, b->b))) return is_min ? b->a : b->b;
      if (an_.prove(GE(b->a, b->b))) return is_min ? b->b : b->a;
      return e;
    }
    if (t.code == DataType::kBool && t.lanes == 1) {
      if (const auto* b = e.as<AndNode>()) {
        if (auto c = const_int(b->a)) return *c ? b->b : b->a;
        if (auto c = const_int(b->b)) return *c ? b->a : b->b;
      }
      if (const auto* b = e.as<OrNode>()) {
        if (auto c = const_int(b->a)) return *c ? b->a : b->b;
        if (auto c = const_int(b->b)) return *c ? b->b : b->a;
      }
      if (const auto* n = e.as<NotNode>()) {
        if (auto c = const_int(n->a)) return bool_const(*c == 0);
      }
      if (e.as<BinaryOpNode>() && !e.as<AndNode>() && !e.as<OrNode>()) {
        if (an_.prove(e)) return bool_const(true);
        if (an_.disprove(e)) return bool_const(false);
      }
      return e;
    }
    if (const auto* s = e.as<SelectNode>()) {
      if (s->condition.dtype().lanes == 1) {
        if (an_.prove(s->condition)) return s->true_value;
        if (an_.disprove(s->condition)) return s->false_value;
      }
      if (same_atom(s->true_value, s->false_value)) return s->true_value;
      return e;
    }
    if (const auto* c = e.as<CastNode>()) {
      if (c->value.dtype() == t) return c->value;
      if (auto v = const_int(c->value); v && int_scalar) return int_const(t, wrap(t, *v));
      return e;
    }
    if (const auto* l = e.as<LetNode>()) {
      if (l->value.as<IntImmNode>() || l->value.as<FloatImmNode>() || l->value.as<VarNode>()) {
        return run(substitute(l->body, {{l->var.get(), l->value}}));
      }
    }
    return e;
  }

  // floordiv/floormod: constants folded; x = c q + r with r in [0, c)
  // gives q and r.
  PrimExpr div_mod(const PrimExpr& e, bool is_div) {
    const auto* b = e.as<BinaryOpNode>();
    DataType t = e.dtype();
    auto c = const_int(b->b);
    if (!c || *c == 0) return e;
    if (auto a = const_int(b->a)) {
      int64_t q = floor_div(*a, *c);
      return int_const(t, is_div ? q : *a - q * *c);
    }
    if (*c < 0) return e;
    Linear l;
    to_linear(b->a, 1, &l);
    if (!l.ok) return e;
    Linear quotient, rest;
    for (const auto& [atom, k] : l.terms) {
      if (k % *c == 0) {
        add_term(&quotient, atom, k / *c);
      } else {
        add_term(&rest, atom, k);
      }
    }
    quotient.constant = floor_div(l.constant, *c);
    rest.constant = l.constant - quotient.constant * *c;
    PrimExpr r = from_linear(rest, t);
    Bound rb = an_.bound(r);
    if (rb.known() && *rb.lo >= 0 && *rb.hi < *c) return is_div ? from_linear(quotient, t) : r;
    return e;
  }

  const Analyzer& an_;
};

class StmtSimplifier {
 public:
  explicit StmtSimplifier(Analyzer an) : an_(std::move(an)) {}

  Stmt run(const Stmt& s) {
    auto expr = [this](const PrimExpr& e) { return ExprSimplifier(an_).run(e); };
    auto stmt = [this](const Stmt& c) { return run(c); };
    if (const auto* f = s.as<ForNode>()) {
      PrimExpr min = expr(f->min), extent = expr(f->extent);
      auto n = const_int(extent);
      if (n && *n <= 0) return no_op();
      if (n && *n == 1 && f->for_kind() != ForKind::kThreadBinding) {
        return run(substitute(f->body, {{f->loop_var.get(), min}}));
      }
      For loop(f->loop_var, min, extent, f->for_kind(), f->body, f->thread, f->annotations);
      an_.bind_loop(*loop.get());
      Stmt body = run(f->body);
      an_.unbind(f->loop_var.get());
      if (is_no_op(body)) return body;
      if (min.same_as(f->min) && extent.same_as(f->extent) && body.same_as(f->body)) return s;
      return For(f->loop_var, min, extent, f->for_kind(), body, f->thread, f->annotations);
    }
    if (const auto* i = s.as<IfThenElseNode>()) {
      PrimExpr c = expr(i->condition);
      if (an_.prove(c)) return run(i->then_case);
      if (an_.disprove(c)) return i->else_case.defined() ? run(i->else_case) : no_op();
      Stmt t = run(i->then_case);
      Stmt e = i->else_case.defined() ? run(i->else_case) : Stmt();
      if (c.same_as(i->condition) && t.same_as(i->then_case) && e.same_as(i->else_case)) return s;
      return IfThenElse(c, t, e);
    }
    if (const auto* l = s.as<LetStmtNode>()) {
      PrimExpr v = expr(l->value);
      if (v.as<IntImmNode>() || v.as<FloatImmNode>() || v.as<VarNode>()) return run(substitute(l->body, {{l->var.get(), v}}));
      an_.bind(l->var.get(), an_.bound(v));
      Stmt body = run(l->body);
      an_.unbind(l->var.get());
      if (v.same_as(l->value) && body.same_as(l->body)) return s;
      return LetStmt(l->var, v, body);
    }
    if (const auto* q = s.as<SeqStmtNode>()) {
      std::vector<Stmt> out;
      bool changed = false;
      for (const Any& x : q->seq) {
        Stmt old = x.cast<Stmt>();
        out.push_back(run(old));
        changed |= !out.back().same_as(old) || is_no_op(out.back()) || out.back().as<SeqStmtNode>();
      }
      return changed ? seq(out) : s;
    }
    return map_children(s, expr, stmt);
  }

 private:
  Analyzer an_;
};
}  // namespace

PrimExpr simplify(const PrimExpr& e, const Analyzer& analyzer) { return ExprSimplifier(analyzer).run(e); }
Stmt simplify(const Stmt& s, Analyzer analyzer) { return StmtSimplifier(std::move(analyzer)).run(s); }

tir::PrimFunc with_body(const tir::PrimFuncNode& f, const Stmt& body) {
  std::vector<Any> params(f.params.begin(), f.params.end());
  return tir::PrimFunc(params, body, f.ret, f.attrs);
}

transform::Pass prim_pass(transform::PassInfo info, PrimBodyFn body_of) {
  return transform::module_pass(info, [body_of](const ir::IRModule& module, const transform::PassContext& ctx) {
    ir::IRModule out = module;
    for (const std::string& name : module.names()) {
      const auto* f = module.lookup(name).as<tir::PrimFuncNode>();
      if (!f) continue;
      Stmt body;
      try {
        body = body_of(*f, module, ctx);
      } catch (const Error& e) {
        LOOM_THROW(Error) << "@" << name << ": " << e.what();
      }
      if (!body.same_as(f->body)) out = out.with_function(name, with_body(*f, body));
    }
    return out;
  });
}

}  // namespace loom::tir
