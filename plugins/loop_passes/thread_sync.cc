// ThreadSync inserts tir.barrier() into device kernels where the threads of
// a block would otherwise race on a shared buffer (docs/devices.md,
// "Barriers").  It looks at the statements every thread of a block runs:
// the body of the blockIdx loops, through sequences, allocations, lets and
// serial loops that hold thread loops.  Each other statement there (a
// threadIdx nest, a store all threads make) is one step: a step that reads
// a shared buffer written by an earlier step, or writes one an earlier step
// read or wrote, since the last barrier, gets a barrier before it.  A
// serial loop whose body's first steps touch what its last steps left
// pending gets a barrier at the end of its body (the next iteration's fill
// of a tile waits until every thread has read the last one); one whose
// first steps race with the steps before it gets one before the loop.  Nothing is
// inserted inside a thread loop or an `if` (a barrier every thread of the
// block must reach), so races within one step are the schedule's to avoid;
// an existing barrier counts, so the pass is idempotent and leaves
// DefaultDeviceSchedule's kernels as they are.
#include "thread_sync.h"

#include <loom/tir/builder.h>
#include <loom/tir/functor.h>
#include <loom/transform/prim_pass.h>

#include <set>

namespace loom::loop {
using namespace tir;  // NOLINT: the prim IR reads best unqualified here

namespace {
Stmt barrier() { return Evaluate(Call(DataType::Int(32), "tir.barrier", {})); }

bool is_barrier(const Stmt& s) {
  const auto* e = s.as<EvaluateNode>();
  const auto* call = e ? e->value.as<CallNode>() : nullptr;
  return call && call->op == "tir.barrier";
}

bool is_block_loop(const ForNode* f) {
  return f->for_kind() == ForKind::kThreadBinding && f->thread.rfind("blockIdx.", 0) == 0;
}

// The shared buffers (by data variable) a statement reads and writes.
struct Touched {
  std::set<const Object*> reads, writes;
  bool empty() const { return reads.empty() && writes.empty(); }
  void clear() {
    reads.clear();
    writes.clear();
  }
  void add(const Touched& t) {
    reads.insert(t.reads.begin(), t.reads.end());
    writes.insert(t.writes.begin(), t.writes.end());
  }
  // Whether `later`, run after this without a barrier, could race with it.
  bool races(const Touched& later) const {
    for (const Object* b : later.writes)
      if (reads.count(b) || writes.count(b)) return true;
    for (const Object* b : later.reads)
      if (writes.count(b)) return true;
    return false;
  }
};

Touched touched(const Stmt& s) {
  Touched t;
  pre_order(
      s,
      [&](const Stmt& st) {
        if (const auto* store = st.as<BufferStoreNode>(); store && store->buffer->scope == "shared") {
          t.writes.insert(store->buffer->data.get());
        }
        return true;
      },
      [&](const PrimExpr& e) {
        if (const auto* load = e.as<BufferLoadNode>(); load && load->buffer->scope == "shared") {
          t.reads.insert(load->buffer->data.get());
        }
        return true;
      });
  return t;
}

bool holds_thread_loop(const Stmt& s) {
  bool found = false;
  pre_order(s, [&](const Stmt& st) {
    if (const auto* f = st.as<ForNode>(); f && f->for_kind() == ForKind::kThreadBinding) found = true;
    return !found;
  });
  return found;
}

// What the steps of `s` before its first barrier touch; whether a barrier
// ended the walk.
bool head(const Stmt& s, Touched& out) {
  if (is_barrier(s)) return true;
  if (const auto* q = s.as<SeqStmtNode>()) {
    for (const Any& a : q->seq)
      if (head(a.cast<Stmt>(), out)) return true;
    return false;
  }
  if (const auto* a = s.as<AllocateNode>()) return head(a->body, out);
  if (const auto* l = s.as<LetStmtNode>()) return head(l->body, out);
  out.add(touched(s));
  return false;
}

// `s` runs on every thread of a block; `pending`: what the steps since the
// last barrier touched.
Stmt block_level(const Stmt& s, Touched& pending) {
  if (is_barrier(s)) {
    pending.clear();
    return s;
  }
  if (const auto* q = s.as<SeqStmtNode>()) {
    std::vector<Stmt> out;
    for (const Any& a : q->seq) out.push_back(block_level(a.cast<Stmt>(), pending));
    return seq(out);
  }
  if (const auto* a = s.as<AllocateNode>()) return Allocate(a->buffer, block_level(a->body, pending));
  if (const auto* l = s.as<LetStmtNode>()) return LetStmt(l->var, l->value, block_level(l->body, pending));
  const auto* f = s.as<ForNode>();
  if (f && f->for_kind() == ForKind::kSerial && holds_thread_loop(f->body)) {
    // A race with the body's first steps: one barrier before the loop
    // rather than one in every iteration.
    Touched entry;
    head(f->body, entry);
    bool before = pending.races(entry);
    if (before) pending.clear();
    Touched inner = pending;
    Stmt body = block_level(f->body, inner);
    Touched first;
    head(body, first);
    if (inner.races(first)) {
      body = seq({body, barrier()});
      inner.clear();
    }
    pending.add(inner);  // the loop may run no iteration
    Stmt loop = For(f->loop_var, f->min, f->extent, f->for_kind(), body, f->thread, f->annotations);
    return before ? seq({barrier(), loop}) : loop;
  }
  Touched t = touched(s);
  if (pending.races(t)) {
    pending = t;
    return seq({barrier(), s});
  }
  pending.add(t);
  return s;
}

Stmt sync(const Stmt& body) {
  Rewriter::PreStmt rule = [&](const Stmt& st) -> std::optional<Stmt> {
    const auto* f = st.as<ForNode>();
    if (!f || !is_block_loop(f)) return std::nullopt;
    Stmt inner;
    if (const auto* g = f->body.as<ForNode>(); g && is_block_loop(g)) {
      inner = *rule(f->body);
    } else {
      Touched pending;
      inner = block_level(f->body, pending);
    }
    return For(f->loop_var, f->min, f->extent, f->for_kind(), inner, f->thread, f->annotations);
  };
  return Rewriter().pre_stmt(rule).run(body);
}
}  // namespace

transform::Pass ThreadSync() {
  transform::PassInfo info =
      transform::PassInfo::named("ThreadSync")
          .summary(
              "for a device target: a barrier between the steps of a block that write a shared buffer and the later "
              "steps that read or write it (and at the end of a serial loop whose next iteration would)")
          .preserves({"*"});
  return transform::prim_pass(
      info, [](const PrimFuncNode& f, const ir::IRModule&, const transform::PassContext&) { return sync(f.body); });
}

}  // namespace loom::loop
