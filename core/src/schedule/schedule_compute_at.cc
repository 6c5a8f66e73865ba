// The compute_at schedule primitive (loom/schedule/schedule.h): a producer nest
// moved into a later loop, cut to the region one iteration reads; and
// allocate_at, an allocation moved into a loop, cut to the region one
// iteration touches.
#include "loom/schedule/schedule.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "loom/arith/analyzer.h"
#include "loom/arith/simplify.h"
#include "loom/ir/text.h"
#include "loom/tir/builder.h"
#include "loom/tir/functor.h"
#include "loom/tir/util.h"
#include "schedule_internal.h"

namespace loom::tir {

using arith::Analyzer;
using arith::simplify;
using namespace schedule_detail;  // NOLINT: the primitives' shared helpers (schedule_internal.h)

namespace {
// How much `e` changes when `v` grows by one (a constant for linear e).
std::optional<int64_t> step_along(const PrimExpr& e, const VarNode* v) {
  PrimExpr var = ref_of<PrimExpr>(v);
  return const_int(simplify(Sub(substitute(e, {{v, Add(var, IntImm(var.dtype(), 1))}}), e)));
}

// Symbolic bounds of an index over the loops inside the consumer: each
// inner variable at the end of its range that gives the least (greatest)
// value, for indices linear in them, or floordiv/floormod of such.
struct InnerLoop {
  const VarNode* var;
  PrimExpr lo, hi;
};
std::optional<std::pair<PrimExpr, PrimExpr>> index_range(const PrimExpr& e, const std::vector<InnerLoop>& inner,
                                                         const Analyzer& an) {
  if (const auto* d = e.as<FloorDivNode>()) {
    auto c = const_int(d->b);
    auto r = index_range(d->a, inner, an);
    if (!c || *c <= 0 || !r) return std::nullopt;
    return std::make_pair(simplify(FloorDiv(r->first, d->b), an), simplify(FloorDiv(r->second, d->b), an));
  }
  if (const auto* m = e.as<FloorModNode>()) {
    auto c = const_int(m->b);
    if (!c || *c <= 0) return std::nullopt;
    bool depends = false;
    for (const InnerLoop& l : inner) depends = depends || uses_var(Any(e), l.var);
    if (!depends) return std::make_pair(e, e);
    return std::make_pair(PrimExpr(IntImm(e.dtype(), 0)), PrimExpr(IntImm(e.dtype(), *c - 1)));
  }
  PrimExpr lo = e, hi = e;
  for (const InnerLoop& l : inner) {
    if (!uses_var(Any(e), l.var)) continue;
    auto step = step_along(e, l.var);
    if (!step) return std::nullopt;
    lo = substitute(lo, {{l.var, *step >= 0 ? l.lo : l.hi}});
    hi = substitute(hi, {{l.var, *step >= 0 ? l.hi : l.lo}});
  }
  return std::make_pair(simplify(lo, an), simplify(hi, an));
}

// The region of `buffer` (of rank `rank`) that one iteration of `loop`
// accesses: each index's least and greatest value over the loops inside
// `loop`, which are bound in `an` (it knows the loops around `loop`
// already); lo[0] undefined where `loop` does not access the buffer.
// Refused (as `primitive`) for an index it cannot bound, or an access
// through a view (`view`: why that is refused).
std::pair<std::vector<PrimExpr>, std::vector<PrimExpr>> touched_region(const ForNode& loop, const BufferNode* buffer,
                                                                       size_t rank, Analyzer& an,
                                                                       const std::string& primitive,
                                                                       const std::string& view) {
  std::vector<InnerLoop> inner;
  for (const ForNode* f : all_loops(loop.body)) {
    inner.push_back({f->loop_var.get(), f->min, simplify(Sub(Add(f->min, f->extent), IntImm(f->extent.dtype(), 1)))});
    an.bind_loop(*f);
  }
  std::vector<PrimExpr> lo(rank), hi(rank);
  for (const Access& a : accesses(loop.body)) {
    if (a.buffer->data.get() != buffer->data.get()) continue;
    if (a.buffer != buffer) refuse(primitive, "'" + buffer->name + "' is " + view);
    for (size_t d = 0; d < rank; ++d) {
      auto r = index_range(a.indices[d].cast<PrimExpr>(), inner, an);
      if (!r) {
        refuse(primitive, "cannot bound the index " + ir::to_text(a.indices[d]) + " of '" + buffer->name +
                              "' over the loops in %" + loop.loop_var->name);
      }
      lo[d] = lo[d].defined() ? PrimExpr(Min(lo[d], r->first)) : r->first;
      hi[d] = hi[d].defined() ? PrimExpr(Max(hi[d], r->second)) : r->second;
    }
  }
  return {lo, hi};
}

// `s` with every access of `buffer` going to `compact`, its indices taken
// from the region's start `lo` (and an allocation of `buffer` in it
// dropped): a buffer shrunk to the region one iteration uses.
Stmt rebased(const Stmt& s, const BufferNode* buffer, const Buffer& compact, const std::vector<PrimExpr>& lo,
             const Analyzer& an) {
  ExprRule load_rule;
  auto relative = [&](const Array& indices) {
    std::vector<PrimExpr> out;
    for (size_t d = 0; d < lo.size(); ++d)
      out.push_back(simplify(Sub(rewrite(indices[d].cast<PrimExpr>(), load_rule), lo[d]), an));
    return out;
  };
  load_rule = [&](const PrimExpr& e) -> std::optional<PrimExpr> {
    const auto* l = e.as<BufferLoadNode>();
    if (!l || l->buffer.get() != buffer) return std::nullopt;
    return BufferLoad(compact, relative(l->indices));
  };
  StmtRule store_rule = [&](const Stmt& st) -> std::optional<Stmt> {
    if (const auto* a = st.as<AllocateNode>(); a && a->buffer.get() == buffer)
      return rewrite(a->body, load_rule, store_rule);
    const auto* store = st.as<BufferStoreNode>();
    if (!store || store->buffer.get() != buffer) return std::nullopt;
    return BufferStore(compact, rewrite(store->value, load_rule), relative(store->indices));
  };
  return rewrite(s, load_rule, store_rule);
}

// `func` with the unit loops Simplify removed from the nest `nest_name`
// put back: where the nest stores at a constant 0 along an axis of extent
// 1 (cache_read's copy of a (1, 4, 64, 64) operand, whose loop over the
// first axis was dropped), a loop of extent 1 innermost of its perfect
// nest stores there instead, so that compute_at sees a store at distinct
// loop variables (without it, batch matmuls with a batch axis of 1 went
// untiled).
PrimFunc with_unit_loops(const PrimFunc& func, const std::string& nest_name) {
  const ForNode* inner = perfect_nest(find_loop(func, "compute_at", nest_name)).back();
  const BufferStoreNode* store = nullptr;
  pre_order(inner->body, [&](const Stmt& st) {
    if (!store) store = st.as<BufferStoreNode>();
    return !store;
  });
  if (!store) return func;
  std::vector<size_t> unit;
  for (size_t d = 0; d < store->indices.size(); ++d) {
    if (const_int(store->indices[d].cast<PrimExpr>()) == std::optional<int64_t>(0) &&
        const_int(store->buffer->shape[d].cast<PrimExpr>()) == std::optional<int64_t>(1))
      unit.push_back(d);
  }
  if (unit.empty()) return func;
  const BufferNode* buffer = store->buffer.get();
  std::vector<Var> vars = fresh_vars(func, "u", unit.size());
  bool every_store = true;
  StmtRule at_vars = [&](const Stmt& st) -> std::optional<Stmt> {
    const auto* w = st.as<BufferStoreNode>();
    if (!w || w->buffer.get() != buffer) return std::nullopt;
    std::vector<PrimExpr> indices;
    for (const Any& i : w->indices) indices.push_back(i.cast<PrimExpr>());
    for (size_t k = 0; k < unit.size(); ++k) {
      every_store = every_store && const_int(indices[unit[k]]) == std::optional<int64_t>(0);
      indices[unit[k]] = vars[k];
    }
    return BufferStore(w->buffer, w->value, indices);
  };
  Stmt body = rewrite(inner->body, nullptr, at_vars);
  if (!every_store) return func;  // stores elsewhere along those axes: left to compute_at's refusal
  for (size_t k = vars.size(); k-- > 0;)
    body = For(vars[k], IntImm(DataType::Int(64), 0), IntImm(DataType::Int(64), 1), ForKind::kSerial, body);
  Stmt nest =
      For(inner->loop_var, inner->min, inner->extent, inner->for_kind(), body, inner->thread, inner->annotations);
  return with_new_body(func, replace(func->body, inner, nest));
}

}  // namespace

void Schedule::compute_at(const std::string& nest_name, const std::string& loop_name) {
  Recorder record(*this, "compute_at", nest_name, loop_name);
  func_ = with_unit_loops(func_, nest_name);
  const ForNode* producer = find_loop(func_, "compute_at", nest_name);
  const ForNode* loop = find_loop(func_, "compute_at", loop_name);
  std::vector<Stmt> to_producer, to_loop;
  path_to(func_->body, producer, to_producer);
  path_to(func_->body, loop, to_loop);
  // The producer is an element of a sequence; `loop` is below a later one.
  size_t parent = to_producer.size() - 2;
  const auto* sequence = to_producer.size() >= 2 ? to_producer[parent].as<SeqStmtNode>() : nullptr;
  if (!sequence || to_loop.size() <= parent + 1 || to_loop[parent].get() != sequence) {
    refuse("compute_at", "%" + loop_name + " is not in a statement after the nest %" + nest_name + " in one sequence");
  }
  std::vector<Stmt> parts = elements(to_producer[parent]);
  size_t p_index = 0, l_index = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (parts[k].get() == producer) p_index = k;
    if (parts[k].get() == to_loop[parent + 1].get()) l_index = k;
  }
  if (l_index <= p_index) refuse("compute_at", "%" + loop_name + " comes before the nest %" + nest_name);
  // The producer: its stores write one buffer at its own loop variables.
  std::vector<const ForNode*> chain = perfect_nest(producer);
  const BufferNode* buffer = nullptr;
  std::vector<const VarNode*> store_vars;
  for (const Access& a : accesses(ref_of<Stmt>(producer))) {
    if (!a.store) continue;
    std::vector<const VarNode*> vars;
    for (const Any& i : a.indices) {
      const ForNode* match = nullptr;
      for (const ForNode* f : chain)
        if (i.object() == f->loop_var.get()) match = f;
      if (!match || std::find(vars.begin(), vars.end(), match->loop_var.get()) != vars.end()) {
        refuse("compute_at", "the nest %" + nest_name + " writes '" + a.buffer->name + "' at " +
                                 indices_text(a.indices) + ", not at distinct loop variables of its perfect nest");
      }
      vars.push_back(match->loop_var.get());
    }
    if ((buffer && buffer->data.get() != a.buffer->data.get()) || (!store_vars.empty() && store_vars != vars)) {
      refuse("compute_at", "the nest %" + nest_name + " writes more than one buffer, or one at different indices");
    }
    buffer = a.buffer;
    store_vars = vars;
  }
  if (!buffer) refuse("compute_at", "the nest %" + nest_name + " writes nothing");
  // Only `loop` reads the buffer; nothing from the producer to `loop`
  // writes what the producer reads.
  std::vector<Stmt> others;
  for (size_t k = 0; k < parts.size(); ++k)
    if (k != p_index) others.push_back(k == l_index ? replace(parts[k], loop, no_op()) : parts[k]);
  if (touches(seq(others), buffer)) {
    refuse("compute_at", "'" + buffer->name + "' is used outside %" + loop_name);
  }
  if (touches(loop->body, buffer, true)) refuse("compute_at", "%" + loop_name + " writes '" + buffer->name + "' too");
  for (const Access& a : accesses(ref_of<Stmt>(producer))) {
    if (a.store) continue;
    for (size_t k = p_index + 1; k <= l_index; ++k) {
      if (touches(parts[k], a.buffer, true)) {
        refuse("compute_at",
               "'" + a.buffer->name + "', which the nest %" + nest_name + " reads, is written before %" + loop_name);
      }
    }
  }
  // The region one iteration of `loop` reads, over the loops inside it.
  Analyzer an;
  std::vector<const ForNode*> outer;
  for (const Stmt& s : to_loop)
    if (const auto* f = s.as<ForNode>()) outer.push_back(f);
  for (const ForNode* f : outer) an.bind_loop(*f);
  size_t rank = store_vars.size();
  auto [lo, hi] =
      touched_region(*loop, buffer, rank, an, "compute_at", "read through a view; schedule before FlattenBuffer");
  if (!lo.empty() && !lo[0].defined()) refuse("compute_at", "%" + loop_name + " does not read '" + buffer->name + "'");
  // Under a parallel loop, or one bound to a thread axis, each iteration's
  // region must be its own: some dimension's region starts a * v + b with
  // its extent at most a.  A shared or local buffer is allocated in `loop`
  // (so one per iteration of the loops around it), except that a shared
  // one is one per block: the threads of a block would all fill the one
  // array.
  // The function's body with the producer gone from its sequence and
  // `loop` replaced by `new_loop`.
  auto without_producer = [&](const Stmt& new_loop) {
    std::vector<Stmt> rest;
    for (size_t k = 0; k < parts.size(); ++k) {
      if (k == p_index) continue;
      rest.push_back(k == l_index ? replace(parts[k], loop, new_loop) : parts[k]);
    }
    return replace(func_->body, to_producer[parent].get(), seq(rest));
  };
  bool scoped = buffer->scope == "shared" || buffer->scope == "local";
  for (const ForNode* f : outer) {
    if (buffer->scope == "shared" && f->for_kind() == ForKind::kThreadBinding &&
        f->thread.rfind("threadIdx.", 0) == 0) {
      refuse("compute_at", "%" + loop_name + " is inside the " + f->thread + " loop %" + f->loop_var->name +
                               ", whose threads would all fill the one shared '" + buffer->name +
                               "' of their block (compute_at into a loop outside the thread loops)");
    }
  }
  for (const ForNode* f : outer) {
    if (scoped || (f->for_kind() != ForKind::kParallel && f->for_kind() != ForKind::kThreadBinding)) continue;
    bool own = false;
    for (size_t d = 0; d < rank; ++d) {
      auto step = step_along(lo[d], f->loop_var.get());
      auto extent = const_int(simplify(Add(Sub(hi[d], lo[d]), IntImm(hi[d].dtype(), 1)), an));
      own = own || (step && extent && *step >= *extent && *extent > 0);
    }
    if (!own) {
      refuse("compute_at", "the regions of '" + buffer->name + "' that iterations of the " +
                               (f->for_kind() == ForKind::kParallel ? "parallel loop" : f->thread + " loop") + " %" +
                               f->loop_var->name + " read may overlap, so they would race to write them");
    }
  }
  if (scoped) {
    // A shared or local buffer holds the region only: its shape becomes
    // the region's extents (constants), every index is taken from the
    // region's start, the producer's loops run from 0 over the region (so
    // they can be bound to threads), guarded where the region passes their
    // range, and the allocation moves into `loop`.
    const Stmt* alloc_found = nullptr;
    pre_order(func_->body, [&](const Stmt& st) {
      if (const auto* a = st.as<AllocateNode>(); a && a->buffer.get() == buffer) alloc_found = &st;
      return !alloc_found;
    });
    if (!alloc_found)
      refuse("compute_at", "'" + buffer->name + "' is in the " + buffer->scope + " scope but not allocated");
    std::vector<PrimExpr> shape;
    for (size_t d = 0; d < rank; ++d) {
      PrimExpr extent = simplify(Add(Sub(hi[d], lo[d]), IntImm(hi[d].dtype(), 1)), an);
      if (auto c = const_int(extent); !c || *c <= 0) {
        refuse("compute_at", "the region of '" + buffer->name + "' that one iteration of %" + loop_name +
                                 " reads along axis " + std::to_string(d) + " (" + ir::to_text(Any(lo[d])) + " to " +
                                 ir::to_text(Any(hi[d])) + ") has no constant extent, which a " + buffer->scope +
                                 " buffer needs");
      }
      shape.push_back(extent);
    }
    Buffer compact(buffer->name, buffer->dtype, shape, buffer->scope);
    // The producer: loop v of axis d runs over [0, extent) at v + lo[d].
    std::unordered_map<const Object*, PrimExpr> shifted;
    PrimExpr in_range;
    for (size_t d = 0; d < rank; ++d) {
      const ForNode* f = nullptr;
      for (const ForNode* c : chain)
        if (c->loop_var.get() == store_vars[d]) f = c;
      PrimExpr at = Add(f->loop_var, Cast(f->loop_var->dtype, lo[d]));
      shifted[f->loop_var.get()] = at;
      PrimExpr cond = And(GE(at, f->min), LT(at, Add(f->min, f->extent)));
      in_range = in_range.defined() ? PrimExpr(And(in_range, cond)) : cond;
    }
    Stmt body = rebased(substitute(chain.back()->body, shifted), buffer, compact, lo, an);
    Stmt moved = IfThenElse(in_range, body);
    for (size_t k = chain.size(); k-- > 0;) {
      const ForNode* f = chain[k];
      PrimExpr min = f->min, extent = f->extent;
      for (size_t d = 0; d < rank; ++d) {
        if (f->loop_var.get() == store_vars[d]) {
          min = IntImm(f->loop_var->dtype, 0);
          extent = Cast(f->loop_var->dtype, shape[d]);
        }
      }
      moved = For(f->loop_var, simplify(min), simplify(extent), f->for_kind(), moved, f->thread, f->annotations);
    }
    moved = simplify(moved, an);  // drops the guard where the region is in range
    Stmt inside = Allocate(compact, seq({moved, rebased(loop->body, buffer, compact, lo, an)}));
    Stmt rebuilt = without_producer(with_kind_and_body(*loop, loop->for_kind(), inside));
    StmtRule drop_alloc = [&](const Stmt& st) -> std::optional<Stmt> {
      const auto* a = st.as<AllocateNode>();
      if (!a || a->buffer.get() != buffer) return std::nullopt;
      return rewrite(a->body, nullptr, drop_alloc);
    };
    func_ = with_new_body(func_, rewrite(rebuilt, nullptr, drop_alloc));
    return;
  }
  // The producer's loops cut to the region (and kept within their range).
  std::unordered_map<const Object*, std::pair<PrimExpr, PrimExpr>> cut;
  for (size_t d = 0; d < rank; ++d) cut[store_vars[d]] = {lo[d], hi[d]};
  Stmt moved = chain.back()->body;
  for (size_t k = chain.size(); k-- > 0;) {
    const ForNode* f = chain[k];
    PrimExpr min = f->min, extent = f->extent;
    if (auto it = cut.find(f->loop_var.get()); it != cut.end()) {
      DataType t = f->loop_var->dtype;
      PrimExpr end = Add(f->min, f->extent);
      PrimExpr from = Max(Cast(t, it->second.first), f->min);
      PrimExpr to = Min(Add(Cast(t, it->second.second), IntImm(t, 1)), end);
      min = simplify(from, an);
      extent = simplify(Sub(to, min), an);
    }
    moved = For(f->loop_var, min, extent, f->for_kind(), moved, f->thread, f->annotations);
  }
  moved = simplify(moved, an);  // a loop cut to one iteration goes
  func_ = with_new_body(func_, without_producer(with_kind_and_body(*loop, loop->for_kind(), seq({moved, loop->body}))));
}

void Schedule::allocate_at(const std::string& name, const std::string& loop_name) {
  Recorder record(*this, "allocate_at", name, loop_name);
  const ForNode* loop = find_loop(func_, "allocate_at", loop_name);
  const AllocateNode* alloc = nullptr;
  pre_order(func_->body, [&](const Stmt& st) {
    if (const auto* a = st.as<AllocateNode>(); a && a->buffer->name == name) alloc = a;
    return !alloc;
  });
  if (!alloc) refuse("allocate_at", "'" + name + "' is not an allocation of the function");
  const BufferNode* buffer = alloc->buffer.get();
  std::vector<Stmt> to_loop;
  path_to(func_->body, loop, to_loop);
  auto at_alloc = std::find_if(to_loop.begin(), to_loop.end(), [&](const Stmt& st) { return st.get() == alloc; });
  if (at_alloc == to_loop.end())
    refuse("allocate_at", "%" + loop_name + " is not inside the allocation of '" + name + "'");
  if (touches(replace(alloc->body, loop, no_op()), buffer)) {
    refuse("allocate_at", "'" + name + "' is used outside %" + loop_name);
  }
  // The region one iteration of `loop` touches, over the loops inside it.
  Analyzer an;
  std::vector<const ForNode*> enclosing;  // between the allocation and `loop`, `loop` included
  for (auto it = to_loop.begin(); it != to_loop.end(); ++it) {
    const auto* f = it->as<ForNode>();
    if (!f) continue;
    an.bind_loop(*f);
    if (it > at_alloc) enclosing.push_back(f);
  }
  size_t rank = buffer->shape.size();
  auto [lo, hi] = touched_region(*loop, buffer, rank, an, "allocate_at", "accessed through a view");
  if (rank == 0 || !lo[0].defined()) refuse("allocate_at", "%" + loop_name + " does not use '" + name + "'");
  std::vector<PrimExpr> shape;
  for (size_t d = 0; d < rank; ++d) {
    lo[d] = simplify(lo[d], an);
    PrimExpr extent = simplify(Add(Sub(hi[d], lo[d]), IntImm(hi[d].dtype(), 1)), an);
    if (auto c = const_int(extent); !c || *c <= 0) {
      refuse("allocate_at", "the region of '" + name + "' that one iteration of %" + loop_name +
                                " touches along axis " + std::to_string(d) + " (" + ir::to_text(Any(lo[d])) + " to " +
                                ir::to_text(Any(hi[d])) + ") has no constant extent");
    }
    shape.push_back(extent);
  }
  // No value may pass from one iteration of an enclosing loop to another:
  // each such loop moves some axis's region by at least its extent, on an
  // axis no other enclosing loop moves (a reduction's block loop around
  // the tiles, whose accumulators carry over, is refused).
  for (const ForNode* f : enclosing) {
    if (auto e = const_int(f->extent); e && *e == 1) continue;
    bool own = false;
    for (size_t d = 0; d < rank && !own; ++d) {
      auto step = step_along(lo[d], f->loop_var.get());
      auto extent = const_int(shape[d]);
      bool alone = true;
      for (const ForNode* g : enclosing) {
        auto ge = const_int(g->extent);
        if (g != f && !(ge && *ge == 1) && uses_var(Any(lo[d]), g->loop_var.get())) alone = false;
      }
      own = alone && step && *step >= *extent;
    }
    if (!own) {
      refuse("allocate_at", "iterations of %" + f->loop_var->name + " may touch the same elements of '" + name +
                                "', so a value could pass between them");
    }
  }
  Buffer compact(buffer->name, buffer->dtype, shape, buffer->scope);
  Stmt inside = Allocate(compact, rebased(loop->body, buffer, compact, lo, an));
  Stmt rebuilt = replace(func_->body, loop, with_kind_and_body(*loop, loop->for_kind(), inside));
  StmtRule drop_alloc = [&](const Stmt& st) -> std::optional<Stmt> {
    const auto* a = st.as<AllocateNode>();
    if (!a || a->buffer.get() != buffer) return std::nullopt;
    return rewrite(a->body, nullptr, drop_alloc);
  };
  func_ = with_new_body(func_, rewrite(rebuilt, nullptr, drop_alloc));
}

}  // namespace loom::tir
