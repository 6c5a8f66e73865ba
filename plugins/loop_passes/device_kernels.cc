// Cross-thread reductions and shared-memory tiles for the default device
// schedule (device_kernels.h; docs/devices.md, "The default device
// schedule").
#include "device_kernels.h"

#include <loom/arith/simplify.h>
#include <loom/object/structural.h>
#include <loom/tir/builder.h>
#include <loom/tir/functor.h>
#include <loom/tir/util.h>

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here

std::string FreshNames::operator()(const std::string& base) {
  std::string name = base;
  for (int k = 1; taken_.count(name); ++k) name = base + "_" + std::to_string(k);
  taken_.insert(name);
  return name;
}

namespace {

const DataType kI64 = DataType::Int(64);

PrimExpr c64(int64_t v) { return IntImm(kI64, v); }
PrimExpr as64(const PrimExpr& e) { return e.dtype() == kI64 ? e : PrimExpr(Cast(kI64, e)); }
PrimExpr ceil_div(const PrimExpr& n, int64_t d) { return FloorDiv(Add(as64(n), c64(d - 1)), c64(d)); }
Stmt barrier() { return Evaluate(Call(DataType::Int(32), "tir.barrier", {})); }
Stmt serial(const Var& v, const PrimExpr& extent, Stmt body) {
  return For(v, c64(0), extent, ForKind::kSerial, std::move(body));
}
Stmt bound(const Var& v, int64_t extent, const std::string& axis, Stmt body) {
  return For(v, c64(0), c64(extent), ForKind::kThreadBinding, std::move(body), axis);
}

// The largest power of two at most min(n, cap) (at least 1).
int64_t pow2_at_most(int64_t n, int64_t cap) {
  int64_t p = 1;
  while (p * 2 <= std::min(n, cap)) p *= 2;
  return p;
}

// The values of the variables of a row-major index space of `extents`
// at the flat index `flat`.
std::vector<PrimExpr> unflatten(const PrimExpr& flat, const std::vector<PrimExpr>& extents) {
  std::vector<PrimExpr> out(extents.size());
  PrimExpr rest = flat;
  for (size_t k = extents.size(); k-- > 0;) {
    out[k] = k == 0 ? rest : PrimExpr(FloorMod(rest, as64(extents[k])));
    if (k > 0) rest = FloorDiv(rest, as64(extents[k]));
  }
  return out;
}

PrimExpr product(const std::vector<PrimExpr>& extents) {
  PrimExpr p = c64(1);
  for (const PrimExpr& e : extents) p = Mul(p, as64(e));
  return arith::simplify(p);
}

// The loop variables of `loops` mapped to min + value.
std::unordered_map<const Object*, PrimExpr> at(const std::vector<const ForNode*>& loops,
                                               const std::vector<PrimExpr>& values) {
  std::unordered_map<const Object*, PrimExpr> with;
  for (size_t k = 0; k < loops.size(); ++k) {
    PrimExpr v =
        values[k].dtype() == loops[k]->loop_var->dtype ? values[k] : Cast(loops[k]->loop_var->dtype, values[k]);
    with[loops[k]->loop_var.get()] = Add(loops[k]->min, v);
  }
  return with;
}

std::vector<PrimExpr> extents_of(const std::vector<const ForNode*>& loops) {
  std::vector<PrimExpr> e;
  for (const ForNode* f : loops) e.push_back(f->extent);
  return e;
}

// The update at the bottom of the perfect nest from `top` that none of
// its loops index: a reduction over the whole nest.
struct Reduction {
  std::vector<const ForNode*> loops;
  const BufferStoreNode* store = nullptr;
  ReductionUpdate update;
};
std::optional<Reduction> reduction_nest(const ForNode* top) {
  Reduction r;
  r.loops = perfect_nest(top);
  r.store = r.loops.back()->body.as<BufferStoreNode>();
  if (!r.store) return std::nullopt;
  auto update = match_reduction_update(r.store);
  if (!update) return std::nullopt;
  for (const ForNode* f : r.loops) {
    if (f->for_kind() != ForKind::kSerial || uses_var(Any(r.store->indices), f->loop_var.get())) return std::nullopt;
    for (const ForNode* g : r.loops) {
      if (uses_var(Any(g->extent), f->loop_var.get())) return std::nullopt;  // a triangular nest
    }
  }
  r.update = *update;
  return r;
}

}  // namespace

bool writes_disjoint(const ForNode* loop) {
  std::unordered_set<const Object*> local;
  bool disjoint = true;
  // An index counts when it uses the variable and reads no memory: one
  // computed from a loaded value (a scatter's) may repeat across
  // iterations.
  auto direct = [&](const Any& index) {
    bool loads = false;
    pre_order(
        Evaluate(index.cast<PrimExpr>()), [](const Stmt&) { return true; },
        [&](const PrimExpr& e) {
          loads = loads || e.as<BufferLoadNode>() != nullptr;
          return !loads;
        });
    return !loads && uses_var(index, loop->loop_var.get());
  };
  pre_order(loop->body, [&](const Stmt& s) {
    if (const auto* a = s.as<AllocateNode>()) local.insert(a->buffer->data.get());
    if (const auto* store = s.as<BufferStoreNode>()) {
      if (!local.count(store->buffer->data.get()) &&
          std::none_of(store->indices.begin(), store->indices.end(), direct)) {
        disjoint = false;
      }
    }
    return disjoint;
  });
  return disjoint;
}

namespace {

bool writes_any(const Stmt& s, const std::unordered_set<const Object*>& buffers) {
  bool hit = false;
  pre_order(s, [&](const Stmt& x) {
    if (const auto* store = x.as<BufferStoreNode>()) hit = hit || buffers.count(store->buffer->data.get());
    return !hit;
  });
  return hit;
}

bool loads_memory(const Stmt& s) {
  bool loads = false;
  pre_order(
      s, [](const Stmt&) { return true; },
      [&](const PrimExpr& e) {
        loads = loads || e.as<BufferLoadNode>() || e.as<CallNode>();
        return !loads;
      });
  return loads;
}

// The rows transformation: statement by statement, on thread `t`.
class Rows {
 public:
  Rows(int64_t threads, FreshNames& names) : threads_(threads), names_(names), t_(names("tx"), kI64) {}

  std::optional<Stmt> run(const Stmt& body) {
    std::optional<Stmt> inner = stmts(body);
    if (!inner || !reduced_) return std::nullopt;
    Stmt kernel = bound(t_, threads_, "threadIdx.x", *inner);
    for (const Buffer& b : shared_) kernel = Allocate(b, kernel);
    return kernel;
  }

 private:
  std::optional<Stmt> stmts(const Stmt& s) {
    // The row's own allocations stay private to each thread, which all
    // write them alike.
    if (const auto* a = s.as<AllocateNode>()) {
      if (a->buffer->scope != "local") return std::nullopt;
      private_.insert(a->buffer->data.get());
      std::optional<Stmt> body = stmts(a->body);
      if (!body) return std::nullopt;
      return Stmt(Allocate(a->buffer, *body));
    }
    std::vector<Stmt> out;
    for (const Stmt& item : flatten_seq(s)) {
      if (item.as<AllocateNode>()) {
        std::optional<Stmt> inner = stmts(item);
        if (!inner) return std::nullopt;
        out.push_back(*inner);
      } else if (const auto* store = item.as<BufferStoreNode>()) {
        if (private_.count(store->buffer->data.get())) {
          out.push_back(item);
        } else {
          out.push_back(on_thread_zero(item));
          out.push_back(barrier());
        }
      } else if (const auto* loop = item.as<ForNode>()) {
        std::optional<Stmt> spread = this->loop(loop);
        if (!spread) return std::nullopt;
        out.push_back(*spread);
      } else if (item.as<EvaluateNode>() && !loads_memory(item)) {
        out.push_back(item);
      } else {
        return std::nullopt;
      }
    }
    return seq(out);
  }

  Stmt on_thread_zero(const Stmt& s) const { return IfThenElse(EQ(t_, c64(0)), s); }

  std::optional<Stmt> loop(const ForNode* f) {
    if (f->for_kind() != ForKind::kSerial) return std::nullopt;
    if (std::optional<Reduction> r = reduction_nest(f)) return reduce(*r);
    if (!writes_disjoint(f) || writes_any(f->body, private_)) return std::nullopt;
    // Iteration o * threads + t on thread t.
    Var o(names_(f->loop_var->name + "_o"), kI64);
    PrimExpr index = Add(Mul(o, c64(threads_)), t_);
    Stmt body = IfThenElse(LT(index, as64(f->extent)), substitute(f->body, at({f}, {index})));
    return seq({serial(o, ceil_div(f->extent, threads_), body), barrier()});
  }

  std::optional<Stmt> reduce(const Reduction& r) {
    DataType t = r.store->buffer->dtype;
    std::optional<PrimExpr> identity = reduce_identity(r.update.op, t);
    if (!identity || t.lanes != 1) return std::nullopt;
    PrimExpr extent = product(extents_of(r.loops));
    if (auto n = const_int(extent); !n || *n >= threads_ / 4) reduced_ = true;
    ReduceOp op = r.update.op;
    // Each thread's share, then the tree.
    Buffer part(names_(r.store->buffer->name + "_part"), t, {c64(1)}, "local");
    Buffer tree(names_(r.store->buffer->name + "_red"), t, {c64(threads_)}, "shared");
    shared_.push_back(tree);
    Var o(names_(r.loops[0]->loop_var->name + "_o"), kI64);
    PrimExpr index = Add(Mul(o, c64(threads_)), t_);
    PrimExpr term = substitute(r.update.term, at(r.loops, unflatten(index, extents_of(r.loops))));
    PrimExpr mine = BufferLoad(part, {c64(0)});
    std::vector<Stmt> steps;
    steps.push_back(Allocate(
        part, seq({BufferStore(part, *identity, {c64(0)}),
                   serial(o, ceil_div(extent, threads_),
                          IfThenElse(LT(index, extent), BufferStore(part, reduce_combine(op, mine, term), {c64(0)}))),
                   BufferStore(tree, mine, {PrimExpr(t_)})})));
    steps.push_back(barrier());
    for (int64_t half = threads_ / 2; half >= 1; half /= 2) {
      PrimExpr other = BufferLoad(tree, {Add(t_, c64(half))});
      steps.push_back(
          IfThenElse(LT(t_, c64(half)),
                     BufferStore(tree, reduce_combine(op, BufferLoad(tree, {PrimExpr(t_)}), other), {PrimExpr(t_)})));
      steps.push_back(barrier());
    }
    std::vector<PrimExpr> idx;
    for (const Any& i : r.store->indices) idx.push_back(i.cast<PrimExpr>());
    Stmt result = BufferStore(r.store->buffer,
                              reduce_combine(op, BufferLoad(r.store->buffer, idx), BufferLoad(tree, {c64(0)})), idx);
    if (private_.count(r.store->buffer->data.get())) {
      // Every thread reads the tree's root before the next reduction.
      steps.push_back(result);
    } else {
      steps.push_back(on_thread_zero(result));
    }
    steps.push_back(barrier());
    return seq(steps);
  }

  int64_t threads_;
  FreshNames& names_;
  Var t_;
  std::unordered_set<const Object*> private_;
  std::vector<Buffer> shared_;
  bool reduced_ = false;
};

}  // namespace

int64_t largest_reduction(const Stmt& row_body) {
  int64_t most = 0;
  pre_order(row_body, [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    if (!loop) return true;
    if (std::optional<Reduction> r = reduction_nest(loop)) {
      std::optional<int64_t> n = const_int(product(extents_of(r->loops)));
      most = std::max(most, n ? *n : std::numeric_limits<int64_t>::max());
      return false;
    }
    return true;
  });
  return most;
}

std::optional<Stmt> cross_thread_rows(const Stmt& row_body, int64_t threads, FreshNames& names) {
  threads = pow2_at_most(threads, threads);
  if (threads < 2) return std::nullopt;
  return Rows(threads, names).run(row_body);
}

// ---- tiles -------------------------------------------------------------------------------

namespace {

// The spatial loops `x` uses, as a set of loop nodes.
std::unordered_set<const ForNode*> loops_used(const PrimExpr& x, const std::vector<const ForNode*>& loops) {
  std::unordered_set<const ForNode*> used;
  for (const ForNode* f : loops) {
    if (uses_var(Any(x), f->loop_var.get())) used.insert(f);
  }
  return used;
}

int64_t const_product(const std::vector<const ForNode*>& loops) {
  int64_t p = 1;
  for (const ForNode* f : loops) p *= *const_int(f->extent);
  return p;
}

// Whether the last index of the load(s) in `x` varies with a loop of
// `group` (then the group is the tile's fast axis in shared memory, so
// neighbouring threads load neighbouring elements).
bool contiguous_in(const PrimExpr& x, const std::vector<const ForNode*>& group) {
  bool found = false;
  pre_order(
      Evaluate(x), [](const Stmt&) { return true; },
      [&](const PrimExpr& e) {
        const auto* load = e.as<BufferLoadNode>();
        if (load && !found && load->indices.size() > 0) {
          PrimExpr last = load->indices[load->indices.size() - 1].cast<PrimExpr>();
          for (const ForNode* f : group) found = found || uses_var(Any(last), f->loop_var.get());
        }
        return !found;
      });
  return found;
}

}  // namespace

std::optional<Stmt> tiled_contraction(const std::vector<const ForNode*>& spatial, int64_t threads, FreshNames& names) {
  // C[i] = init; reduction nest.
  if (spatial.empty()) return std::nullopt;
  std::vector<Stmt> body = flatten_seq(spatial.back()->body);
  if (body.size() != 2) return std::nullopt;
  const auto* init = body[0].as<BufferStoreNode>();
  const auto* top = body[1].as<ForNode>();
  if (!init || !top || loads_memory(body[0]) || !loops_used(init->value, spatial).empty()) return std::nullopt;
  std::optional<Reduction> r = reduction_nest(top);
  if (!r || r->update.op != ReduceOp::kAdd || r->store->buffer.get() != init->buffer.get() ||
      !same_expression(Any(r->store->indices), Any(init->indices))) {
    return std::nullopt;
  }
  const auto* mul = r->update.term.as<MulNode>();
  if (!mul || r->store->buffer->dtype.lanes != 1) return std::nullopt;
  // Constant extents; the output indexed by the spatial variables, each once.
  for (const ForNode* f : spatial) {
    if (!const_int(f->extent) || f->for_kind() != ForKind::kSerial) return std::nullopt;
  }
  for (const ForNode* f : r->loops) {
    if (!const_int(f->extent)) return std::nullopt;
  }
  std::unordered_set<const Object*> indexed;
  for (const Any& i : init->indices) {
    const auto* v = i.as_object_ref().as<VarNode>();
    if (!v || !indexed.insert(v).second) return std::nullopt;
  }
  for (const ForNode* f : spatial) {
    if (!indexed.count(f->loop_var.get())) return std::nullopt;
  }
  if (indexed.size() != spatial.size()) return std::nullopt;
  PrimExpr x = mul->a, y = mul->b;
  std::unordered_set<const ForNode*> in_x = loops_used(x, spatial), in_y = loops_used(y, spatial);
  std::vector<const ForNode*> M, N, Z;
  for (const ForNode* f : spatial) {
    bool a = in_x.count(f), b = in_y.count(f);
    (a && !b ? M : b && !a ? N : Z).push_back(f);
  }
  int64_t m_extent = const_product(M), n_extent = const_product(N), z_extent = const_product(Z);
  int64_t k_extent = const_product(r->loops);
  if (m_extent < 16 || n_extent < 16 || k_extent < 1 || threads < 64) return std::nullopt;

  // Threads ty x tx, each a register tile rm x rn of up to 8 x 8 (strided
  // by the threads, so neighbouring threads touch neighbouring elements),
  // a K chunk of kc.
  const int64_t side = threads >= 256 ? 16 : 8, kc = 16;
  const int64_t rm = pow2_at_most((m_extent + side - 1) / side, 8), rn = pow2_at_most((n_extent + side - 1) / side, 8);
  const int64_t tm = side * rm, tn = side * rn, block_threads = side * side;
  DataType t = r->store->buffer->dtype;
  Buffer as(names("A_shared"), x.dtype(), {c64(kc * tm)}, "shared");
  Buffer bs(names("B_shared"), y.dtype(), {c64(kc * tn)}, "shared");
  Buffer acc(names(r->store->buffer->name + "_acc"), t, {c64(rm * rn)}, "local");
  Var bz(names("bz"), kI64), by(names("by"), kI64), bx(names("bx"), kI64);
  Var ty(names("ty"), kI64), tx(names("tx"), kI64), ko(names("ko"), kI64);
  Var kk(names("kk"), kI64), i(names("ri"), kI64), j(names("rj"), kI64);
  PrimExpr tid = Add(Mul(ty, c64(side)), tx);
  std::vector<PrimExpr> z_at = unflatten(bz, extents_of(Z));

  // One operand's chunk into shared memory: element e of the tile is
  // (k, m) with the contiguous axis fastest.
  auto load = [&](const Buffer& tile, const PrimExpr& value, const std::vector<const ForNode*>& group, int64_t width,
                  const PrimExpr& block, int64_t extent, const std::string& base) {
    Var l(names(base), kI64);
    PrimExpr e = Add(Mul(l, c64(block_threads)), tid);
    bool group_fast = contiguous_in(value, group);
    PrimExpr k_in = group_fast ? PrimExpr(FloorDiv(e, c64(width))) : PrimExpr(FloorMod(e, c64(kc)));
    PrimExpr g_in = group_fast ? PrimExpr(FloorMod(e, c64(width))) : PrimExpr(FloorDiv(e, c64(kc)));
    PrimExpr k = Add(Mul(ko, c64(kc)), k_in), g = Add(Mul(block, c64(width)), g_in);
    auto with = at(group, unflatten(g, extents_of(group)));
    for (auto& [v, w] : at(r->loops, unflatten(k, extents_of(r->loops)))) with[v] = w;
    for (auto& [v, w] : at(Z, z_at)) with[v] = w;
    PrimExpr where = Add(Mul(k_in, c64(width)), g_in);
    Stmt fill =
        IfThenElse(And(LT(k, c64(k_extent)), LT(g, c64(extent))), BufferStore(tile, substitute(value, with), {where}),
                   BufferStore(tile, make_const(value.dtype(), 0), {where}));
    return serial(l, c64(kc * width / block_threads), fill);
  };
  PrimExpr a_at = BufferLoad(as, {Add(Mul(kk, c64(tm)), Add(Mul(i, c64(side)), ty))});
  PrimExpr b_at = BufferLoad(bs, {Add(Mul(kk, c64(tn)), Add(Mul(j, c64(side)), tx))});
  PrimExpr acc_at = BufferLoad(acc, {Add(Mul(i, c64(rn)), j)});
  Stmt accumulate =
      serial(kk, c64(kc),
             serial(i, c64(rm),
                    serial(j, c64(rn), BufferStore(acc, Add(acc_at, Mul(a_at, b_at)), {Add(Mul(i, c64(rn)), j)}))));
  Stmt chunk = seq({load(as, x, M, tm, by, m_extent, "la"), load(bs, y, N, tn, bx, n_extent, "lb"), barrier(),
                    accumulate, barrier()});
  // The result, where it is in range.
  Var i2(names("wi"), kI64), j2(names("wj"), kI64);
  PrimExpr m = Add(Mul(by, c64(tm)), Add(Mul(i2, c64(side)), ty)),
           n = Add(Mul(bx, c64(tn)), Add(Mul(j2, c64(side)), tx));
  auto out_at = at(M, unflatten(m, extents_of(M)));
  for (auto& [v, w] : at(N, unflatten(n, extents_of(N)))) out_at[v] = w;
  for (auto& [v, w] : at(Z, z_at)) out_at[v] = w;
  std::vector<PrimExpr> out_idx;
  for (const Any& idx : init->indices) out_idx.push_back(substitute(idx.cast<PrimExpr>(), out_at));
  Stmt write =
      serial(i2, c64(rm),
             serial(j2, c64(rn),
                    IfThenElse(And(LT(m, c64(m_extent)), LT(n, c64(n_extent))),
                               BufferStore(init->buffer, BufferLoad(acc, {Add(Mul(i2, c64(rn)), j2)}), out_idx))));
  Var i0(names("zi"), kI64);
  Stmt zero = serial(i0, c64(rm * rn), BufferStore(acc, init->value, {PrimExpr(i0)}));
  Stmt per_thread = Allocate(acc, seq({zero, serial(ko, c64((k_extent + kc - 1) / kc), chunk), write}));
  Stmt kernel = bound(ty, side, "threadIdx.y", bound(tx, side, "threadIdx.x", per_thread));
  kernel = Allocate(as, Allocate(bs, kernel));
  kernel = bound(bx, (n_extent + tn - 1) / tn, "blockIdx.x", kernel);
  kernel = bound(by, (m_extent + tm - 1) / tm, "blockIdx.y", kernel);
  return bound(bz, z_extent, "blockIdx.z", kernel);
}

}  // namespace loom::loop
