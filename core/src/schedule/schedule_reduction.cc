// Schedule primitives on reductions (loom/schedule/schedule.h):
// decompose_reduction distributes a nest over the statements of its body
// (init, update, epilogue); rfactor computes partial results per
// iteration of a reduction loop, then combines them.
#include "loom/schedule/schedule.h"

#include <optional>
#include <set>
#include <unordered_map>

#include "loom/arith/simplify.h"
#include "loom/object/structural.h"
#include "loom/tir/builder.h"
#include "loom/tir/functor.h"
#include "loom/tir/util.h"
#include "schedule_internal.h"

namespace loom::tir {

using arith::simplify;
using namespace schedule_detail;  // NOLINT: the primitives' shared helpers (schedule_internal.h)

std::vector<std::vector<std::string>> Schedule::decompose_reduction(const std::string& loop) {
  Recorder record(*this, "decompose_reduction", loop);
  const ForNode* top = find_loop(func_, "decompose_reduction", loop);
  std::vector<const ForNode*> chain = perfect_nest(top);
  // A split's guard around the sequence goes with each part, as far in as
  // the part's own perfect nest (so reorder still reaches its loops); the
  // guards of two splits (rows and columns that both end in a part tile)
  // go together.
  Stmt inner = chain.back()->body;
  Stmt guarded = inner;
  PrimExpr condition;
  while (const auto* g = guarded.as<IfThenElseNode>()) {
    if (g->else_case.defined()) break;
    condition = condition.defined() ? PrimExpr(And(condition, g->condition)) : g->condition;
    guarded = g->then_case;
  }
  std::vector<Stmt> parts = elements(guarded);
  if (parts.size() < 2) {
    refuse("decompose_reduction", "the innermost body of the nest at %" + loop + " is not a sequence of statements");
  }
  // Each buffer written in the nest is accessed at one index only, so the
  // iterations of the distributed nests touch disjoint elements.
  std::vector<Access> all = accesses(inner);
  for (const Access& w : all) {
    if (!w.store) continue;
    for (const Access& a : all) {
      if (a.buffer->data.get() == w.buffer->data.get() && !same_expression(Any(a.indices), Any(w.indices))) {
        refuse("decompose_reduction", "buffer '" + w.buffer->name + "' is accessed at " + indices_text(a.indices) +
                                          " and at " + indices_text(w.indices));
      }
    }
  }
  size_t main = parts.size();
  for (size_t k = 0; k < parts.size() && main == parts.size(); ++k)
    if (!all_loops(parts[k]).empty()) main = k;
  std::vector<std::vector<std::string>> names;
  std::vector<Stmt> nests;
  std::set<std::string> taken;
  for (size_t k = 0; k < parts.size(); ++k) {
    std::unordered_map<const Object*, PrimExpr> with;
    std::vector<Var> vars;
    for (const ForNode* f : chain) {
      if (k == main) {
        vars.push_back(f->loop_var);
      } else {
        Var v(fresh_name(func_, f->loop_var->name + (k < main ? "_init" : "_post"), taken), f->loop_var->dtype);
        taken.insert(v->name);
        with[f->loop_var.get()] = v;
        vars.push_back(v);
      }
    }
    Stmt body = substitute(condition.defined() ? push_guard(parts[k], condition, {}) : parts[k], with);
    std::vector<std::string> list;
    for (size_t m = chain.size(); m-- > 0;) {
      const ForNode* f = chain[m];
      body = For(vars[m], substitute(f->min, with), substitute(f->extent, with), f->for_kind(), body, f->thread,
                 f->annotations);
    }
    for (const Var& v : vars) list.push_back(v->name);
    names.push_back(list);
    nests.push_back(body);
  }
  func_ = with_new_body(func_, replace(func_->body, top, seq(nests)));
  return names;
}

Schedule::RFactor Schedule::rfactor(const std::string& loop_name) {
  Recorder record(*this, "rfactor", loop_name);
  const ForNode* loop = find_loop(func_, "rfactor", loop_name);
  auto extent = const_int(loop->extent);
  if (!extent || *extent <= 0) refuse("rfactor", "%" + loop_name + " has no constant positive extent");
  // The reduction: the perfect nest from the outermost enclosing loop that
  // the store's indices do not use, down to one update store.
  std::vector<Stmt> path;
  path_to(func_->body, loop, path);
  std::vector<const ForNode*> below = perfect_nest(loop);
  // The update, perhaps under the guard of a split.
  const Stmt& inner = below.back()->body;
  const auto* guard = inner.as<IfThenElseNode>();
  const auto* store = (guard && !guard->else_case.defined() ? guard->then_case : inner).as<BufferStoreNode>();
  std::optional<ReductionUpdate> matched = store ? match_reduction_update(store) : std::nullopt;
  if (!matched) {
    refuse("rfactor", "the body of the perfect nest at %" + loop_name +
                          " is not one update B[i] = B[i] + e (or max(B[i], e), min(B[i], e)) of numbers, e not "
                          "reading B");
  }
  ReduceOp op = matched->op;
  PrimExpr term = matched->term;
  auto combine = [op](const PrimExpr& x, const PrimExpr& y) { return reduce_combine(op, x, y); };
  DataType t = store->buffer->dtype;
  const ForNode* top = loop;
  for (size_t k = path.size() - 1; k-- > 0;) {
    const auto* f = path[k].as<ForNode>();
    if (!f || f->body.get() != path[k + 1].get() || uses_var(Any(store->indices), f->loop_var.get())) break;
    top = f;
  }
  for (const ForNode* f : perfect_nest(top)) {
    if (uses_var(Any(store->indices), f->loop_var.get())) {
      refuse("rfactor", "%" + loop_name + " is not a reduction loop: '" + store->buffer->name + "' is written at " +
                            indices_text(store->indices));
    }
    if (f->for_kind() == ForKind::kParallel)
      refuse("rfactor", "the reduction loop %" + f->loop_var->name + " is parallel");
  }
  DataType index_type = DataType::Int(64);
  Buffer rf(fresh_name(func_, store->buffer->name + "_rf"), t, {IntImm(index_type, *extent)}, "local");
  std::set<std::string> taken;
  Var init(fresh_name(func_, loop_name + "_init", taken), index_type);
  taken.insert(init->name);
  Var final(fresh_name(func_, loop_name + "_final", taken), index_type);
  std::optional<PrimExpr> identity = reduce_identity(op, t);
  if (!identity) refuse("rfactor", "min of uint64 has no partial start Loom can write");
  PrimExpr zero = *identity;
  PrimExpr v = simplify(Cast(index_type, Sub(loop->loop_var, loop->min)));
  Stmt update = BufferStore(rf, combine(BufferLoad(rf, {v}), term), {v});
  Stmt nest = replace(ref_of<Stmt>(top), store, update);
  Stmt set = For(init, IntImm(index_type, 0), IntImm(index_type, *extent), ForKind::kSerial,
                 BufferStore(rf, zero, {PrimExpr(init)}));
  std::vector<PrimExpr> at = exprs_of(store->indices);
  Stmt sum =
      For(final, IntImm(index_type, 0), IntImm(index_type, *extent), ForKind::kSerial,
          BufferStore(store->buffer, combine(BufferLoad(store->buffer, at), BufferLoad(rf, {PrimExpr(final)})), at));
  func_ = with_new_body(func_, replace(func_->body, top, Allocate(rf, seq({set, nest, sum}))));
  return {rf->name, init->name, final->name};
}

}  // namespace loom::tir
