// AutoSchedule picks a schedule (loom/tir/schedule.h) for each prim function
// after FuseTIR and before FlattenBuffer: it needs the multi-dimensional
// buffers and the one-nest-per-operator form FuseTIR leaves.
//
//  1. Elementwise temporaries are inlined into the nests that read them,
//     unless a reader is a reduction (it would recompute them per term).
//  2. An elementwise nest that reads a reduction's result moves into the
//     reduction nest (the epilogue: bias, activation).
//  3. Each remaining nest:
//     - reductions over two or more spatial loops whose innermost loop can
//       be read contiguously (matmul, dense, batch matmul): register tiles
//       of ti rows by tj vectors (unrolled, the innermost loop vectorized)
//       with the reduction loops outside the tile.  The right operand, a
//       2-D parameter indexed [r, j] or [j, r], is packed into panels
//       (cache_read with layout (j // F, r, j % F), F the tile's width);
//       each panel is packed inside the parallel column-tile loop
//       (compute_at) right before the row tiles that use it, and each
//       tile runs its init, whole reduction and epilogue.  Without a
//       packed panel, init, reduction and epilogue become nests over the
//       whole output and long reductions are blocked so a block of the
//       right operand stays in L1;
//     - other reductions whose innermost reduction loop reads contiguously
//       (a dense with few columns, a row sum): partial sums per lane in
//       up to 4 independent vector accumulators (rfactor), then added;
//     - other nests: the innermost loop split by the vector width and
//       vectorized when its stores are contiguous, the outermost parallel.
// Every step is a schedule primitive, so a failed precondition only skips
// that step.  Only rfactor changes the order in which an output element
// accumulates; every other step leaves results bit-identical to the
// unscheduled function.
// Vector width: the target's (its kind's vector_bits trait; 128 bits
// without a target or a trait).
#include "auto_schedule.h"

#include <cstdio>
#include <memory>

#include "tuning.h"

#include <loom/arith/simplify.h>
#include <loom/graph/calls.h>
#include <loom/ir/text.h>
#include <loom/support/stack.h>
#include <loom/object/traversal.h>
#include <loom/target/target.h>
#include <loom/tir/functor.h>
#include <loom/tir/layout.h>
#include <loom/tir/schedule.h>
#include <loom/tir/util.h>
#include <loom/transform/prim_pass.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here
using arith::simplify;

namespace {

const ForNode* find(const Schedule& s, const std::string& name) {
  const ForNode* found = nullptr;
  Visitor v;
  v.on<ForNode>([&](const ForNode* f) {
    if (f->loop_var->name == name) found = f;
    v.visit_children(f);
  });
  v.visit(Any(s.func()->body));
  return found;
}

// The loops not inside another loop, in order.
void roots(const Stmt& s, std::vector<std::string>& out) {
  pre_order(s, [&](const Stmt& st) {
    const auto* f = st.as<ForNode>();
    if (f) out.push_back(f->loop_var->name);
    return !f;
  });
}


// Whether a statement contains a reduction: a store inside a loop whose
// variable its indices do not use.
bool has_reduction(const ForNode* top) {
  bool found = false;
  std::vector<const VarNode*> loops{top->loop_var.get()};
  std::function<void(const Stmt&)> walk = [&](const Stmt& body) {
    pre_order(body, [&](const Stmt& st) {
      if (const auto* f = st.as<ForNode>()) {
        loops.push_back(f->loop_var.get());
        with_stack([&] { walk(f->body); });  // one level per loop: deep nests (docs/reliability.md, "Depth")
        loops.pop_back();
        return false;
      }
      if (const auto* store = st.as<BufferStoreNode>()) {
        for (const VarNode* v : loops)
          if (!uses_var(Any(store->indices), v)) found = true;
      }
      return true;
    });
  };
  walk(top->body);
  return found;
}

// The work of a nest: each store counted once per iteration of the loops
// around it; nullopt when a loop's extent is not a constant.
std::optional<int64_t> work_of(const ForNode* top) {
  constexpr int64_t kMany = int64_t{1} << 40;  // saturates: more is as much
  int64_t total = 0;
  bool known = true;
  std::function<void(const ForNode*, int64_t)> loop = [&](const ForNode* f, int64_t times) {
    auto extent = const_int(f->extent);
    if (!extent) known = false;
    int64_t n = extent ? std::max<int64_t>(*extent, 1) : 1;
    times = times > kMany / n ? kMany : times * n;
    pre_order(f->body, [&](const Stmt& st) {
      if (const auto* inner = st.as<ForNode>()) {
        with_stack([&] { loop(inner, times); });  // one level per loop (docs/reliability.md, "Depth")
        return false;
      }
      if (st.as<BufferStoreNode>()) total = std::min(total + times, kMany);
      return true;
    });
  };
  loop(top, 1);
  if (!known) return std::nullopt;
  return total;
}

PrimExpr ref_var(const VarNode* v) { return downcast<PrimExpr>(ObjectRef(ObjectPtr<Object>(const_cast<VarNode*>(v)))); }

template <class F>
bool attempt(F&& f) {
  try {
    f();
    return true;
  } catch (const ScheduleError&) {
    return false;
  }
}

std::vector<std::string> allocated(const Schedule& s) {
  std::vector<std::string> out;
  Visitor v;
  v.on<AllocateNode>([&](const AllocateNode* a) {
    out.push_back(a->buffer->name);
    v.visit_children(a);
  });
  v.visit(Any(s.func()->body));
  return out;
}

// Whether any nest reading `buffer` has a reduction.
bool read_by_reduction(const Schedule& s, const std::string& buffer) {
  std::vector<std::string> nests;
  roots(s.func()->body, nests);
  for (const std::string& n : nests) {
    const ForNode* f = find(s, n);
    bool reads = false;
    Visitor v;
    v.on<BufferLoadNode>([&](const BufferLoadNode* l) {
      if (l->buffer->name == buffer) reads = true;
      v.visit_children(l);
    });
    v.visit(Any(f->body));
    if (reads && has_reduction(f)) return true;
  }
  return false;
}

// How far the element `indices` of `buffer` moves in memory per step of
// `j` when that is a constant (0: invariant, 1: contiguous): along the
// innermost index, or, where outer indices use j too (loops fused over
// several axes: [f // 7, f % 7]), along the row-major offset of a buffer
// of constant shape.
std::optional<int64_t> stride_along(const Buffer& buffer, const Array& indices, const VarNode* j) {
  if (indices.size() == 0) return std::nullopt;
  PrimExpr offset = indices[indices.size() - 1].cast<PrimExpr>();
  bool outer = false;
  for (size_t k = 0; k + 1 < indices.size(); ++k) outer = outer || uses_var(indices[k], j);
  if (outer) {
    if (buffer->shape.size() != indices.size()) return std::nullopt;
    offset = IntImm(DataType::Int(64), 0);
    for (size_t k = 0; k < indices.size(); ++k) {
      auto extent = const_int(buffer->shape[k].cast<PrimExpr>());
      if (!extent) return std::nullopt;
      offset = Add(Mul(offset, IntImm(DataType::Int(64), *extent)), Cast(DataType::Int(64), indices[k].cast<PrimExpr>()));
    }
  }
  PrimExpr next = substitute(offset, {{j, Add(ref_var(j), IntImm(j->dtype, 1))}});
  return const_int(simplify(Sub(next, offset)));
}
template <class Access>
std::optional<int64_t> stride_along(const Access* a, const VarNode* j) {
  return stride_along(a->buffer, a->indices, j);
}

// The accesses along j are contiguous, or invariant (a broadcast).
template <class Access>
bool contiguous_along(const Access* a, const VarNode* j) {
  std::optional<int64_t> step = stride_along(a, j);
  return step && (*step == 0 || *step == 1);
}

// Loads in `body` along `j` that are neither contiguous nor invariant.
std::vector<const BufferLoadNode*> strided_loads(const Stmt& body, const VarNode* j) {
  std::vector<const BufferLoadNode*> out;
  Visitor v;
  v.on<BufferLoadNode>([&](const BufferLoadNode* l) {
    if (uses_var(Any(l->indices), j) && !contiguous_along(l, j)) out.push_back(l);
    v.visit_children(l);
  });
  v.visit(Any(body));
  return out;
}

// An operand of a tile: a load with one index exactly v (a row or a
// column of the tile), leading batch indices that use no reduction loop
// (the loops inside the tile's body) nor i or j, and the rest indexed by
// the reduction only (or constants), at least one of them.  With v = j:
// the right operand of a matmul (B[r, j]), a dense weight W[j, r], a
// batched B[b, j, r], a channels-last convolution's weight W[co, kh, kw,
// ci]; with v = i: the left operand read transposed (A[r, i]).
struct Operand {
  const BufferLoadNode* load;
  size_t at;     // the index that is v
  size_t batch;  // leading batch indices
};

std::vector<Operand> operands_along(const Stmt& body, const VarNode* i, const VarNode* j, const VarNode* v) {
  std::vector<const VarNode*> reduction;
  pre_order(body, [&](const Stmt& st) {
    if (const auto* f = st.as<ForNode>()) reduction.push_back(f->loop_var.get());
    return true;
  });
  auto by_reduction = [&](const Any& e) {
    for (const VarNode* r : reduction)
      if (uses_var(e, r)) return true;
    return false;
  };
  std::vector<Operand> out;
  Visitor vis;
  vis.on<BufferLoadNode>([&](const BufferLoadNode* l) {
    vis.visit_children(l);
    for (const Operand& o : out)
      if (o.load->buffer.get() == l->buffer.get()) return;
    size_t rank = l->indices.size(), at = rank, batch = 0;
    bool reduced = false;
    for (size_t k = 0; k < rank; ++k) {
      const Any& e = l->indices[k];
      if (e.object() == v && at == rank) {
        at = k;
        continue;
      }
      if (uses_var(e, i) || uses_var(e, j)) return;
      if (by_reduction(e)) {
        reduced = true;
      } else if (!reduced && at == rank && !const_int(e.cast<PrimExpr>())) {
        batch = k + 1;  // leading: a batch index
      } else if (!const_int(e.cast<PrimExpr>())) {
        return;  // an outer loop's index among the reduction's (a convolution's input row)
      }
    }
    if (at < rank && reduced && batch <= at) out.push_back(Operand{l, at, batch});
  });
  vis.visit(Any(body));
  return out;
}

// The layout of an operand: its batch indices, v // c, its other indices
// in order, v % c -- panels of c values of v, each read along the
// reduction contiguously.  A copy (cache_read) whose panel is all of v
// (`extent` at most c) takes the layout without the split (batch, other
// indices, v): its v // c axis would have one value, which compute_at
// cannot move with the column tiles (a batched matmul 64 wide, attention
// times V, went unscheduled and ran 60 times slower).
Schedule::IndexMap panel_layout(int64_t c, const Operand& o, int64_t extent = 0) {
  bool whole = extent > 0 && extent <= c;
  return [c, at = o.at, batch = o.batch, whole](const std::vector<PrimExpr>& idx) {
    PrimExpr width = IntImm(DataType::Int(64), c);
    std::vector<PrimExpr> out(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(batch));
    if (!whole) out.push_back(FloorDiv(idx[at], width));
    for (size_t k = batch; k < idx.size(); ++k)
      if (k != at) out.push_back(idx[k]);
    out.push_back(whole ? idx[at] : FloorMod(idx[at], width));
    return out;
  };
}

// The loops of a tile's body (init; reduction loops; epilogue): its
// reduction nests.
std::vector<Stmt> reduction_loops(const Stmt& body) {
  std::vector<Stmt> out;
  if (const auto* seq = body.as<SeqStmtNode>()) {
    for (const Any& st : seq->seq)
      if (st.cast<Stmt>().as<ForNode>()) out.push_back(st.cast<Stmt>());
  }
  return out;
}

// The stores of a tile's body that accumulate: those in its reduction
// loops, and the init stores of the same buffers.  (The others are the
// epilogue's.)
std::vector<const BufferStoreNode*> accumulator_stores(const Stmt& body) {
  std::vector<const BufferStoreNode*> inside;
  for (const Stmt& r : reduction_loops(body))
    pre_order(r, [&](const Stmt& st) {
      if (const auto* store = st.as<BufferStoreNode>()) inside.push_back(store);
      return true;
    });
  std::vector<const BufferStoreNode*> out = inside;
  if (const auto* seq = body.as<SeqStmtNode>()) {
    for (const Any& st : seq->seq) {
      const auto* store = st.cast<Stmt>().as<BufferStoreNode>();
      if (store && std::any_of(inside.begin(), inside.end(), [&](const BufferStoreNode* r) { return r->buffer.get() == store->buffer.get(); }))
        out.push_back(store);
    }
  }
  return out;
}

class StageScheduler {
 public:
  // `constant`: the buffer parameters every caller passes a constant,
  // which may take a layout instead of being packed per call.
  // `min_work`: a nest with less work (work_of) runs on one thread.
  StageScheduler(Schedule& s, int vector_bits, std::set<std::string> constant, int64_t min_work, Decider& decider)
      : s_(s), decider_(decider), vector_bits_(vector_bits), min_work_(min_work), constant_(std::move(constant)) {}

  // The elementwise nest `producer` computed per iteration of the
  // already scheduled nest `consumer`'s outer loop (compute_at), when every
  // iteration reads a part of its buffer no other iteration reads, so that
  // nothing is computed twice: a depthwise convolution reads one channel
  // of its padded input per iteration, which is then written and read
  // while it is in cache instead of in a pass over the whole input (a
  // stride-2 depthwise 3x3 over 96x112x112 copied 5 MB before reading
  // it).  Its inner loop is vectorized.  False (schedule unchanged) when
  // it does not fit.
  bool localize(const std::string& producer, const std::string& consumer) {
    auto work = work_of(find(s_, producer));
    if (!work) return false;
    Schedule saved = s_;
    try {
      s_.compute_at(producer, consumer);
      const auto* body = find(s_, consumer)->body.as<SeqStmtNode>();
      const auto* moved = body ? body->seq[0].cast<Stmt>().as<ForNode>() : nullptr;
      auto part = moved ? work_of(moved) : std::nullopt;
      auto extent = const_int(find(s_, consumer)->extent);
      if (part && extent && *part * *extent <= *work) {
        vectorize_inner(moved->loop_var->name);
        return true;
      }
    } catch (const ScheduleError&) {
    }
    s_ = saved;
    return false;
  }

  void run(const std::string& root) {
    const ForNode* top = find(s_, root);
    parallel_ = decide("nest.parallel", worth_threads(top));
    if (has_reduction(top)) {
      if (!tile_reduction(root)) {
        vector_reductions(root);
        vectorize_leaves(root);
        parallel_outer(root);
      }
    } else {
      parallel_outer(vectorize_inner(root));
    }
  }

 private:
  // Whether a nest has work enough for a parallel region (work_of; a
  // symbolic extent counts as enough).
  bool worth_threads(const ForNode* nest) const {
    std::optional<int64_t> work = work_of(nest);
    return !work || *work >= min_work_;
  }

  // The operand `name` in `layout`: a constant parameter takes the layout
  // itself (packed once, at compile time; `relaid` set); any other, when
  // `copy` allows, is copied into it per call (cache_read), the copy's
  // nests appended to `copies`.  Returns the buffer the nest now reads
  // (`name` or the copy), "" when neither happened.
  std::string pack(const std::string& name, const Schedule::IndexMap& layout, bool copy,
                   std::vector<std::string>& copies, bool& relaid, const Schedule::IndexMap& copy_layout = nullptr) {
    if (constant_.count(name) && attempt([&] { s_.transform_layout(name, layout); })) {
      relaid = true;
      return name;
    }
    if (!copy) return "";
    std::vector<std::string> before, after;
    roots(s_.func()->body, before);
    std::string local;
    if (!attempt([&] { local = s_.cache_read(name, copy_layout ? copy_layout : layout); })) return "";
    roots(s_.func()->body, after);
    for (const std::string& n : after)
      if (std::find(before.begin(), before.end(), n) == before.end()) copies.push_back(n);
    return local;
  }

  int lanes_for(const Stmt& body) const {
    int bits = 32;
    Visitor v;
    v.on<BufferStoreNode>([&](const BufferStoreNode* st) { bits = std::max<int>(bits, st->buffer->dtype.bits); });
    v.visit(Any(body));
    return std::max(1, vector_bits_ / bits);
  }

  void parallel_outer(const std::string& root) {
    const ForNode* top = find(s_, root);
    std::vector<const ForNode*> chain = perfect_nest(top);
    std::string outer = root;
    // A short outer loop shares the work badly: fuse it with the next.
    if (chain.size() >= 2 && chain[0]->for_kind() == ForKind::kSerial && chain[1]->for_kind() == ForKind::kSerial) {
      auto extent = const_int(chain[0]->extent);
      if (extent && decide("parallel.fuse_outer", *extent < 16)) {
        std::string second = chain[1]->loop_var->name;
        attempt([&] { outer = s_.fuse(root, second); });
      }
    }
    const ForNode* f = find(s_, outer);
    auto extent = const_int(f->extent);
    if (extent && *extent < 2) return;
    if (parallel_) attempt([&] { s_.parallel(outer); });
  }

  // Returns the nest's root afterwards (the split's outer loop when the
  // root itself was split).
  std::string vectorize_inner(const std::string& root) {
    std::vector<const ForNode*> chain = perfect_nest(find(s_, root));
    const ForNode* inner = chain.back();
    if (has_loop(inner->body)) return root;
    int lanes = lanes_for(inner->body);
    auto extent = const_int(inner->extent);
    if (lanes < 2 || !extent || *extent < lanes) return root;
    const auto* store = inner->body.as<BufferStoreNode>();
    if (!store || !contiguous_along(store, inner->loop_var.get()) ||
        !uses_var(Any(store->indices), inner->loop_var.get())) {
      return root;
    }
    if (!strided_loads(inner->body, inner->loop_var.get()).empty()) return root;
    std::string name = inner->loop_var->name;
    std::vector<int64_t> unrolls{1};
    for (int64_t u : {2, 4})
      if (*extent >= u * lanes) unrolls.push_back(u);
    int64_t unroll = decider_.choose("elementwise.unroll", unrolls, 1);
    auto [outer, vec] = s_.split(name, lanes * unroll);
    if (unroll > 1) {
      auto [vo, vi] = s_.split(vec, lanes);
      s_.unroll(vo);
      s_.vectorize(vi);
    } else {
      s_.vectorize(vec);
    }
    return name == root ? outer : root;
  }

  // The loops of a nest whose body is one store (no loop inside), in order;
  // `reduction`: those whose store does not use their variable.
  std::vector<std::string> leaves(const std::string& root, bool reduction) {
    std::vector<std::string> out;
    Visitor v;
    v.on<ForNode>([&](const ForNode* f) {
      const auto* store = f->body.as<BufferStoreNode>();
      if (store && f->for_kind() == ForKind::kSerial &&
          uses_var(Any(store->indices), f->loop_var.get()) != reduction) {
        out.push_back(f->loop_var->name);
      }
      v.visit_children(f);
    });
    v.visit(Any(find(s_, root)->body));
    return out;
  }

  // Each reduction that is not tiled but whose innermost loop reads along
  // it contiguously (a row's sum, a row's max: softmax has both): its
  // partial results per lane (rfactor) in a few independent vector
  // accumulators.  This changes the order of a sum.
  void vector_reductions(const std::string& root) {
    for (const std::string& name : leaves(root, true)) vector_reduction(name);
  }

  // The other one-store loops of a nest that is not one perfect nest (a
  // row's steps: normalise after the sums), vectorized where their stores
  // and loads are contiguous.
  void vectorize_leaves(const std::string& root) {
    for (const std::string& name : leaves(root, false)) {
      if (name != root) vectorize_inner(name);
    }
  }

  void vector_reduction(const std::string& loop) {
    const ForNode* r = find(s_, loop);
    if (!r) return;
    int lanes = lanes_for(r->body);
    auto extent = const_int(r->extent);
    if (lanes < 2 || !extent || *extent < 2 * lanes) return;
    if (!strided_loads(r->body, r->loop_var.get()).empty()) return;
    std::vector<int64_t> counts{1};
    for (int64_t c : {2, 4, 8})
      if (*extent >= 2 * c * lanes) counts.push_back(c);
    int64_t chains = decider_.choose("reduction.chains", counts, *extent >= 8 * lanes ? 4 : *extent >= 4 * lanes ? 2 : 1);
    Schedule saved = s_;
    try {
      auto [ro, ri] = s_.split(r->loop_var->name, chains * lanes);
      Schedule::RFactor rf = s_.rfactor(ri);
      auto [rio, rii] = s_.split(ri, lanes);
      s_.unroll(rio);
      s_.vectorize(rii);
      auto [io, ii] = s_.split(rf.init, lanes);
      s_.vectorize(ii);
      // The chains combined as vectors first, then the lanes: chains - 1
      // vector steps and `lanes` scalar ones instead of chains x lanes
      // scalar ones (a 256-long row spent a quarter of its time there).
      if (chains > 1) {
        auto [fo, fi] = s_.split(rf.final, lanes);
        Schedule::RFactor lanes_rf = s_.rfactor(fi);
        s_.vectorize(fi);
        s_.unroll(fo);
        s_.vectorize(lanes_rf.init);
        s_.unroll(lanes_rf.final);
      } else {
        s_.unroll(rf.final);
      }
    } catch (const ScheduleError&) {
      s_ = saved;
    }
  }

  // The register-tiled reduction; false (schedule unchanged) when the nest
  // does not have the shape.
  bool tile_reduction(const std::string& root) {
    Schedule saved = s_;
    try {
      copies_.clear();
      moved_.clear();
      row_copies_.clear();
      if (tile(root)) {
        // The packing copies, now inside the column-tile loop.
        for (const std::string& c : moved_) vectorize_inner(c);
        // The left operand's copies, nests of their own.
        bool parallel = parallel_;
        for (const std::string& c : row_copies_) {
          parallel_ = worth_threads(find(s_, c));
          parallel_outer(vectorize_inner(c));
        }
        parallel_ = parallel;
        return true;
      }
    } catch (const ScheduleError&) {
    }
    s_ = saved;
    return false;
  }

  // The two innermost spatial loops fused when the inner one is short
  // (a few vectors or not whole ones) and every access moves contiguously
  // along the fused loop: a 1x1 convolution over a 7x7 map (NCHW) then has
  // a vector axis of 49 values instead of 7.  Returns the nest's root.
  std::string fuse_short_rows(const std::string& root) {
    std::vector<const ForNode*> chain = perfect_nest(find(s_, root));
    if (chain.size() < 3 || chain.back()->body.as<SeqStmtNode>() == nullptr) return root;
    const ForNode *h = chain[chain.size() - 2], *w = chain.back();
    int lanes = lanes_for(w->body);
    auto eh = const_int(h->extent), ew = const_int(w->extent);
    if (!eh || !ew || *eh < 2 || (*ew % lanes == 0 && *ew >= 4 * lanes)) return root;
    Schedule saved = s_;
    std::string hname = h->loop_var->name;
    std::string fused;
    if (!attempt([&] { fused = s_.fuse(hname, w->loop_var->name); })) return root;
    const ForNode* f = find(s_, fused);
    bool contiguous = strided_loads(f->body, f->loop_var.get()).empty();
    Visitor stores;
    stores.on<BufferStoreNode>([&](const BufferStoreNode* st) {
      contiguous = contiguous && (!uses_var(Any(st->indices), f->loop_var.get()) || stride_along(st, f->loop_var.get()) == 1);
      stores.visit_children(st);
    });
    stores.visit(Any(f->body));
    if (!contiguous) {
      s_ = saved;
      return root;
    }
    return hname == root ? fused : root;
  }

  bool tile(const std::string& nest) {
    std::string root = fuse_short_rows(nest);
    std::vector<const ForNode*> chain = perfect_nest(find(s_, root));
    // The spatial loops end where the body becomes a sequence (init, ...).
    size_t spatial = chain.size();
    if (chain.back()->body.as<SeqStmtNode>() == nullptr) return false;
    if (spatial < 2) return false;
    // j, the innermost spatial loop, is the vector axis: the accumulators
    // move along it contiguously.  (An epilogue may store along it with a
    // stride, lane by lane, once per element: channel_tile's output.)
    const ForNode* j = chain[spatial - 1];
    const VarNode* jv = j->loop_var.get();
    std::set<const Object*> written;
    Visitor stores;
    stores.on<BufferStoreNode>([&](const BufferStoreNode* st) {
      written.insert(st->buffer->data.get());
      stores.visit_children(st);
    });
    stores.visit(Any(j->body));
    for (const BufferStoreNode* st : accumulator_stores(j->body))
      if (stride_along(st, jv) != 1) return false;
    // i, the rows of the tile: the innermost other spatial loop that the
    // operand read along j does not use, so that one vector of it serves
    // every row (matmul's rows; a convolution's output channels, with the
    // input read along the width).  Without one the tile has one row.
    // (The nest's own accumulators, which it writes, do not count.)
    const ForNode* i = nullptr;
    for (size_t k = spatial - 1; k-- > 0 && !i;) {
      const VarNode* iv = chain[k]->loop_var.get();
      bool shared = true, used = false;
      Visitor loads;
      loads.on<BufferLoadNode>([&](const BufferLoadNode* l) {
        if (written.count(l->buffer->data.get())) return;
        bool by_i = uses_var(Any(l->indices), iv);
        used = used || by_i;
        if (by_i && uses_var(Any(l->indices), jv)) shared = false;
        loads.visit_children(l);
      });
      // The reduction's operands only: an epilogue (a residual added
      // elementwise) reads at the output's own indices.
      for (const Any& st : j->body.as<SeqStmtNode>()->seq)
        if (st.cast<Stmt>().as<ForNode>()) loads.visit(st);
      // A loop of extent 1 (a batch of one) gives no rows: look further out.
      auto extent = const_int(chain[k]->extent);
      if (shared && used && extent && *extent > 1) i = chain[k];
    }
    bool rows = i != nullptr;
    if (!i) i = chain[spatial - 2];
    int lanes = lanes_for(j->body);
    auto ei = const_int(i->extent), ej = const_int(j->extent);
    if (!ei || !ej) return false;
    while (lanes > 1 && lanes > *ej) lanes /= 2;  // a short row: narrower vectors (ends for any extent)
    if (lanes < 2) return false;
    std::string iname = i->loop_var->name, jname = j->loop_var->name;
    int64_t vectors = (*ej + lanes - 1) / lanes;
    // Without rows (a dense at batch 1) the tile is one row of one or two
    // vectors (four with 512-bit ones), which the test below leaves to
    // vector_reduction's partial sums where they fit.
    auto [ti, tj] = rows ? tile_shape(*ei, vectors)
                         : std::pair<int64_t, int64_t>{1, vectors % 4 == 0 && vector_bits_ >= 512 ? 4 : vectors % 2 == 0 ? 2 : 1};
    std::tie(ti, tj) = choose_tile(rows ? *ei : 1, vectors, ti, tj);
    // The right operand: a 2-D parameter indexed [r, j] or [j, r] is
    // packed into panels, (j // F, r, j % F) with F the tile's width, so
    // that the tile reads one contiguous panel (rows of B a power of two
    // apart would share a few L1 sets).  A [j, r] operand (dense's weight)
    // must be packed to be read along j at all; a [r, j] one is packed
    // when enough row tiles reuse each panel.
    int64_t panel = tj * lanes;
    // Each operand read along j; `strided` when j is not its last index.
    std::vector<Operand> operands = operands_along(j->body, i->loop_var.get(), jv, jv);
    // A matmul-like nest: whole vectors, and a tile large enough to pay
    // (otherwise vector_reduction's partial sums do better).  Other nests
    // (a convolution, a pool: every operand read along j is at least 3-D)
    // take a tail guard where the row is not whole vectors, and read along
    // j with a small constant stride (a pool's window).
    bool window = operands.empty();
    // vector_reduction's per-lane partial sums need an innermost reduction
    // loop that reads contiguously (a dense with few columns); where none
    // does (a depthwise convolution, channels last: its window is short
    // and strided) even a small tile is better.
    bool partial_sums_fit = false;
    pre_order(j->body, [&](const Stmt& st) {
      const auto* f = st.as<ForNode>();
      if (f && f->body.as<BufferStoreNode>())
        partial_sums_fit = partial_sums_fit || strided_loads(f->body, f->loop_var.get()).empty();
      return true;
    });
    if (window && !channel_mode_ && decide("conv.try_channel_tile", true)) {
      // This tile's rate by tile_shape's model, for vectors of `lanes` of
      // the full width, the row's last vector partly used, loads along j
      // with a stride (a wide load and a shuffle) at half speed.
      double rate = tile_rate(ti, tj) * lanes / lanes_for(j->body) * static_cast<double>(*ej) / static_cast<double>(vectors * lanes);
      if (!strided_loads(j->body, jv).empty()) rate /= 2;
      if (channel_tile(root, rate)) return true;
    }
    if (!window && (*ej % lanes != 0 || (ti * tj < 4 && partial_sums_fit))) return false;
    if (window) {
      for (const BufferLoadNode* l : strided_loads(j->body, jv)) {
        auto step = stride_along(l, jv);
        if (!step || *step < 0 || *step > 4) return false;
      }
    }
    if (rows && i != chain[spatial - 2]) s_.reorder({chain[spatial - 2]->loop_var->name, iname});
    std::set<std::string> panels;
    bool relaid = false;
    for (const Operand& o : operands) {
      // A constant operand takes the panel layout itself: the caller's
      // constant is packed once, at compile time.  Any other is copied
      // per call when it must be (strided) or enough row tiles share it
      // (and a panel is not the whole row, which it already is).
      bool strided = o.at + 1 != o.load->indices.size();
      std::string read = pack(o.load->buffer->name, panel_layout(panel, o),
                              strided || (panel < *ej && decide("matmul.pack", *ei >= 4 * ti)),
                              copies_, relaid, panel_layout(panel, o, *ej));
      if (!read.empty()) {
        panels.insert(read);
      } else if (strided) {
        return false;
      }
    }
    // A panel is read along j contiguously within a tile (j % F); the
    // reduction's other operands are contiguous or invariant along j (an
    // epilogue may gather: once per element).
    for (const Stmt& r : reduction_loops(find(s_, jname)->body))
      for (const BufferLoadNode* l : strided_loads(r, find(s_, jname)->loop_var.get()))
        if (!panels.count(l->buffer->name) && !window) return false;
    // The left operand read transposed, A[..., r, i] (matmul's
    // transpose_a): each step of the reduction would read the tile's ti
    // rows from a new cache line, a whole row of A apart.  It is packed
    // once per call into (..., i // ti, r, i % ti), so a tile reads A
    // along r contiguously.
    if (!window && rows && ti > 1) {
      const VarNode* iv = find(s_, iname)->loop_var.get();
      for (const Operand& o : operands_along(find(s_, jname)->body, iv, find(s_, jname)->loop_var.get(), iv)) {
        if (o.at + 1 != o.load->indices.size()) continue;  // A[..., i, r]: already along r
        pack(o.load->buffer->name, panel_layout(ti, o), true, row_copies_, relaid, panel_layout(ti, o, *ei));
      }
    }
    auto [io, ii] = s_.split(iname, ti);
    auto [jo, ji] = s_.split(jname, lanes);
    auto [joo, joi] = s_.split(jo, tj);
    // A window nest with more rows than columns (a convolution over a small
    // map with many channels: its weights outweigh its input) runs the row
    // tiles outside, so each row tile's weights stay in cache while every
    // column tile uses them.
    bool rows_outer = window && *ei > *ej;
    if (!copies_.empty() || relaid || window)
      return tile_panels(root, joo, io, ii, joi, ji, decide("tile.rows_outer", rows_outer));
    s_.reorder({io, joo, ii, joi, ji});
    // Without packed panels: init, reduction and epilogue become nests of
    // their own over the whole output, so the reduction can be blocked: a
    // block of the reduction loop (kb long) runs over every tile before the
    // next block, which keeps a kb x (tj vectors) panel of the right
    // operand in the L1 cache.
    std::vector<std::vector<std::string>> nests = s_.decompose_reduction(io);
    for (const auto& nest : nests) {
      const std::string &tio = nest[0], &tjo = nest[1], &tii = nest[2], &tji = nest[3], &tv = nest[4];
      std::vector<std::string> reduction = register_tile(tii, tji, tv);
      std::string outer_block;
      if (reduction.size() == 1) {
        auto extent = const_int(find(s_, reduction[0])->extent);
        int64_t kb = 0;
        for (int64_t candidate = 256; extent && *extent > 256 && candidate >= 64 && !kb; --candidate)
          if (*extent % candidate == 0) kb = candidate;
        std::vector<int64_t> blocks{0};
        for (int64_t b : {32, 64, 128, 256, 512})
          if (extent && *extent > b && *extent % b == 0) blocks.push_back(b);
        if (std::find(blocks.begin(), blocks.end(), kb) == blocks.end()) blocks.push_back(kb);
        kb = decider_.choose("matmul.k_block", blocks, kb);
        if (kb) {
          auto [ro, ri] = s_.split(reduction[0], kb);
          s_.reorder({ro, tjo, tio, ri, tii, tji, tv});
          outer_block = ro;
        }
      }
      if (!reduction.empty() && outer_block.empty()) {
        std::vector<std::string> order = reduction;
        for (const std::string& n : {tii, tji, tv}) order.push_back(n);
        s_.reorder(order);
      }
      std::string tiles = outer_block.empty() ? tio : tjo;
      std::string second = outer_block.empty() ? tjo : tio;
      attempt([&] { tiles = s_.fuse(tiles, second); });
      if (parallel_) attempt([&] { s_.parallel(tiles); });
    }
    return true;
  }

  // The tile's shape with the decider's say: tile.vectors among the
  // counts that divide `vectors`, then tile.rows among those that divide
  // `extent`, the accumulators and operands within the vector registers.
  // (ti, tj) is the rules' choice.
  std::pair<int64_t, int64_t> choose_tile(int64_t extent, int64_t vectors, int64_t ti, int64_t tj) {
    int64_t registers = vector_bits_ >= 512 ? 32 : 16;
    std::vector<int64_t> cols;
    for (int64_t c : {1, 2, 3, 4})
      if (vectors % c == 0 && 2 * c + 1 <= registers) cols.push_back(c);
    if (std::find(cols.begin(), cols.end(), tj) == cols.end()) cols.push_back(tj);
    int64_t chosen_tj = decider_.choose("tile.vectors", cols, tj);
    std::vector<int64_t> rows;
    for (int64_t r = 1; r <= 8; ++r)
      if (extent % r == 0 && r * chosen_tj + chosen_tj + 1 <= registers) rows.push_back(r);
    if (chosen_tj == tj && std::find(rows.begin(), rows.end(), ti) == rows.end()) rows.push_back(ti);
    int64_t preferred = std::find(rows.begin(), rows.end(), ti) != rows.end() ? ti : rows.back();
    return {decider_.choose("tile.rows", rows, preferred), chosen_tj};
  }

  // Multiply-adds per cycle of a ti x tj tile by tile_shape's model.
  static double tile_rate(int64_t ti, int64_t tj) {
    double fmas = static_cast<double>(ti * tj);
    return std::min({2.0, 2.0 * fmas / static_cast<double>(ti + tj), fmas / 5.0});
  }

  // A window nest (a convolution in NCHW) vectorizes along its output
  // row, which is poor where the row is short or strided: over a 7x7 map
  // 4-lane vectors and a tail, with stride 2 a wide load and a shuffle per
  // vector.  The alternative: an outer spatial loop c (the output
  // channels) as the vector axis, where a constant operand is read along
  // c (the weight, W[c, ci, kh, kw]) and every other load of the
  // reduction is invariant along c (the input).  The accumulators, which
  // the function allocates, are laid out with c last, c moves innermost,
  // and the nest is tiled like a channels-last convolution: pixels x
  // channel vectors, the weight in panels at compile time, the epilogue
  // storing its output lane by lane (a scatter, once per element).  Taken
  // when the model gives it fewer cycles per output element than the
  // current tile at `rate`: the reduction's multiply-adds at each tile's
  // rate, plus the epilogue's stores, a vector per `lanes` elements for
  // the row tile and a store per element for the scatter.  A short
  // reduction pays the scatter more often (a 1x1 convolution with 24 input
  // channels over a 56x56 map: 7.5 % of MobileNetV2's time as a channel
  // tile, 5.0 % as a row tile), and on a tie the row tile stays; false
  // (schedule unchanged) otherwise.
  bool channel_tile(const std::string& root, double rate) {
    std::vector<const ForNode*> chain = perfect_nest(find(s_, root));
    size_t spatial = chain.size();
    const Stmt& body = chain.back()->body;
    std::vector<const BufferStoreNode*> accumulators = accumulator_stores(body);
    if (accumulators.empty()) return false;
    std::set<std::string> allocations;
    for (const std::string& a : allocated(s_)) allocations.insert(a);
    std::set<std::string> written;
    for (const BufferStoreNode* st : accumulators) written.insert(st->buffer->name);
    // The reduction's loads of what it does not write (its operands).
    std::vector<const BufferLoadNode*> loads;
    for (const Stmt& r : reduction_loops(body))
      pre_order(r, [&](const Stmt&) { return true; }, [&](const PrimExpr& e) {
        const auto* l = e.as<BufferLoadNode>();
        if (l && !written.count(l->buffer->name)) loads.push_back(l);
        return true;
      });
    int lanes = lanes_for(body);
    double reduction = 0;  // multiply-adds per output element
    for (const Stmt& r : reduction_loops(body)) {
      double n = 1;
      for (const ForNode* f : perfect_nest(r.as<ForNode>())) n *= static_cast<double>(const_int(f->extent).value_or(1));
      reduction += n;
    }
    auto cycles = [&](double tile_rate, double epilogue) { return reduction / (lanes * tile_rate) + epilogue; };
    for (size_t k = spatial - 1; k-- > 0;) {
      const VarNode* cv = chain[k]->loop_var.get();
      auto ec = const_int(chain[k]->extent);
      if (!ec || *ec % lanes != 0) continue;
      bool fits = true;
      // The accumulators: allocated, indexed by c exactly once.
      std::vector<std::pair<std::string, size_t>> relayout;
      for (const BufferStoreNode* st : accumulators) {
        size_t at = st->indices.size(), uses = 0;
        for (size_t m = 0; m < st->indices.size(); ++m) {
          if (st->indices[m].object() == cv) at = m;
          if (uses_var(st->indices[m], cv)) ++uses;
        }
        fits = fits && allocations.count(st->buffer->name) && at < st->indices.size() && uses == 1;
        if (fits && std::find_if(relayout.begin(), relayout.end(), [&](const auto& r) { return r.first == st->buffer->name; }) == relayout.end())
          relayout.emplace_back(st->buffer->name, at);
      }
      if (!fits) continue;
      // A constant operand along c; every other load of the reduction
      // invariant along c, and one of them gives the rows.
      bool constant = false;
      std::vector<Operand> operands;
      for (const Stmt& r : reduction_loops(body))
        for (const Operand& o : operands_along(r, cv, cv, cv)) {
          operands.push_back(o);
          constant = constant || constant_.count(o.load->buffer->name);
        }
      if (!constant) continue;
      const ForNode* rows = nullptr;
      for (size_t m = spatial; m-- > 0 && !rows;) {
        auto extent = const_int(chain[m]->extent);
        if (m == k || !extent || *extent < 2) continue;
        for (const BufferLoadNode* l : loads)
          if (uses_var(Any(l->indices), chain[m]->loop_var.get())) rows = chain[m];
      }
      for (const BufferLoadNode* l : loads) {
        bool operand = std::any_of(operands.begin(), operands.end(), [&](const Operand& o) { return o.load->buffer.get() == l->buffer.get(); });
        if (!operand && uses_var(Any(l->indices), cv)) fits = false;
      }
      if (!fits || !rows) continue;
      auto [ti, tj] = tile_shape(*const_int(rows->extent), *ec / lanes);
      if (cycles(tile_rate(ti, tj), 1.0) >= cycles(rate, 1.0 / lanes) - 1e-9) continue;
      Schedule saved = s_;
      try {
        for (const auto& [name, at] : relayout) {
          s_.transform_layout(name, [at = at](const std::vector<PrimExpr>& v) {
            std::vector<PrimExpr> out;
            for (size_t m = 0; m < v.size(); ++m)
              if (m != at) out.push_back(v[m]);
            out.push_back(v[at]);
            return out;
          });
        }
        std::vector<std::string> order;
        for (size_t m = k + 1; m < spatial; ++m) order.push_back(chain[m]->loop_var->name);
        order.push_back(chain[k]->loop_var->name);
        s_.reorder(order);
        channel_mode_ = true;
        bool done = tile(root);
        channel_mode_ = false;
        if (done) return true;
      } catch (const ScheduleError&) {
        channel_mode_ = false;
      }
      s_ = saved;
    }
    return false;
  }

  // The register tile, ti rows by tj vectors, for `extent` rows and
  // `vectors` vectors (ti and tj divide them).  Its accumulators, tj
  // vectors of the right operand and a broadcast of the left fit the
  // vector registers (16; 32 with 512-bit vectors), and of those shapes
  // it is the one with the most multiply-adds per cycle by a simple model
  // of the core: at most 2 per cycle, at most 2 loads per cycle (a tile
  // step loads ti + tj values for ti x tj multiply-adds), and each
  // accumulator's chain waits a multiply-add's latency, 5 cycles, per
  // step (so a tile needs about 10 accumulators to keep both units
  // busy).  Ties go to the larger tile, then to fewer loads per step, then
  // to more rows.  A 1024-wide matmul gets 6 x 2 (12 accumulators), a
  // 7-pixel row of a channels-last convolution 7 x 1, a 14-pixel row
  // 2 x 4, 8 rows of 8 vectors 4 x 2.
  std::pair<int64_t, int64_t> tile_shape(int64_t extent, int64_t vectors) const {
    int64_t registers = vector_bits_ >= 512 ? 32 : 16;
    std::pair<int64_t, int64_t> best{1, 1};
    double best_rate = 0;
    for (int64_t tj : {1, 2, 3, 4}) {
      if (vectors % tj != 0) continue;
      for (int64_t ti : {1, 2, 3, 4, 5, 6, 7, 8}) {
        if (extent % ti != 0 || ti * tj + tj + 1 > registers) continue;
        double rate = tile_rate(ti, tj);
        int64_t size = ti * tj, best_size = best.first * best.second;
        int64_t loads = ti + tj, best_loads = best.first + best.second;
        bool tie = rate > best_rate - 1e-9;
        if (rate > best_rate + 1e-9 || (tie && size > best_size) ||
            (tie && size == best_size && (loads < best_loads || (loads == best_loads && ti > best.first)))) {
          best = {ti, tj};
          best_rate = rate;
        }
      }
    }
    return best;
  }

  // The tile's loops (rows, vectors, lanes) unrolled, unrolled and
  // vectorized; returns the reduction loops below the lanes, if any,
  // outermost first.
  std::vector<std::string> register_tile(const std::string& rows, const std::string& vectors, const std::string& lanes) {
    const ForNode* last = find(s_, lanes);
    std::vector<std::string> reduction;
    if (has_loop(last->body))
      for (const ForNode* r : perfect_nest(last))
        if (r != last) reduction.push_back(r->loop_var->name);
    s_.unroll(rows);
    s_.unroll(vectors);
    s_.vectorize(lanes);
    return reduction;
  }

  // With packed panels, or for a window nest (no panels): for each column
  // tile its panels, if any, are packed, then every row tile runs its
  // init, the whole reduction (over the panels while they are in cache)
  // and its epilogue.
  bool tile_panels(const std::string& root, const std::string& joo, const std::string& io, const std::string& ii,
                   const std::string& joi, const std::string& ji, bool rows_outer) {
    if (rows_outer) {
      s_.reorder({io, joo, ii, joi, ji});
    } else {
      s_.reorder({joo, io, ii, joi, ji});
    }
    if (channel_mode_) {
      // Each panel of weights (a column tile) serves every row of the
      // output while it is in cache: the column tiles go outside the
      // spatial loops above the tile's rows (those longer than 1).
      std::vector<std::string> order{joo};
      for (const ForNode* f : perfect_nest(find(s_, root))) {
        if (f->loop_var->name == joo) break;
        auto extent = const_int(f->extent);
        if (!extent || *extent > 1) order.push_back(f->loop_var->name);
      }
      s_.reorder(order);
    }
    for (const auto& nest : s_.decompose_reduction(ii)) {
      const std::string &tii = nest[0], &tji = nest[1], &tv = nest[2];
      std::vector<std::string> order = register_tile(tii, tji, tv);
      if (order.empty()) continue;
      for (const std::string& n : {tii, tji, tv}) order.push_back(n);
      s_.reorder(order);
    }
    for (const std::string& c : copies_) {
      s_.compute_at(c, joo);
      // The copy is now the first statement of the column tile's body.
      const auto* body = find(s_, joo)->body.as<SeqStmtNode>();
      const auto* first = body ? body->seq[0].cast<Stmt>().as<ForNode>() : nullptr;
      if (first) moved_.push_back(first->loop_var->name);
    }
    // The column tiles in parallel where they are the nest's outer loop;
    // below other loops (a convolution's batch and rows), those.
    if (find(s_, root)) {
      parallel_outer(root);
    } else if (parallel_) {
      // One column tile (a panel as wide as the output): the row tiles in
      // parallel instead, sharing the panel.
      auto extent = const_int(find(s_, joo)->extent);
      if (!(extent && *extent == 1 && !rows_outer && attempt([&] { s_.parallel(io); })))
        attempt([&] { s_.parallel(joo); });
    }
    return true;
  }

  // A yes/no decision (docs/tuning.md, "Search space").
  bool decide(const std::string& name, bool preferred) { return decider_.choose(name, {0, 1}, preferred ? 1 : 0) != 0; }

  Schedule& s_;
  Decider& decider_;
  int vector_bits_;
  bool channel_mode_ = false;  // tiling the nest channel_tile reordered
  int64_t min_work_;
  bool parallel_ = true;  // the nest being scheduled has work enough for threads
  std::set<std::string> constant_;
  std::vector<std::string> copies_;  // the roots of the packing copies tile() made
  std::vector<std::string> row_copies_;  // the roots of the left operand's copies
  std::vector<std::string> moved_;   // their roots once moved into the column-tile loop
};

// The most temporaries AutoSchedule tries to inline in one function.
constexpr size_t kMaxInlined = 64;

// The vector width of the target function `name` is built for (its kind's
// trait), 128 bits without a target.
int vector_bits_of(const ir::IRModule& module, const std::string& name) {
  target::Target t = target::function_target(module, name);
  return static_cast<int>(t.defined() ? target::vector_bits(t) : 128);
}

}  // namespace

int64_t Decider::choose(const std::string&, const std::vector<int64_t>&, int64_t preferred) { return preferred; }

Schedule schedule_with(const PrimFunc& f, int bits, const std::set<std::string>& constant, int64_t min_work,
                       Decider& decider) {
  Schedule s(f);
  // The vector width: the target's, or half of it from 256 bits up.
  if (bits >= 256) bits = static_cast<int>(decider.choose("vector.bits", {bits, bits / 2}, bits));
  // Each inlining walks the function: the first kMaxInlined temporaries
  // are tried, so the pass stays linear in a function with very many
  // (docs/passes.md, "AutoSchedule"; docs/reliability.md, "Cost").
  std::vector<std::string> temporaries = allocated(s);
  if (temporaries.size() > kMaxInlined) temporaries.resize(kMaxInlined);
  for (const std::string& b : temporaries)
    if (!read_by_reduction(s, b)) attempt([&] { s.compute_inline(b); });
  temporaries = allocated(s);
  if (temporaries.size() > kMaxInlined) temporaries.resize(kMaxInlined);
  for (const std::string& b : temporaries) attempt([&] { s.reverse_compute_inline(b); });
  std::vector<std::string> nests;
  roots(s.func()->body, nests);
  StageScheduler stages(s, bits, constant, min_work, decider);
  for (size_t k = 0; k < nests.size(); ++k) {
    // An elementwise nest right before a reduction (a convolution's padded
    // input) is scheduled after it, so that it can move into the
    // reduction's outer loop when each iteration reads its own part.
    bool before_reduction = k + 1 < nests.size() && !has_reduction(find(s, nests[k])) &&
                            has_reduction(find(s, nests[k + 1]));
    if (!before_reduction) {
      stages.run(nests[k]);
      continue;
    }
    std::vector<std::string> before;
    roots(s.func()->body, before);
    stages.run(nests[k + 1]);
    std::vector<std::string> after;
    roots(s.func()->body, after);
    std::string consumer = after.size() == before.size() ? after[k + 1] : "";
    if (consumer.empty() || !stages.localize(nests[k], consumer)) stages.run(nests[k]);
    ++k;
  }
  return s;
}

PrimFunc finish_schedule(const Schedule& s, const PrimFunc& f) {
  Stmt body = simplify(s.func()->body);
  if (s.func().same_as(f) && body.same_as(f->body)) return f;
  return with_body(*s.func().get(), body);
}

namespace {
PrimFunc schedule(const PrimFunc& f, int bits, const std::set<std::string>& constant, int64_t min_work) {
  Decider rules;
  return finish_schedule(schedule_with(f, bits, constant, min_work, rules), f);
}

// The fastest record of @name's task in the database that replays, in the
// task's form with the function's attributes and "scheduled" naming the
// record; undefined where none does.  A record that does not apply (the
// function changed, a step's precondition fails, it lays out an input
// that is not a constant here) is a warning and the next one is tried.
PrimFunc tuned(const TuningDatabase& database, const ir::IRModule& module, const std::string& name, const PrimFunc& f,
               const std::string& cpu, const std::set<size_t>& constant) {
  std::string hash;
  PrimFunc task = canonical_task(f, &hash);
  target::Target t = target::function_target(module, name);
  for (const TuningRecord* r : database.best(hash, target_key(t.defined() ? Any(t) : Any()), cpu)) {
    try {
      PrimFunc done = finish_schedule(Schedule::replay(task, r->trace), task);
      // A layout only for inputs every caller passes a constant (the task
      // may have been tuned where they were).
      for (const auto& [input, layout] : param_layouts(*done.get())) {
        if (!constant.count(static_cast<size_t>(std::stoul(input))))
          throw Error("it lays out input " + input + " (" + layout + "), which a caller of @" + name +
                      " passes as a variable, not a constant");
      }
      std::map<std::string, Any> attrs = f->attrs.get() ? f->attrs->items : std::map<std::string, Any>{};
      if (done->attrs.get())
        for (const auto& [k, v] : done->attrs->items) attrs[k] = v;  // param_layouts
      attrs[kScheduledAttr] = Any("tuning database " + database.path() + ":" + std::to_string(r->line));
      return PrimFunc(std::vector<Any>(done->params.begin(), done->params.end()), done->body, done->ret, Map(attrs));
    } catch (const Error& e) {
      std::fprintf(stderr, "loom: warning: tuning database %s:%d: the record of task %s does not apply to @%s (%s); "
                           "it is skipped\n", database.path().c_str(), r->line, hash.c_str(), name.c_str(), e.what());
    }
  }
  return PrimFunc();
}
}  // namespace

transform::Pass AutoSchedule() {
  transform::PassInfo info{
      "AutoSchedule",
      "a schedule for each prim function from its shape: elementwise temporaries inlined, epilogues moved into "
      "reductions, matmul-like reductions register-tiled (constant weights packed at compile time), inner loops "
      "vectorized, outer loops parallel",
      2,
      {},
      {{"parallel_min_work", "int", Any(int64_t{32768}),
        "a loop nest with fewer stores (each counted once per iteration of the loops around it) runs on one thread: "
        "a parallel region costs a few microseconds",
        0, std::nullopt}},
                           {}, {}, {"types_inferred", "ops_lowered", "fused", "intrinsics_lowered"}};
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext& context) {
    int64_t min_work = context.get_config("AutoSchedule.parallel_min_work").as_int();
    std::map<std::string, std::set<size_t>> constant = graph::constant_inputs(module);
    std::set<std::string> relaid;  // functions that gave an input a layout
    std::string database_path = context.get_config("tuning.database").cast<std::string>();
    std::shared_ptr<const TuningDatabase> database;
    std::string cpu;
    if (!database_path.empty()) {
      database = TuningDatabase::open(database_path);
      cpu = target::detect_cpu();
    }
    std::map<std::string, Any> changed =
        transform::rewrite_prim_funcs(module, [&](const std::string& name, const PrimFunc& f) {
          // A function scheduled already (by hand, or a tuned one) stays.
          if (f->attrs.get() && f->attrs->items.count(kScheduledAttr)) return f;
          PrimFunc after;
          if (database) after = tuned(*database, module, name, f, cpu, constant[name]);
          if (after.defined()) {
            if (param_layouts(*after.get()) != param_layouts(*f.get())) relaid.insert(name);
            return after;
          }
          std::set<std::string> constant_buffers;
          std::vector<Buffer> params = f.buffer_params();
          for (size_t k : constant[name])
            if (k < params.size()) constant_buffers.insert(params[k]->name);
          after = schedule(f, vector_bits_of(module, name), constant_buffers, min_work);
          if (param_layouts(*after.get()) != param_layouts(*f.get())) relaid.insert(name);
          return after;
        }, target::on_cpu_target);
    return graph::relayout_constant_inputs(module.with_functions(changed), relaid);
  });
}

}  // namespace loom::loop
