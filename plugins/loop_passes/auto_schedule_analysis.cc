// The questions AutoSchedule's rules ask about a loop nest: its loops by
// name, its roots, its work, how far an access moves per step of a loop,
// which loads are strided, a tile body's reduction loops and accumulators,
// the vector lanes of a body and its one-store loops.  They change nothing.
#include "auto_schedule_rules.h"

#include <loom/arith/simplify.h>
#include <loom/support/stack.h>

#include <algorithm>
#include <functional>

namespace loom::loop::auto_schedule {

using arith::simplify;

namespace {

// A reference to the variable `v` as an expression.
PrimExpr ref_var(const VarNode* v) { return downcast<PrimExpr>(ObjectRef(ObjectPtr<Object>(const_cast<VarNode*>(v)))); }

}  // namespace

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
      offset =
          Add(Mul(offset, IntImm(DataType::Int(64), *extent)), Cast(DataType::Int(64), indices[k].cast<PrimExpr>()));
    }
  }
  PrimExpr next = substitute(offset, {{j, Add(ref_var(j), IntImm(j->dtype, 1))}});
  return const_int(simplify(Sub(next, offset)));
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

int64_t loads_not_along(const Stmt& body, const VarNode* j, const std::set<const Object*>& written) {
  int64_t count = 0;
  Visitor v;
  v.on<BufferLoadNode>([&](const BufferLoadNode* l) {
    if (!written.count(l->buffer->data.get()) && !uses_var(Any(l->indices), j)) ++count;
    v.visit_children(l);
  });
  v.visit(Any(body));
  return count;
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
      if (store && std::any_of(inside.begin(), inside.end(),
                               [&](const BufferStoreNode* r) { return r->buffer.get() == store->buffer.get(); }))
        out.push_back(store);
    }
  }
  return out;
}

// The lanes of a vector of the widest value `body` stores (32 bits at the
// least), at least one.
int StageScheduler::lanes_for(const Stmt& body) const {
  int bits = 32;
  Visitor v;
  v.on<BufferStoreNode>([&](const BufferStoreNode* st) { bits = std::max<int>(bits, st->buffer->dtype.bits); });
  v.visit(Any(body));
  return std::max(1, vector_bits_ / bits);
}

// The loops of a nest whose body is one store (no loop inside), in order;
// `reduction`: those whose store does not use their variable.
std::vector<std::string> StageScheduler::leaves(const std::string& root, bool reduction) {
  std::vector<std::string> out;
  Visitor v;
  v.on<ForNode>([&](const ForNode* f) {
    const auto* store = f->body.as<BufferStoreNode>();
    if (store && f->for_kind() == ForKind::kSerial && uses_var(Any(store->indices), f->loop_var.get()) != reduction) {
      out.push_back(f->loop_var->name);
    }
    v.visit_children(f);
  });
  v.visit(Any(find(s_, root)->body));
  return out;
}

}  // namespace loom::loop::auto_schedule
