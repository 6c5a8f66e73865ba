#include "storage_rewrite.h"

#include <unordered_map>

#include <loom/object/traversal.h>
#include <loom/target/target.h>
#include <loom/tir/functor.h>
#include <loom/tir/util.h>
#include <loom/transform/prim_pass.h>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here

namespace {

// Loads and stores of the mapped buffers go to their replacements.
Stmt replace_buffers(const Stmt& s, const std::unordered_map<const BufferNode*, Buffer>& with) {
  auto indices = [](const Array& list) {
    std::vector<PrimExpr> out;
    for (const Any& i : list) out.push_back(i.cast<PrimExpr>());
    return out;
  };
  return Rewriter()
      .post_expr([&](const PrimExpr& e) -> PrimExpr {
        const auto* l = e.as<BufferLoadNode>();
        auto found = l ? with.find(l->buffer.get()) : with.end();
        return found == with.end() ? e : PrimExpr(BufferLoad(found->second, indices(l->indices)));
      })
      .post_stmt([&](const Stmt& st) -> Stmt {
        const auto* store = st.as<BufferStoreNode>();
        auto found = store ? with.find(store->buffer.get()) : with.end();
        return found == with.end() ? st : Stmt(BufferStore(found->second, store->value, indices(store->indices)));
      })
      .run(s);
}

struct Slot {
  DataType dtype;
  std::string scope;
  int64_t size = 0;
  int64_t last_use = -1;
  std::vector<const BufferNode*> members;
  Buffer buffer;
};

// The steps of a chain's body (its statements, or the body as one step).
std::vector<Stmt> steps_of(const Stmt& body) {
  std::vector<Stmt> steps;
  if (const auto* q = body.as<SeqStmtNode>()) {
    for (const Any& x : q->seq) steps.push_back(x.cast<Stmt>());
  } else {
    steps.push_back(body);
  }
  return steps;
}

// Where each allocated buffer is used: for every chain of allocations (by
// its first Allocate node) and each of its buffers (by data variable), the
// first and last step of the chain's body that uses it. One walk of the
// whole body, so that nested chains cost their size, not their depth times
// it (each chain scanning the chains inside it was quadratic).
class LiveRanges {
 public:
  using Ranges = std::unordered_map<const VarNode*, std::pair<int64_t, int64_t>>;

  explicit LiveRanges(const Stmt& body) : v_(/*memoize=*/false) {
    v_.on<AllocateNode>([this](const AllocateNode* a) { chain(a); });
    v_.on<VarNode>([this](const VarNode* var) {
      auto found = owner_.find(var);
      if (found == owner_.end()) return;
      Frame* frame = found->second;
      auto [range, inserted] = frame->ranges.try_emplace(var, frame->step, frame->step);
      if (!inserted) range->second.second = frame->step;
    });
    v_.visit(Any(body));
  }

  // The ranges of the chain that starts at `head`; a buffer never used has none.
  const Ranges& of(const AllocateNode* head) const {
    static const Ranges none;
    auto found = chains_.find(head);
    return found == chains_.end() ? none : found->second;
  }

 private:
  struct Frame {
    int64_t step = 0;
    Ranges ranges;
  };

  void chain(const AllocateNode* head) {
    Frame frame;
    std::vector<const VarNode*> vars;
    Stmt body = head->body;
    for (const AllocateNode* a = head; a; a = a->body.as<AllocateNode>()) {
      for (const Any& extent : a->buffer->shape) v_.visit(extent);  // the enclosing chain's
      vars.push_back(a->buffer->data.get());
      body = a->body;
    }
    for (const VarNode* var : vars) owner_[var] = &frame;
    std::vector<Stmt> steps = steps_of(body);
    for (size_t k = 0; k < steps.size(); ++k) {
      frame.step = static_cast<int64_t>(k);
      v_.visit(Any(steps[k]));
    }
    for (const VarNode* var : vars) owner_.erase(var);
    chains_[head] = std::move(frame.ranges);
  }

  loom::Visitor v_;
  std::unordered_map<const VarNode*, Frame*> owner_;  // an allocated buffer's data -> its chain
  std::unordered_map<const AllocateNode*, Ranges> chains_;
};

class StorageSharer {
 public:
  explicit StorageSharer(const Stmt& body) : live_ranges_(body) {}

  Stmt run(const Stmt& s) {
    return Rewriter()
        .pre_stmt([this](const Stmt& st) -> std::optional<Stmt> {
          if (!st.as<AllocateNode>()) return std::nullopt;
          return share(st);
        })
        .run(s);
  }

 private:
  LiveRanges live_ranges_;

  // A chain of allocations around one body.
  Stmt share(const Stmt& s) {
    std::vector<Buffer> buffers;
    std::unordered_map<const BufferNode*, Buffer> by_node;
    Stmt body = s;
    while (const auto* a = body.as<AllocateNode>()) {
      buffers.push_back(a->buffer);
      by_node.emplace(a->buffer.get(), a->buffer);
      body = a->body;
    }
    Stmt original = body;
    body = run(body);
    const LiveRanges::Ranges& ranges = live_ranges_.of(s.as<AllocateNode>());
    // Each flat, constant-size buffer's first and last step; the others keep
    // their own allocation.
    std::vector<Buffer> kept;
    std::vector<std::pair<int64_t, const BufferNode*>> order;
    std::unordered_map<const BufferNode*, std::pair<int64_t, int64_t>> live;
    for (const Buffer& b : buffers) {
      auto size =
          b->shape.size() == 1 && b->strides.size() == 0 ? const_int(b->shape[0].cast<PrimExpr>()) : std::nullopt;
      auto offset = b->elem_offset.defined() ? const_int(b->elem_offset) : std::optional<int64_t>(0);
      if (!size || !offset || *offset != 0) {
        kept.push_back(b);
        continue;
      }
      auto range = ranges.find(b->data.get());
      if (range == ranges.end()) continue;  // never used: no allocation at all
      live[b.get()] = range->second;
      order.push_back({range->second.first, b.get()});
    }
    std::stable_sort(order.begin(), order.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<Slot> slots;
    for (const auto& [first, b] : order) {
      int64_t size = *const_int(b->shape[0].cast<PrimExpr>());
      Slot* slot = nullptr;
      for (Slot& candidate : slots) {
        if (candidate.dtype == b->dtype && candidate.scope == b->scope && candidate.last_use < first) {
          slot = &candidate;
          break;
        }
      }
      if (!slot) {
        Slot fresh;
        fresh.dtype = b->dtype;
        fresh.scope = b->scope;
        slots.push_back(fresh);
        slot = &slots.back();
      }
      slot->size = std::max(slot->size, size);
      slot->last_use = live[b].second;
      slot->members.push_back(b);
    }
    std::unordered_map<const BufferNode*, Buffer> with;
    for (Slot& slot : slots) {
      if (slot.members.size() == 1) {  // its own buffer, as it was
        slot.buffer = by_node.at(slot.members[0]);
        continue;
      }
      std::string name;
      for (const BufferNode* m : slot.members) name += (name.empty() ? "" : "_") + m->name;
      slot.buffer = Buffer(name, slot.dtype, {PrimExpr(int64_t{slot.size})}, slot.scope);
      for (const BufferNode* m : slot.members) with[m] = slot.buffer;
    }
    if (with.empty() && live.size() + kept.size() == buffers.size()) {  // nothing shared or dropped
      if (body.same_as(original)) return s;
      for (size_t k = buffers.size(); k-- > 0;) body = Allocate(buffers[k], body);
      return body;
    }
    Stmt out = with.empty() ? body : replace_buffers(body, with);
    for (size_t k = slots.size(); k-- > 0;) out = Allocate(slots[k].buffer, out);
    for (size_t k = kept.size(); k-- > 0;) out = Allocate(kept[k], out);
    return out;
  }
};
}  // namespace

transform::Pass StorageRewrite() {
  transform::PassInfo info = transform::PassInfo::named("StorageRewrite")
                                 .summary(
                                     "flat temporary buffers of one allocation chain whose live ranges (steps of the "
                                     "body) do not overlap share one allocation; unused ones are dropped")
                                 .needs({"buffers_flat"})
                                 .preserves({"*"});
  return transform::prim_pass(
      info,
      [](const tir::PrimFuncNode& f, const ir::IRModule&, const transform::PassContext&) {
        return StorageSharer(f.body).run(f.body);
      },
      target::on_cpu_target);
}

}  // namespace loom::loop
