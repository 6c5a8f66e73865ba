#include "vectorize_loop.h"

#include <loom/arith/simplify.h>
#include <loom/target/target.h>
#include <loom/tir/functor.h>
#include <loom/tir/util.h>
#include <loom/transform/prim_pass.h>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here
using arith::simplify;

namespace {

// Why a loop cannot be vectorized; it then stays a serial loop.
struct Refused {
  std::string reason;
};

// The body of `for v in [min, min + lanes)` as one vector iteration: v is
// ramp(min, 1, lanes), values that depend on it are vectors, the others
// stay scalars and are broadcast where they meet a vector.
class Vectorizer {
 public:
  Vectorizer(const VarNode* var, PrimExpr min, int64_t lanes) : var_(var), min_(std::move(min)), lanes_(lanes) {}

  // Statements that do not use the variable stay; stores become vector
  // stores; sequences, annotations and ifs are walked into; anything else
  // that uses the variable is refused.
  Stmt stmt(const Stmt& body) {
    return Rewriter()
        .pre_stmt([this](const Stmt& s) -> std::optional<Stmt> {
          if (!uses_var(Any(s), var_)) return s;
          if (const auto* st = s.as<BufferStoreNode>()) return store(*st);
          if (s.as<SeqStmtNode>()) return std::nullopt;
          if (const auto* a = s.as<AttrStmtNode>()) {
            if (uses_var(Any(a->value), var_)) throw Refused{"an annotation depends on the loop variable"};
            return std::nullopt;
          }
          if (const auto* i = s.as<IfThenElseNode>()) {
            if (uses_var(Any(i->condition), var_)) throw Refused{"an if's condition depends on the loop variable"};
            return std::nullopt;
          }
          if (s.as<ForNode>()) throw Refused{"it contains a loop"};
          if (s.as<AllocateNode>()) throw Refused{"it allocates"};
          if (s.as<LetStmtNode>()) throw Refused{"it binds a variable that depends on the loop variable"};
          throw Refused{"it contains a " + s->type_key() + " that depends on the loop variable"};
        })
        .run(body);
  }

 private:
  Stmt store(const BufferStoreNode& st) {
    std::vector<PrimExpr> indices = vector_indices(st.indices);
    PrimExpr value = expr(st.value);
    if (indices.empty() || indices.back().dtype().lanes == 1) {
      throw Refused{"the store to '" + st.buffer->name + "' goes to the same element in every iteration"};
    }
    return BufferStore(st.buffer, widen(value), indices);
  }

  PrimExpr widen(const PrimExpr& e) { return e.dtype().lanes == 1 ? PrimExpr(Broadcast(e, lanes_)) : e; }

  std::vector<PrimExpr> vector_indices(const Array& in) {
    std::vector<PrimExpr> out;
    bool any = false;
    for (const Any& i : in) {
      out.push_back(expr(i.cast<PrimExpr>()));
      any |= out.back().dtype().lanes > 1;
    }
    if (any)  // every index a vector, so the access has the loop's lanes
      for (PrimExpr& i : out) i = widen(i);
    return out;
  }

  PrimExpr expr(const PrimExpr& e) {
    if (e.get() == var_) return Ramp(min_, PrimExpr(IntImm(min_.dtype(), 1)), lanes_);
    if (!uses_var(Any(e), var_)) return e;
    if (e.as<RampNode>() || e.as<BroadcastNode>()) throw Refused{"it is already vector code"};
    if (e.as<LetNode>()) throw Refused{"it binds a variable that depends on the loop variable"};
    if (const auto* l = e.as<BufferLoadNode>()) return BufferLoad(l->buffer, vector_indices(l->indices));
    if (const auto* b = e.as<BinaryOpNode>()) {
      PrimExpr x = expr(b->a), y = expr(b->b);
      // Index arithmetic on ramps stays a ramp.
      const auto* rx = x.as<RampNode>();
      const auto* ry = y.as<RampNode>();
      bool add = e.as<AddNode>(), sub = e.as<SubNode>(), mul = e.as<MulNode>();
      if ((add || sub) && rx && y.dtype().lanes == 1) {
        return Ramp(simplify(add ? PrimExpr(Add(rx->base, y)) : PrimExpr(Sub(rx->base, y))), rx->stride, lanes_);
      }
      if (add && ry && x.dtype().lanes == 1) return Ramp(simplify(Add(x, ry->base)), ry->stride, lanes_);
      if ((add || sub) && rx && ry) {
        return Ramp(simplify(add ? PrimExpr(Add(rx->base, ry->base)) : PrimExpr(Sub(rx->base, ry->base))),
                    simplify(add ? PrimExpr(Add(rx->stride, ry->stride)) : PrimExpr(Sub(rx->stride, ry->stride))),
                    lanes_);
      }
      if (mul && rx && y.dtype().lanes == 1)
        return Ramp(simplify(Mul(rx->base, y)), simplify(Mul(rx->stride, y)), lanes_);
      if (mul && ry && x.dtype().lanes == 1)
        return Ramp(simplify(Mul(x, ry->base)), simplify(Mul(x, ry->stride)), lanes_);
      return map_children(e, [&](const PrimExpr& c) { return c.same_as(b->a) ? widen(x) : widen(y); });
    }
    // Select, Not, Cast, Call: children vectorized, scalars broadcast.
    return map_children(e, [this](const PrimExpr& c) { return widen(expr(c)); });
  }

  const VarNode* var_;
  PrimExpr min_;
  int64_t lanes_;
};

class LoopVectorizer {
 public:
  explicit LoopVectorizer(int64_t max_lanes) : max_lanes_(max_lanes) {}

  Stmt run(const Stmt& s) {
    return Rewriter().post_stmt([this](const Stmt& out) { return vectorize(out); }).run(s);
  }

 private:
  // A loop whose body is already vectorized.
  Stmt vectorize(const Stmt& out) {
    const auto* f = out.as<ForNode>();
    if (!f || f->for_kind() != ForKind::kVectorized) return out;
    auto lanes = const_int(simplify(f->extent));
    std::string reason;
    if (!lanes) {
      reason = "its extent is not a constant";
    } else if (*lanes > max_lanes_) {
      reason = "its extent " + std::to_string(*lanes) + " exceeds VectorizeLoop.max_lanes (" +
               std::to_string(max_lanes_) + ")";
    } else if (*lanes < 2) {
      return simplify(substitute(f->body, {{f->loop_var.get(), f->min}}));
    } else {
      try {
        return Vectorizer(f->loop_var.get(), f->min, *lanes).stmt(f->body);
      } catch (const Refused& r) {
        reason = r.reason;
      }
    }
    // Not vectorizable: a serial loop that says why.
    return serial_with_note(*f, "vectorize_refused", reason);
  }

  int64_t max_lanes_;
};
}  // namespace

transform::Pass VectorizeLoop() {
  transform::PassInfo info =
      transform::PassInfo::named("VectorizeLoop")
          .summary(
              "loops marked vectorized become vector operations (ramps, broadcasts, vector loads and stores); a loop "
              "that cannot be vectorized becomes serial with the reason annotated")
          .options(
              {SchemaField{"max_lanes", "int", Any(int64_t{64}), "the most lanes one vectorized loop may have"}.between(
                  2, tir::kMaxLanes)})
          .needs({"buffers_flat"})
          .preserves({"*"});
  return transform::prim_pass(
      info,
      [](const tir::PrimFuncNode& f, const ir::IRModule&, const transform::PassContext& ctx) {
        int64_t max_lanes = ctx.get_config("VectorizeLoop.max_lanes").as_int();
        return LoopVectorizer(max_lanes).run(f.body);
      },
      target::on_cpu_target);
}

}  // namespace loom::loop
