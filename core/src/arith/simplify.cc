// The arithmetic simplifier (loom/arith/simplify.h).
#include "loom/arith/simplify.h"

#include <algorithm>
#include <climits>
#include <optional>

#include "int_math.h"
#include "loom/object/function.h"
#include "loom/object/structural.h"
#include "loom/support/stack.h"
#include "loom/tir/builder.h"
#include "loom/tir/functor.h"
#include "loom/tir/util.h"

namespace loom::arith {

using namespace tir;  // NOLINT: the prim IR reads best unqualified here
using detail::checked_add;
using detail::checked_mul;
using detail::floor_div;
using detail::wrap;

namespace {
PrimExpr bool_const(bool v) { return IntImm(DataType::Bool(), v ? 1 : 0); }

// A constant of an integer type, wrapped to its width (what the type's
// arithmetic computes).
PrimExpr int_const(DataType t, int64_t v) { return IntImm(t, wrap(t, v)); }

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

// Whether `q` is `a // c`: written so, or, for a = y // c1, as y // (c1 c).
bool is_quotient(const PrimExpr& q, const PrimExpr& a, int64_t c) {
  const auto* div = q.as<FloorDivNode>();
  auto dc = div ? const_int(div->b) : std::nullopt;
  if (!dc) return false;
  if (*dc == c && same_atom(div->a, a)) return true;
  const auto* inner = a.as<FloorDivNode>();
  auto c1 = inner ? const_int(inner->b) : std::nullopt;
  int64_t product;
  return c1 && *c1 > 0 && c > 0 && checked_mul(*c1, c, &product) && product == *dc && same_atom(div->a, inner->a);
}

// (x // c) * c * k + (x % c) * k is x * k for any x and constant c != 0
// (floor division and modulo): such pairs of terms become x's terms, until
// none is left (a flattened index of loops fused over several axes,
// ((f // 7) * 7 + f % 7), is f again).
void merge_div_mod(Linear* l) {
  for (bool merged = true; merged && l->ok;) {
    merged = false;
    for (size_t m = 0; m < l->terms.size() && !merged; ++m) {
      const auto* mod = l->terms[m].first.as<FloorModNode>();
      auto c = mod ? const_int(mod->b) : std::nullopt;
      if (!c || *c == 0) continue;
      int64_t k = l->terms[m].second, kc;
      if (!checked_mul(k, *c, &kc)) continue;
      for (size_t d = 0; d < l->terms.size() && !merged; ++d) {
        if (l->terms[d].second != kc || !is_quotient(l->terms[d].first, mod->a, *c)) continue;
        PrimExpr x = mod->a;
        l->terms.erase(l->terms.begin() + static_cast<std::ptrdiff_t>(std::max(m, d)));
        l->terms.erase(l->terms.begin() + static_cast<std::ptrdiff_t>(std::min(m, d)));
        to_linear(x, k, l);
        merged = true;
      }
    }
  }
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

  PrimExpr run(const PrimExpr& e) {
    return rewrite(map_children(e, [this](const PrimExpr& c) { return run(c); }));
  }

 private:
  PrimExpr rewrite(const PrimExpr& e) {
    DataType t = e.dtype();
    bool int_scalar = is_int(t) && t.lanes == 1;
    if (int_scalar && (e.as<AddNode>() || e.as<SubNode>() || e.as<MulNode>())) {
      Linear l;
      to_linear(e, 1, &l);
      merge_div_mod(&l);
      if (!l.ok) return e;
      PrimExpr out = from_linear(l, t);
      return same_expression(Any(out), Any(e)) ? e : out;
    }
    if (int_scalar && (e.as<FloorDivNode>() || e.as<FloorModNode>()))
      return div_mod(e, e.as<FloorDivNode>() != nullptr);
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
    return with_stack([&] { return run_here(s); });  // one level of stack per level of nesting
  }

 private:
  Stmt run_here(const Stmt& s) {
    auto expr = [this](const PrimExpr& e) {
      return ExprSimplifier(an_).run(subst_.empty() ? e : substitute(e, subst_));
    };
    auto stmt = [this](const Stmt& c) { return run(c); };
    if (const auto* f = s.as<ForNode>()) {
      PrimExpr min = expr(f->min), extent = expr(f->extent);
      auto n = const_int(extent);
      if (n && *n <= 0) return no_op();
      if (n && *n == 1 && f->for_kind() != ForKind::kThreadBinding) {
        return replacing(f->loop_var.get(), min, f->body);
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
      if (v.as<IntImmNode>() || v.as<FloatImmNode>() || v.as<VarNode>()) return replacing(l->var.get(), v, l->body);
      an_.bind(l->var.get(), an_.bound(v));
      Stmt body = run(l->body);
      an_.unbind(l->var.get());
      if (v.same_as(l->value) && body.same_as(l->body)) return s;
      return LetStmt(l->var, v, body);
    }
    if (const auto* q = s.as<SeqStmtNode>()) {
      // Nested sequences are flattened first (simplified level by level,
      // each level's result would be copied into the next: quadratic).
      std::vector<Stmt> in = flatten_seq(s), out;
      bool changed = in.size() != q->seq.size();
      for (size_t k = 0; k < in.size(); ++k) {
        out.push_back(run(in[k]));
        changed |= !out.back().same_as(in[k]) || is_no_op(out.back()) || out.back().as<SeqStmtNode>() ||
                   (!changed && !in[k].same_as(q->seq[k].cast<Stmt>()));
      }
      return changed ? seq(out) : s;
    }
    return map_children(s, expr, stmt);
  }

  // `body` simplified with `var` replaced by `value` (already simplified):
  // replaced as expressions are reached, not by substituting into `body`
  // first, which would walk the rest of the function once per loop of
  // extent 1 (quadratic in nested ones).
  Stmt replacing(const Object* var, const PrimExpr& value, const Stmt& body) {
    subst_[var] = value;
    Stmt out = run(body);
    subst_.erase(var);
    return out;
  }

  Analyzer an_;
  std::unordered_map<const Object*, PrimExpr> subst_;
};
}  // namespace

PrimExpr simplify(const PrimExpr& e, const Analyzer& analyzer) { return ExprSimplifier(analyzer).run(e); }
Stmt simplify(const Stmt& s, Analyzer analyzer) { return StmtSimplifier(std::move(analyzer)).run(s); }

namespace {
// For frontends (loom.tir.simplify in Python).
const bool registered = [] {
  FunctionRegistry::register_function(
      "tir.simplify",
      Function::typed(
          [](PrimExpr e) {
            if (!e.defined()) LOOM_THROW(TypeError) << "tir.simplify: e must be a tir expression, got none";
            return simplify(e);
          },
          "tir.simplify"),
      "tir.simplify(e): e simplified (constants folded, like terms combined; loom/arith/simplify.h)");
  return true;
}();
}  // namespace

}  // namespace loom::arith
