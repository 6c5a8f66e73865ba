// The integer bound analyzer (loom/arith/analyzer.h).
#include "loom/arith/analyzer.h"

#include <algorithm>
#include <climits>

#include "int_math.h"
#include "loom/arith/simplify.h"
#include "loom/tir/util.h"

namespace loom::arith {

using namespace tir;  // NOLINT: the prim IR reads best unqualified here
using detail::checked_add;
using detail::checked_mul;
using detail::floor_div;
using detail::wrap;

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

}  // namespace loom::arith
