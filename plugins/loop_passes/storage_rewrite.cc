#include "storage_rewrite.h"

#include <unordered_map>

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

class StorageSharer {
 public:
  Stmt run(const Stmt& s) {
    return Rewriter().pre_stmt([this](const Stmt& st) -> std::optional<Stmt> {
      if (!st.as<AllocateNode>()) return std::nullopt;
      return share(st);
    }).run(s);
  }

 private:
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
    const auto* q = body.as<SeqStmtNode>();
    std::vector<Stmt> steps;
    if (q) {
      for (const Any& x : q->seq) steps.push_back(x.cast<Stmt>());
    } else {
      steps.push_back(body);
    }
    // Each flat, constant-size buffer's first and last step; the others keep
    // their own allocation.
    std::vector<Buffer> kept;
    std::vector<std::pair<int64_t, const BufferNode*>> order;
    std::unordered_map<const BufferNode*, std::pair<int64_t, int64_t>> live;
    for (const Buffer& b : buffers) {
      auto size = b->shape.size() == 1 && b->strides.size() == 0 ? const_int(b->shape[0].cast<PrimExpr>()) : std::nullopt;
      auto offset = b->elem_offset.defined() ? const_int(b->elem_offset) : std::optional<int64_t>(0);
      if (!size || !offset || *offset != 0) {
        kept.push_back(b);
        continue;
      }
      int64_t first = -1, last = -1;
      for (size_t k = 0; k < steps.size(); ++k) {
        if (!uses_var(Any(steps[k]), b->data.get())) continue;
        if (first < 0) first = static_cast<int64_t>(k);
        last = static_cast<int64_t>(k);
      }
      if (first < 0) continue;  // never used: no allocation at all
      live[b.get()] = {first, last};
      order.push_back({first, b.get()});
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
  transform::PassInfo info{"StorageRewrite",
                           "flat temporary buffers of one allocation chain whose live ranges (steps of the body) do "
                           "not overlap share one allocation; unused ones are dropped",
                           0, {}, {},
                           {"buffers_flat"}, {}, {"*"}};
  return transform::prim_pass(info, [](const tir::PrimFuncNode& f, const ir::IRModule&, const transform::PassContext&) {
    return StorageSharer().run(f.body);
  }, target::on_cpu_target);
}

}  // namespace loom::loop
