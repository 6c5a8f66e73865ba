// Schedule primitives (loom/schedule/schedule.h): the Schedule's core, its
// construction (unique loop and buffer names), its loops, and the helpers
// the primitives share (schedule_internal.h).  The primitives live beside
// it by family: schedule_loops.cc, schedule_inline.cc, schedule_cache.cc,
// schedule_compute_at.cc, schedule_reduction.cc; the trace and its replay
// in schedule_trace.cc.
#include "loom/schedule/schedule.h"

#include <map>
#include <optional>
#include <set>

#include "loom/ir/text.h"
#include "loom/object/traversal.h"
#include "loom/support/strings.h"
#include "loom/tir/builder.h"
#include "loom/tir/functor.h"
#include "loom/tir/util.h"
#include "schedule_internal.h"

namespace loom::tir {

namespace schedule_detail {

[[noreturn]] void refuse(const std::string& primitive, const std::string& why) {
  LOOM_THROW(ScheduleError) << "schedule." << primitive << ": " << why;
}

std::vector<const ForNode*> all_loops(const Stmt& body) {
  std::vector<const ForNode*> out;
  pre_order(body, [&](const Stmt& s) {
    if (const auto* f = s.as<ForNode>()) out.push_back(f);
    return true;
  });
  return out;
}

PrimExpr rewrite(const PrimExpr& e, const ExprRule& fe) { return Rewriter().pre_expr(fe).run(e); }
Stmt rewrite(const Stmt& s, const ExprRule& fe, const StmtRule& fs) {
  return Rewriter().pre_expr(fe).pre_stmt(fs).run(s);
}
Stmt replace(const Stmt& root, const Object* target, const Stmt& with) {
  return rewrite(root, nullptr, [&](const Stmt& s) -> std::optional<Stmt> {
    if (s.get() == target) return with;
    return std::nullopt;
  });
}

std::vector<Access> accesses(const Stmt& s) {
  std::vector<Access> out;
  Visitor v(false);
  v.on<BufferLoadNode>([&](const BufferLoadNode* l) {
    out.push_back({l->buffer.get(), l->indices, false});
    v.visit_children(l);
  });
  v.on<BufferStoreNode>([&](const BufferStoreNode* st) {
    out.push_back({st->buffer.get(), st->indices, true});
    v.visit_children(st);
  });
  v.visit(Any(s));
  return out;
}

// "[%i, %j + 1]"
std::string indices_text(const Array& indices) {
  std::string out = "[";
  for (size_t k = 0; k < indices.size(); ++k) out += (k ? ", " : "") + ir::to_text(indices[k]);
  return out + "]";
}

std::vector<Stmt> elements(const Stmt& s) {
  if (const auto* seq_node = s.as<SeqStmtNode>()) {
    std::vector<Stmt> out;
    for (const Any& a : seq_node->seq) out.push_back(a.cast<Stmt>());
    return out;
  }
  return {s};
}

const ForNode* find_loop(const PrimFunc& func, const std::string& primitive, const std::string& name) {
  std::vector<std::string> names;
  for (const ForNode* f : all_loops(func->body)) {
    if (f->loop_var->name == name) return f;
    names.push_back(f->loop_var->name);
  }
  refuse(primitive, "no loop %" + name + did_you_mean(name, names));
}

// A name not used by any variable of the function.
std::string fresh_name(const PrimFunc& func, const std::string& base, const std::set<std::string>& taken) {
  std::set<std::string> used = taken;
  Visitor v;
  v.on<VarNode>([&](const VarNode* var) { used.insert(var->name); });
  v.on<BufferNode>([&](const BufferNode* b) {  // buffers are named apart from their data
    used.insert(b->name);
    v.visit_children(b);
  });
  v.visit(Any(func));
  if (!used.count(base)) return base;
  for (int k = 1;; ++k)
    if (!used.count(base + "_" + std::to_string(k))) return base + "_" + std::to_string(k);
}

std::vector<Var> fresh_vars(const PrimFunc& func, const std::string& prefix, size_t n) {
  std::vector<Var> out;
  std::set<std::string> taken;
  for (size_t k = 0; k < n; ++k) {
    out.emplace_back(fresh_name(func, prefix + std::to_string(k), taken), DataType::Int(64));
    taken.insert(out.back()->name);
  }
  return out;
}

PrimFunc with_new_body(const PrimFunc& func, const Stmt& body) { return with_body(*func.get(), body); }

// `cond` around the innermost body of the perfect nest `s` (as far down as
// the loops' bounds do not use `vars`).
Stmt push_guard(const Stmt& s, const PrimExpr& cond, const std::vector<const VarNode*>& vars) {
  if (const auto* f = s.as<ForNode>()) {
    bool depends = false;
    for (const VarNode* v : vars) depends = depends || uses_var(Any(f->min), v) || uses_var(Any(f->extent), v);
    if (!depends) return with_kind_and_body(*f, f->for_kind(), push_guard(f->body, cond, vars));
  }
  return IfThenElse(cond, s);
}

bool touches(const Stmt& s, const BufferNode* buffer, bool stores_only) {
  for (const Access& a : accesses(s))
    if (a.buffer->data.get() == buffer->data.get() && (a.store || !stores_only)) return true;
  return false;
}

std::vector<PrimExpr> exprs_of(const Array& indices) {
  std::vector<PrimExpr> out;
  for (const Any& i : indices) out.push_back(i.cast<PrimExpr>());
  return out;
}

// The statements from `root` down to `target` (both included); empty when
// `target` is not below `root`.
bool path_to(const Stmt& root, const Object* target, std::vector<Stmt>& path) {
  path.push_back(root);
  if (root.get() == target) return true;
  bool found = false;
  map_children(
      root, [](const PrimExpr& e) { return e; },
      [&](const Stmt& c) {
        if (!found) found = path_to(c, target, path);
        return c;
      });
  if (!found) path.pop_back();
  return found;
}

}  // namespace schedule_detail

using namespace schedule_detail;  // NOLINT: the primitives' shared helpers (schedule_internal.h)

Schedule::Schedule(PrimFunc func) : func_(std::move(func)) {
  // Loops are named by their variables: a name used twice (the printer
  // shows %i0 and %i0_1) becomes the unique name the printer shows.
  std::set<std::string> names;
  for (;;) {
    const ForNode* twice = nullptr;
    names.clear();
    for (const ForNode* f : all_loops(func_->body))
      if (!names.insert(f->loop_var->name).second && !twice) twice = f;
    if (!twice) break;
    Var renamed(fresh_name(func_, twice->loop_var->name), twice->loop_var->dtype);
    Stmt body = substitute(twice->body, {{twice->loop_var.get(), renamed}});
    Stmt loop = For(renamed, twice->min, twice->extent, twice->for_kind(), body, twice->thread, twice->annotations);
    func_ = with_new_body(func_, replace(func_->body, twice, loop));
  }
  unique_buffer_names();
}

// Buffers are named too (cache_read, compute_inline): two buffers of
// different memory with one name (builders and fusion make them: the
// lifted weights of a fused group are all "c") would let a primitive act
// on the wrong one.  The later gets a fresh name; views of one memory (one
// data variable) keep sharing theirs.
void Schedule::unique_buffer_names() {
  std::vector<const BufferNode*> buffers;
  std::set<const Object*> seen;
  Visitor v;
  v.on<BufferNode>([&](const BufferNode* b) {
    if (seen.insert(b).second) buffers.push_back(b);
  });
  v.visit(Any(func_));
  std::map<std::string, const Object*> memory_of;       // name -> its data variable
  std::map<const Object*, std::string> renamed_memory;  // data variable -> new name
  std::set<std::string> taken;
  for (const BufferNode* b : buffers) taken.insert(b->name);
  for (const BufferNode* b : buffers) {
    const Object* memory = b->data.get();
    auto [owner, fresh] = memory_of.emplace(b->name, memory);
    if (fresh || owner->second == memory || renamed_memory.count(memory)) continue;
    std::string name = fresh_name(func_, b->name, taken);
    taken.insert(name);
    renamed_memory[memory] = name;
  }
  if (renamed_memory.empty()) return;
  Mutator m;
  m.on<BufferNode>([&](const BufferNode* b, const ObjectRef& self) -> Any {
    auto found = renamed_memory.find(b->data.get());
    if (found == renamed_memory.end()) return Any(self);
    ObjectPtr<BufferNode> node = copy_buffer(*b);
    node->name = found->second;
    return Any(Buffer(std::move(node)));
  });
  func_ = m.mutate_as<PrimFunc>(func_);
}

std::vector<std::string> Schedule::loops() const {
  std::vector<std::string> out;
  for (const ForNode* f : all_loops(func_->body)) out.push_back(f->loop_var->name);
  return out;
}

}  // namespace loom::tir
