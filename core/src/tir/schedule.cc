// Schedule primitives; see loom/tir/schedule.h.
#include "loom/tir/schedule.h"

#include <algorithm>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "loom/arith/simplify.h"
#include "loom/ir/text.h"
#include "loom/object/structural.h"
#include "loom/object/traversal.h"
#include "loom/support/strings.h"
#include "loom/tir/builder.h"
#include "loom/tir/functor.h"
#include "loom/tir/layout.h"
#include "loom/tir/util.h"

namespace loom::tir {

using arith::Analyzer;
using arith::simplify;

namespace {

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

// Rewriting with the core's Rewriter (loom/tir/functor.h): a rule
// returning a value replaces the node, whose subtree is then not visited.
using ExprRule = Rewriter::PreExpr;
using StmtRule = Rewriter::PreStmt;
PrimExpr rewrite(const PrimExpr& e, const ExprRule& fe) { return Rewriter().pre_expr(fe).run(e); }
Stmt rewrite(const Stmt& s, const ExprRule& fe, const StmtRule& fs) { return Rewriter().pre_expr(fe).pre_stmt(fs).run(s); }
Stmt replace(const Stmt& root, const Object* target, const Stmt& with) {
  return rewrite(root, nullptr, [&](const Stmt& s) -> std::optional<Stmt> {
    if (s.get() == target) return with;
    return std::nullopt;
  });
}

struct Access {
  const BufferNode* buffer;
  Array indices;
  bool store;
};
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

bool indices_are(const Array& indices, const std::vector<const VarNode*>& vars) {
  if (indices.size() != vars.size()) return false;
  for (size_t k = 0; k < vars.size(); ++k)
    if (indices[k].object() != vars[k]) return false;
  return true;
}

std::unordered_map<const Object*, PrimExpr> bind_indices(const std::vector<const VarNode*>& vars, const Array& indices) {
  std::unordered_map<const Object*, PrimExpr> with;
  for (size_t k = 0; k < vars.size(); ++k) {
    PrimExpr index = indices[k].cast<PrimExpr>();
    if (index.dtype() != vars[k]->dtype) index = Cast(vars[k]->dtype, index);
    with[vars[k]] = index;
  }
  return with;
}

template <class Ref, class Node>
Ref ref_of(const Node* node) {
  return downcast<Ref>(ObjectRef(ObjectPtr<Object>(const_cast<Node*>(node))));
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

std::string fresh_name(const PrimFunc& func, const std::string& base, const std::set<std::string>& taken = {});
PrimFunc with_new_body(const PrimFunc& func, const Stmt& body);
}  // namespace

// Records a primitive's step when it is the outermost primitive running
// and it returns without an exception.
class Schedule::Recorder {
 public:
  template <class... Args>
  Recorder(Schedule& s, const std::string& primitive, const Args&... args)
      : s_(s), exceptions_(std::uncaught_exceptions()) {
    ++s_.depth_;
    step_.kind = JsonValue::Kind::kArray;
    add(primitive);
    (add(args), ...);
  }
  ~Recorder() {
    if (--s_.depth_ == 0 && std::uncaught_exceptions() == exceptions_) s_.trace_.push_back(std::move(step_));
  }
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  void add(const std::string& text) {
    JsonValue v;
    v.kind = JsonValue::Kind::kString;
    v.string = text;
    step_.array.push_back(std::move(v));
  }
  void add(int64_t number) {
    JsonValue v;
    v.kind = JsonValue::Kind::kInt;
    v.integer = number;
    step_.array.push_back(std::move(v));
  }
  void add(const std::vector<std::string>& names) {
    JsonValue list;
    list.kind = JsonValue::Kind::kArray;
    for (const std::string& n : names) {
      JsonValue v;
      v.kind = JsonValue::Kind::kString;
      v.string = n;
      list.array.push_back(std::move(v));
    }
    step_.array.push_back(std::move(list));
  }

 private:
  Schedule& s_;
  JsonValue step_;
  int exceptions_;
};

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

namespace {
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
}  // namespace

std::pair<std::string, std::string> Schedule::split(const std::string& loop, int64_t factor) {
  Recorder record(*this, "split", loop, factor);
  const ForNode* f = find_loop(func_, "split", loop);
  if (factor <= 0) refuse("split", "the factor must be positive, got " + std::to_string(factor));
  DataType t = f->loop_var->dtype;
  Var outer(fresh_name(func_, loop + "_o"), t);
  Var inner(fresh_name(func_, loop + "_i"), t);
  PrimExpr step = IntImm(t, factor);
  std::optional<int64_t> extent = const_int(f->extent);
  PrimExpr outer_extent = extent ? PrimExpr(IntImm(t, (*extent + factor - 1) / factor))
                                 : PrimExpr(FloorDiv(Add(f->extent, IntImm(t, factor - 1)), step));
  PrimExpr offset = Add(Mul(outer, step), inner);
  PrimExpr index = const_int(f->min) == 0 ? offset : PrimExpr(Add(f->min, offset));
  Stmt body = substitute(f->body, {{f->loop_var.get(), index}});
  if (!extent || *extent % factor != 0) body = push_guard(body, LT(offset, f->extent), {outer.get(), inner.get()});
  Stmt nest = For(outer, IntImm(t, 0), outer_extent, ForKind::kSerial,
                  For(inner, IntImm(t, 0), step, ForKind::kSerial, body), "", f->annotations);
  func_ = with_new_body(func_, replace(func_->body, f, nest));
  return {outer->name, inner->name};
}

std::string Schedule::fuse(const std::string& outer_name, const std::string& inner_name) {
  Recorder record(*this, "fuse", outer_name, inner_name);
  const ForNode* outer = find_loop(func_, "fuse", outer_name);
  const ForNode* inner = find_loop(func_, "fuse", inner_name);
  if (outer->body.get() != inner) {
    refuse("fuse", "%" + inner_name + " is not the whole body of %" + outer_name);
  }
  if (uses_var(Any(inner->min), outer->loop_var.get()) || uses_var(Any(inner->extent), outer->loop_var.get())) {
    refuse("fuse", "the bounds of %" + inner_name + " depend on %" + outer_name);
  }
  DataType t = outer->loop_var->dtype;
  Var fused(fresh_name(func_, outer_name + "_" + inner_name), t);
  PrimExpr inner_extent = Cast(t, inner->extent);
  Stmt body = substitute(inner->body, {{outer->loop_var.get(), Add(outer->min, FloorDiv(fused, inner_extent))},
                                       {inner->loop_var.get(), Add(Cast(t, inner->min), FloorMod(fused, inner_extent))}});
  Stmt loop = For(fused, IntImm(t, 0), simplify(Mul(outer->extent, inner_extent)), ForKind::kSerial, body);
  func_ = with_new_body(func_, replace(func_->body, outer, loop));
  return fused->name;
}

void Schedule::reorder(const std::vector<std::string>& order) {
  Recorder record(*this, "reorder", order);
  if (order.size() < 2) return;
  std::vector<const ForNode*> named;
  for (const std::string& n : order) {
    const ForNode* f = find_loop(func_, "reorder", n);
    if (std::find(named.begin(), named.end(), f) != named.end()) refuse("reorder", "%" + n + " is named twice");
    named.push_back(f);
  }
  // The outermost of them, then its perfect nest.
  const ForNode* top = nullptr;
  for (const ForNode* f : all_loops(func_->body))
    if (!top && std::find(named.begin(), named.end(), f) != named.end()) top = f;
  std::vector<const ForNode*> chain = perfect_nest(top);
  std::vector<size_t> positions;
  for (size_t k = 0; k < chain.size(); ++k)
    if (std::find(named.begin(), named.end(), chain[k]) != named.end()) positions.push_back(k);
  if (positions.size() != named.size()) {
    for (const ForNode* f : named) {
      if (std::find(chain.begin(), chain.end(), f) == chain.end()) {
        refuse("reorder", "%" + f->loop_var->name + " is not in the perfect nest below %" + top->loop_var->name +
                              " (a loop's body there is not just one loop)");
      }
    }
  }
  size_t last = positions.back();
  for (size_t k = 0; k <= last; ++k) {
    for (size_t m = 0; m <= last; ++m) {
      if (k != m && (uses_var(Any(chain[k]->min), chain[m]->loop_var.get()) ||
                     uses_var(Any(chain[k]->extent), chain[m]->loop_var.get()))) {
        refuse("reorder", "the bounds of %" + chain[k]->loop_var->name + " depend on %" + chain[m]->loop_var->name);
      }
    }
  }
  std::vector<const ForNode*> reordered(chain.begin(), chain.begin() + last + 1);
  for (size_t k = 0; k < positions.size(); ++k) reordered[positions[k]] = named[k];
  Stmt body = chain[last]->body;
  for (size_t k = last + 1; k-- > 0;) body = with_kind_and_body(*reordered[k], reordered[k]->for_kind(), body);
  func_ = with_new_body(func_, replace(func_->body, top, body));
}

std::vector<std::string> Schedule::tile(const std::string& x, const std::string& y, int64_t fx, int64_t fy) {
  auto [xo, xi] = split(x, fx);
  auto [yo, yi] = split(y, fy);
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

namespace {
// The precondition of parallel and bind: every buffer written in `f` (and
// not allocated inside it) is written at indices that use its variable.
void refuse_races(const ForNode* f, const std::string& primitive) {
  std::unordered_set<const Object*> local;
  pre_order(f->body, [&](const Stmt& s) {
    if (const auto* a = s.as<AllocateNode>()) local.insert(a->buffer->data.get());
    return true;
  });
  const std::string& loop = f->loop_var->name;
  for (const Access& a : accesses(f->body)) {
    if (!a.store || local.count(a.buffer->data.get())) continue;
    if (!uses_var(Any(a.indices), f->loop_var.get())) {
      refuse(primitive, "%" + loop + ": buffer '" + a.buffer->name + "' is written at " + indices_text(a.indices) +
                            ", which does not depend on %" + loop + ", so iterations would race");
    }
  }
}
}  // namespace

void Schedule::parallel(const std::string& loop) {
  Recorder record(*this, "parallel", loop);
  const ForNode* f = find_loop(func_, "parallel", loop);
  refuse_races(f, "parallel");
  func_ = with_new_body(func_, replace(func_->body, f, with_kind_and_body(*f, ForKind::kParallel, f->body)));
}

void Schedule::vectorize(const std::string& loop) {
  Recorder record(*this, "vectorize", loop);
  const ForNode* f = find_loop(func_, "vectorize", loop);
  if (!const_int(f->extent)) refuse("vectorize", "%" + loop + " has the non-constant extent " + ir::to_text(Any(f->extent)));
  func_ = with_new_body(func_, replace(func_->body, f, with_kind_and_body(*f, ForKind::kVectorized, f->body)));
}

void Schedule::unroll(const std::string& loop) {
  Recorder record(*this, "unroll", loop);
  const ForNode* f = find_loop(func_, "unroll", loop);
  if (!const_int(f->extent)) refuse("unroll", "%" + loop + " has the non-constant extent " + ir::to_text(Any(f->extent)));
  func_ = with_new_body(func_, replace(func_->body, f, with_kind_and_body(*f, ForKind::kUnrolled, f->body)));
}

std::vector<std::vector<std::string>> Schedule::decompose_reduction(const std::string& loop) {
  Recorder record(*this, "decompose_reduction", loop);
  const ForNode* top = find_loop(func_, "decompose_reduction", loop);
  std::vector<const ForNode*> chain = perfect_nest(top);
  // A split's guard around the sequence goes with each part, as far in as
  // the part's own perfect nest (so reorder still reaches its loops).
  Stmt inner = chain.back()->body;
  const auto* guard = inner.as<IfThenElseNode>();
  if (guard && guard->else_case.defined()) guard = nullptr;
  std::vector<Stmt> parts = elements(guard ? guard->then_case : inner);
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
    Stmt body = substitute(guard ? push_guard(parts[k], guard->condition, {}) : parts[k], with);
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

namespace {
const AllocateNode* find_alloc(const PrimFunc& func, const std::string& primitive, const std::string& name) {
  const AllocateNode* found = nullptr;
  std::vector<std::string> names;
  pre_order(func->body, [&](const Stmt& st) {
    if (const auto* a = st.as<AllocateNode>()) {
      names.push_back(a->buffer->name);
      if (a->buffer->name == name) {
        if (found) refuse(primitive, "two allocations are named '" + name + "'");
        found = a;
      }
    }
    return true;
  });
  if (!found) refuse(primitive, "no allocated buffer '" + name + "'" + did_you_mean(name, names));
  return found;
}

// The statements in the scope of allocation `alloc`: its body's sequence,
// looking through allocations directly inside it (FuseTIR puts each
// kernel's own buffers there), and the scope rebuilt around new ones.
struct Scope {
  const AllocateNode* alloc;
  std::vector<const AllocateNode*> inner;
  std::vector<Stmt> parts;
  explicit Scope(const AllocateNode* a) : alloc(a) {
    Stmt body = a->body;
    while (const auto* nested = body.as<AllocateNode>()) {
      inner.push_back(nested);
      body = nested->body;
    }
    parts = elements(body);
  }
  // The new statement for `alloc` (without it where `keep` is false).
  Stmt rebuild(const std::vector<Stmt>& stmts, bool keep) const {
    Stmt body = seq(stmts);
    for (size_t k = inner.size(); k-- > 0;) body = Allocate(inner[k]->buffer, body);
    return keep ? Stmt(Allocate(alloc->buffer, body)) : body;
  }
};

bool touches(const Stmt& s, const BufferNode* buffer, bool stores_only = false) {
  for (const Access& a : accesses(s))
    if (a.buffer->data.get() == buffer->data.get() && (a.store || !stores_only)) return true;
  return false;
}

// A perfect nest whose innermost body is one store at exactly its loop
// variables (from 0): its loops, variables and store; nullopt otherwise.
struct ElementwiseNest {
  std::vector<const ForNode*> loops;
  std::vector<const VarNode*> vars;
  const BufferStoreNode* store = nullptr;
};
std::optional<ElementwiseNest> elementwise_nest(const Stmt& s) {
  const auto* top = s.as<ForNode>();
  if (!top) return std::nullopt;
  ElementwiseNest n;
  n.loops = perfect_nest(top);
  for (const ForNode* f : n.loops) {
    if (const_int(f->min) != 0) return std::nullopt;
    n.vars.push_back(f->loop_var.get());
  }
  n.store = n.loops.back()->body.as<BufferStoreNode>();
  if (!n.store || !indices_are(n.store->indices, n.vars)) return std::nullopt;
  return n;
}
}  // namespace

void Schedule::compute_inline(const std::string& name) {
  Recorder record(*this, "compute_inline", name);
  const AllocateNode* alloc = find_alloc(func_, "compute_inline", name);
  const BufferNode* buffer = alloc->buffer.get();
  Scope scope(alloc);
  const std::vector<Stmt>& parts = scope.parts;
  std::optional<size_t> producer;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (!touches(parts[k], buffer, true)) continue;
    if (producer) refuse("compute_inline", "'" + name + "' is written by more than one statement");
    producer = k;
  }
  if (!producer) refuse("compute_inline", "nothing writes '" + name + "'");
  auto nest = elementwise_nest(parts[*producer]);
  if (!nest) {
    refuse("compute_inline", "'" + name + "' is not written by one loop nest storing each element once at its loop "
                                          "variables (a reduction, or a partial write)");
  }
  if (touches(Evaluate(nest->store->value), buffer)) refuse("compute_inline", "'" + name + "' reads itself");
  for (size_t k = 0; k < *producer; ++k) {
    if (touches(parts[k], buffer)) refuse("compute_inline", "'" + name + "' is read before it is written");
  }
  PrimExpr value = nest->store->value;
  std::vector<const VarNode*> vars = nest->vars;
  ExprRule inline_loads = [&](const PrimExpr& e) -> std::optional<PrimExpr> {
    const auto* load = e.as<BufferLoadNode>();
    if (!load || load->buffer->data.get() != buffer->data.get()) return std::nullopt;
    if (load->buffer.get() != buffer || load->dtype.lanes != 1) {
      refuse("compute_inline", "'" + name + "' is read through a view or as a vector; inline before FlattenBuffer "
                                            "and VectorizeLoop");
    }
    std::vector<Any> rewritten;
    for (const Any& i : load->indices) rewritten.push_back(Any(rewrite(i.cast<PrimExpr>(), inline_loads)));
    Array indices(rewritten);
    return substitute(value, bind_indices(vars, indices));
  };
  std::vector<Stmt> rest;
  for (size_t k = 0; k < parts.size(); ++k)
    if (k != *producer) rest.push_back(rewrite(parts[k], inline_loads, nullptr));
  func_ = with_new_body(func_, replace(func_->body, alloc, scope.rebuild(rest, false)));
}

void Schedule::reverse_compute_inline(const std::string& name) {
  Recorder record(*this, "reverse_compute_inline", name);
  const AllocateNode* alloc = find_alloc(func_, "reverse_compute_inline", name);
  const BufferNode* buffer = alloc->buffer.get();
  Scope scope(alloc);
  const std::vector<Stmt>& parts = scope.parts;
  std::optional<size_t> producer, consumer;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (touches(parts[k], buffer, true)) {
      if (producer) refuse("reverse_compute_inline", "'" + name + "' is written by more than one statement");
      producer = k;
    } else if (touches(parts[k], buffer)) {
      if (consumer) refuse("reverse_compute_inline", "'" + name + "' is read by more than one statement");
      consumer = k;
    }
  }
  if (!producer || !consumer || *consumer < *producer) {
    refuse("reverse_compute_inline", "'" + name + "' needs one statement that writes it and a later one that reads it");
  }
  auto nest = elementwise_nest(parts[*consumer]);
  if (!nest) refuse("reverse_compute_inline", "the reader of '" + name + "' is not an elementwise loop nest");
  const BufferNode* output = nest->store->buffer.get();
  for (const Access& a : accesses(parts[*consumer])) {
    if (a.buffer->data.get() == buffer->data.get() && !indices_are(a.indices, nest->vars)) {
      refuse("reverse_compute_inline", "the reader of '" + name + "' reads it at " + indices_text(a.indices) +
                                           ", not at its own indices");
    }
  }
  for (size_t k = *producer + 1; k < *consumer; ++k) {
    if (touches(parts[k], output)) {
      refuse("reverse_compute_inline", "a statement between writer and reader uses '" + output->name + "'");
    }
  }
  if (touches(parts[*producer], output)) refuse("reverse_compute_inline", "the writer of '" + name + "' uses '" + output->name + "'");
  // The writer's outer loops, one per dimension, at whose level every
  // store to the buffer is at exactly those loop variables.
  const auto* top = parts[*producer].as<ForNode>();
  if (!top) refuse("reverse_compute_inline", "the writer of '" + name + "' is not a loop nest");
  std::vector<const ForNode*> chain = perfect_nest(top);
  size_t rank = nest->vars.size();
  if (chain.size() < rank) refuse("reverse_compute_inline", "the writer of '" + name + "' has fewer perfectly nested loops than dimensions");
  std::vector<const VarNode*> writer_vars;
  for (size_t k = 0; k < rank; ++k) {
    writer_vars.push_back(chain[k]->loop_var.get());
    if (const_int(chain[k]->min) != 0 || !same_expression(Any(chain[k]->extent), Any(nest->loops[k]->extent))) {
      refuse("reverse_compute_inline", "loop %" + chain[k]->loop_var->name + " of the writer does not match loop %" +
                                           nest->loops[k]->loop_var->name + " of the reader");
    }
  }
  for (const Access& a : accesses(parts[*producer])) {
    if (a.buffer->data.get() == buffer->data.get() && !indices_are(a.indices, writer_vars)) {
      refuse("reverse_compute_inline", "the writer of '" + name + "' accesses it at " + indices_text(a.indices));
    }
  }
  std::unordered_map<const Object*, PrimExpr> with;
  for (size_t k = 0; k < rank; ++k) with[nest->vars[k]] = ref_of<PrimExpr>(writer_vars[k]);
  Stmt epilogue = substitute(ref_of<Stmt>(nest->store), with);
  const ForNode* level = chain[rank - 1];
  Stmt new_level = with_kind_and_body(*level, level->for_kind(), seq({level->body, epilogue}));
  std::vector<Stmt> rest;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k == *consumer) continue;
    rest.push_back(k == *producer ? replace(parts[k], level, new_level) : parts[k]);
  }
  func_ = with_new_body(func_, replace(func_->body, alloc, scope.rebuild(rest, true)));
}

namespace {
// n fresh int64 variables prefix0, prefix1, ...
std::vector<Var> fresh_vars(const PrimFunc& func, const std::string& prefix, size_t n) {
  std::vector<Var> out;
  std::set<std::string> taken;
  for (size_t k = 0; k < n; ++k) {
    out.emplace_back(fresh_name(func, prefix + std::to_string(k), taken), DataType::Int(64));
    taken.insert(out.back()->name);
  }
  return out;
}

std::vector<PrimExpr> exprs_of(const Array& indices) {
  std::vector<PrimExpr> out;
  for (const Any& i : indices) out.push_back(i.cast<PrimExpr>());
  return out;
}

// A buffer parameter named `name` (or, with `allocations`, an allocated
// buffer), else a refusal with a suggestion.
Buffer find_buffer(const PrimFunc& func, const std::string& primitive, const std::string& name, bool allocations) {
  Buffer found;
  std::vector<std::string> names;
  for (const Buffer& b : func.buffer_params()) {
    names.push_back(b->name);
    if (b->name == name) found = b;
  }
  if (allocations) {
    pre_order(func->body, [&](const Stmt& st) {
      if (const auto* a = st.as<AllocateNode>()) {
        names.push_back(a->buffer->name);
        if (a->buffer->name == name && !found.defined()) found = a->buffer;
      }
      return true;
    });
  }
  if (!found.defined()) {
    refuse(primitive, std::string(allocations ? "no buffer '" : "no buffer parameter '") + name + "'" + did_you_mean(name, names));
  }
  return found;
}

// Refuses when `s` accesses `buffer` through another buffer over its data
// (a view FlattenBuffer made): "'B' <why>".
void refuse_views(const Stmt& s, const BufferNode* buffer, const std::string& primitive, const std::string& why) {
  for (const Access& a : accesses(s))
    if (a.buffer->data.get() == buffer->data.get() && a.buffer != buffer) refuse(primitive, "'" + buffer->name + "' " + why);
}

// How much `e` changes when `v` grows by one (a constant for linear e).
std::optional<int64_t> step_along(const PrimExpr& e, const VarNode* v) {
  PrimExpr var = ref_of<PrimExpr>(v);
  return const_int(simplify(Sub(substitute(e, {{v, Add(var, IntImm(var.dtype(), 1))}}), e)));
}
}  // namespace

namespace {
// The layout `layout` gives, from its results on fresh index variables;
// refuses (as `primitive`) what is not an axis v, v // c or v % c, and
// what is not a layout.
Layout classify_layout(const PrimFunc& func, const Buffer& buffer, const Schedule::IndexMap& layout,
                       const std::string& primitive) {
  size_t rank = buffer->shape.size();
  std::vector<Var> fresh = fresh_vars(func, "v", rank);
  std::vector<PrimExpr> vars(fresh.begin(), fresh.end());
  auto axis_of = [&](const PrimExpr& e) -> int {
    for (size_t k = 0; k < rank; ++k)
      if (e.same_as(vars[k])) return static_cast<int>(k);
    return -1;
  };
  Layout out;
  for (const PrimExpr& e : layout(vars)) {
    std::optional<LayoutIndex> index;
    if (int a = axis_of(e); a >= 0) index = LayoutIndex{LayoutIndex::kWhole, a, 1};
    const auto* b = e.as<BinaryOpNode>();
    if (b && (e.as<FloorDivNode>() || e.as<FloorModNode>())) {
      auto c = const_int(b->b);
      int a = axis_of(b->a);
      if (c && *c > 0 && a >= 0) index = LayoutIndex{e.as<FloorDivNode>() ? LayoutIndex::kDiv : LayoutIndex::kMod, a, *c};
    }
    if (!index) {
      refuse(primitive, "index " + std::to_string(out.size()) + " of the layout of '" + buffer->name + "', " +
                            ir::to_text(Any(e)) + ", is not an axis v, v // c or v % c");
    }
    out.push_back(*index);
  }
  if (std::string why = layout_problem(out, rank); !why.empty()) refuse(primitive, "'" + buffer->name + "': " + why);
  return out;
}

std::vector<PrimExpr> simplified(std::vector<PrimExpr> exprs) {
  for (PrimExpr& e : exprs) e = simplify(e);
  return exprs;
}

// Every load of `buffer` in `s` reads `to` at the indices the layout
// gives; with `stores`, every store writes it there too, and the
// allocation of `buffer` allocates `to`.
Stmt redirect_loads(const Stmt& s, const Buffer& buffer, const Buffer& to, const Layout& layout, bool stores = false) {
  auto moved = [&](const Array& indices, const ExprRule& inner) {
    std::vector<PrimExpr> out;
    for (const Any& i : indices) out.push_back(rewrite(i.cast<PrimExpr>(), inner));
    return apply_layout(layout, out);
  };
  ExprRule redirect = [&](const PrimExpr& e) -> std::optional<PrimExpr> {
    const auto* load = e.as<BufferLoadNode>();
    if (!load || load->buffer.get() != buffer.get()) return std::nullopt;
    return BufferLoad(to, moved(load->indices, redirect));
  };
  StmtRule redirect_stores = [&](const Stmt& st) -> std::optional<Stmt> {
    if (const auto* a = st.as<AllocateNode>(); a && a->buffer.same_as(buffer))
      return Allocate(to, rewrite(a->body, redirect, redirect_stores));
    const auto* store = st.as<BufferStoreNode>();
    if (!store || store->buffer.get() != buffer.get()) return std::nullopt;
    return BufferStore(to, rewrite(store->value, redirect), moved(store->indices, redirect));
  };
  return rewrite(s, redirect, stores ? redirect_stores : StmtRule());
}
}  // namespace

namespace {
// A memory scope a cache may take.
void check_scope(const std::string& primitive, const std::string& scope) {
  if (scope != "global" && scope != "shared" && scope != "local") {
    refuse(primitive, "'" + scope + "' is not a memory scope (global, shared, local)");
  }
}
}  // namespace

std::string Schedule::cache_read(const std::string& name, const IndexMap& layout_map, const std::string& scope) {
  Recorder record(*this, "cache_read", name);
  check_scope("cache_read", scope);
  Buffer buffer = find_buffer(func_, "cache_read", name, false);
  if (touches(func_->body, buffer.get(), true)) refuse("cache_read", "'" + name + "' is written by the function");
  refuse_views(func_->body, buffer.get(), "cache_read", "is read through a view; cache before FlattenBuffer");
  Layout layout = classify_layout(func_, buffer, layout_map, "cache_read");
  record.add(layout_to_string(layout));
  record.add(scope);
  size_t rank = buffer->shape.size();
  std::vector<PrimExpr> shape = simplified(layout_shape(layout, buffer_shape(buffer)));
  Buffer copy(fresh_name(func_, name + "_" + (scope == "global" ? "local" : scope)), buffer->dtype, shape, scope);
  Stmt body = redirect_loads(func_->body, buffer, copy, layout);
  // The copy, in its own order: for c0, c1..: copy[c0, c1, ..] =
  // buffer[inverse layout], guarded where a split pads.
  std::vector<Var> loop_vars = fresh_vars(func_, "c", layout.size());
  std::vector<PrimExpr> source(rank), target(loop_vars.begin(), loop_vars.end());
  for (size_t k = 0; k < layout.size(); ++k) {
    const LayoutIndex& l = layout[k];
    if (l.kind == LayoutIndex::kWhole) source[l.axis] = loop_vars[k];
    if (l.kind == LayoutIndex::kMod) continue;
    if (l.kind == LayoutIndex::kDiv) {
      for (size_t m = 0; m < layout.size(); ++m) {
        if (layout[m].axis == l.axis && layout[m].kind == LayoutIndex::kMod) {
          source[l.axis] = Add(Mul(loop_vars[k], IntImm(DataType::Int(64), l.factor)), loop_vars[m]);
        }
      }
    }
  }
  Stmt fill = BufferStore(copy, BufferLoad(buffer, source), target);
  PrimExpr in_range;
  for (const LayoutIndex& l : layout) {
    if (l.kind != LayoutIndex::kDiv) continue;
    PrimExpr extent = Cast(DataType::Int(64), buffer->shape[l.axis].cast<PrimExpr>());
    PrimExpr cond = LT(source[l.axis], extent);
    in_range = in_range.defined() ? PrimExpr(And(in_range, cond)) : cond;
  }
  if (in_range.defined()) fill = IfThenElse(in_range, fill);
  fill = loop_nest(loop_vars, shape, fill);
  func_ = with_new_body(func_, Allocate(copy, seq({simplify(fill), body})));
  return copy->name;
}

void Schedule::transform_layout(const std::string& name, const IndexMap& layout_map) {
  Recorder record(*this, "transform_layout", name);
  Buffer buffer = find_buffer(func_, "transform_layout", name, true);
  std::vector<Buffer> inputs = func_.buffer_params();
  if (std::find_if(inputs.begin(), inputs.end(), [&](const Buffer& b) { return b.same_as(buffer); }) == inputs.end()) {
    // An allocation: private to the function, so every store and load of
    // it moves to the new layout and nothing is recorded.
    refuse_views(func_->body, buffer.get(), "transform_layout", "is accessed through a view; transform before FlattenBuffer");
    Layout layout = classify_layout(func_, buffer, layout_map, "transform_layout");
    record.add(layout_to_string(layout));
    Buffer laid(buffer->name, buffer->dtype, simplified(layout_shape(layout, buffer_shape(buffer))), buffer->scope);
    func_ = with_new_body(func_, redirect_loads(func_->body, buffer, laid, layout, true));
    return;
  }
  if (touches(func_->body, buffer.get(), true)) refuse("transform_layout", "'" + name + "' is written by the function");
  refuse_views(func_->body, buffer.get(), "transform_layout", "is read through a view; transform before FlattenBuffer");
  size_t input = 0;
  while (input < inputs.size() && !inputs[input].same_as(buffer)) ++input;
  std::map<std::string, std::string> layouts = param_layouts(*func_.get());
  if (layouts.count(std::to_string(input)))
    refuse("transform_layout", "'" + name + "' already has the layout " + layouts[std::to_string(input)]);
  Layout layout = classify_layout(func_, buffer, layout_map, "transform_layout");
  record.add(layout_to_string(layout));
  Buffer laid(buffer->name, buffer->dtype, simplified(layout_shape(layout, buffer_shape(buffer))), buffer->scope);
  std::vector<Any> params;
  for (const Any& p : func_->params)
    params.push_back(p.as_object_ref().same_as(buffer) ? Any(laid) : p);
  layouts[std::to_string(input)] = layout_to_string(layout);
  std::map<std::string, Any> attrs = func_->attrs.get() ? func_->attrs->items : std::map<std::string, Any>{};
  std::map<std::string, Any> entries(layouts.begin(), layouts.end());
  attrs["param_layouts"] = Any(Map(entries));
  func_ = PrimFunc(params, redirect_loads(func_->body, buffer, laid, layout), func_->ret, Map(attrs));
}

std::string Schedule::cache_read(const std::string& name, const std::vector<int>& axes, const std::string& scope) {
  return cache_read(name, [&](const std::vector<PrimExpr>& v) {
    std::vector<PrimExpr> out;
    for (int a : axes) {
      if (a < 0 || a >= static_cast<int>(v.size())) {
        refuse("cache_read", "axis " + std::to_string(a) + " is out of range for the " + std::to_string(v.size()) +
                                 " axes of '" + name + "'");
      }
      out.push_back(v[a]);
    }
    return out;
  }, scope);
}

std::string Schedule::cache_write(const std::string& name, const std::string& scope) {
  Recorder record(*this, "cache_write", name, scope);
  check_scope("cache_write", scope);
  Buffer buffer = find_buffer(func_, "cache_write", name, true);
  refuse_views(func_->body, buffer.get(), "cache_write", "is accessed through a view; cache before FlattenBuffer");
  // The one outermost loop nest that writes the buffer.
  const ForNode* writer = nullptr;
  pre_order(func_->body, [&](const Stmt& st) {
    if (const auto* f = st.as<ForNode>()) {
      if (touches(st, buffer.get(), true)) {
        if (writer) refuse("cache_write", "'" + name + "' is written by more than one loop nest");
        writer = f;
      }
      return false;
    }
    if (const auto* store = st.as<BufferStoreNode>(); store && store->buffer->data.get() == buffer->data.get()) {
      refuse("cache_write", "'" + name + "' is written outside a loop nest");
    }
    return true;
  });
  if (!writer) refuse("cache_write", "nothing writes '" + name + "'");
  // The nest may read the buffer only where it wrote it first (the init
  // of a reduction): the local copy starts empty.
  std::function<void(const Stmt&, std::vector<Array>&)> check = [&](const Stmt& st, std::vector<Array>& written) {
    auto reads_ok = [&](const Any& node) {
      Visitor v(false);
      v.on<BufferLoadNode>([&](const BufferLoadNode* l) {
        bool seen = l->buffer->data.get() != buffer->data.get();
        for (const Array& w : written) seen = seen || same_expression(Any(w), Any(l->indices));
        if (!seen) {
          refuse("cache_write", "the nest writing '" + name + "' reads it at " + indices_text(l->indices) +
                                    " before writing it there, so a local copy would lose that value");
        }
        v.visit_children(l);
      });
      v.visit(node);
    };
    if (const auto* seq_node = st.as<SeqStmtNode>()) {
      for (const Any& a : seq_node->seq) check(a.cast<Stmt>(), written);
      return;
    }
    if (const auto* store = st.as<BufferStoreNode>()) {
      reads_ok(Any(store->value));
      reads_ok(store->indices);
      if (store->buffer->data.get() == buffer->data.get()) written.push_back(store->indices);
      return;
    }
    if (const auto* f = st.as<ForNode>()) {
      reads_ok(Any(f->min));
      reads_ok(Any(f->extent));
      std::vector<Array> inner = written;
      check(f->body, inner);
      return;
    }
    map_children(st,
                 [&](const PrimExpr& e) {
                   reads_ok(Any(e));
                   return e;
                 },
                 [&](const Stmt& c) {
                   std::vector<Array> inner = written;
                   check(c, inner);
                   return c;
                 });
  };
  std::vector<Array> written;
  check(ref_of<Stmt>(writer), written);
  std::vector<PrimExpr> shape;
  for (const Any& d : buffer->shape) shape.push_back(d.cast<PrimExpr>());
  // The copy back writes every element, so the nest must too: some store,
  // under no condition, at loop variables that run over the whole shape.
  bool whole = false;
  std::vector<const ForNode*> enclosing;
  std::function<void(const Stmt&)> cover = [&](const Stmt& st) {
    if (const auto* f = st.as<ForNode>()) {
      enclosing.push_back(f);
      cover(f->body);
      enclosing.pop_back();
      return;
    }
    if (const auto* seq_node = st.as<SeqStmtNode>()) {
      for (const Any& a : seq_node->seq) cover(a.cast<Stmt>());
      return;
    }
    const auto* store = st.as<BufferStoreNode>();
    if (!store || store->buffer.get() != buffer.get()) return;
    bool all = store->indices.size() == shape.size();
    for (size_t d = 0; all && d < shape.size(); ++d) {
      const ForNode* loop = nullptr;
      for (const ForNode* f : enclosing)
        if (store->indices[d].object() == f->loop_var.get()) loop = f;
      all = loop && const_int(loop->min) == 0 &&
            same_expression(Any(simplify(Cast(DataType::Int(64), loop->extent))), Any(simplify(Cast(DataType::Int(64), shape[d]))));
    }
    whole = whole || all;
  };
  cover(ref_of<Stmt>(writer));
  if (!whole) {
    refuse("cache_write", "the nest writing '" + name + "' does not write every element at its loop variables, so the "
                          "copy back would overwrite the others");
  }
  Buffer local(fresh_name(func_, name + "_" + (scope == "global" ? "local" : scope)), buffer->dtype, shape, scope);
  // Loads and stores of the buffer, in the writer, go to the local copy.
  ExprRule load_local = [&](const PrimExpr& e) -> std::optional<PrimExpr> {
    const auto* load = e.as<BufferLoadNode>();
    if (!load || load->buffer.get() != buffer.get()) return std::nullopt;
    return BufferLoad(local, exprs_of(load->indices));
  };
  StmtRule store_local = [&](const Stmt& st) -> std::optional<Stmt> {
    const auto* store = st.as<BufferStoreNode>();
    if (!store || store->buffer.get() != buffer.get()) return std::nullopt;
    return BufferStore(local, store->value, exprs_of(store->indices));
  };
  Stmt redirected = rewrite(rewrite(ref_of<Stmt>(writer), load_local, nullptr), nullptr, store_local);
  std::vector<Var> vars = fresh_vars(func_, "w", shape.size());
  std::vector<PrimExpr> at(vars.begin(), vars.end());
  Indices extents;
  for (const PrimExpr& d : shape) extents.push_back(simplify(Cast(DataType::Int(64), d)));
  Stmt back = loop_nest(vars, extents, BufferStore(buffer, BufferLoad(local, at), at));
  func_ = with_new_body(func_, replace(func_->body, writer, Allocate(local, seq({redirected, back}))));
  return local->name;
}

namespace {
// The statements from `root` down to `target` (both included); empty when
// `target` is not below `root`.
bool path_to(const Stmt& root, const Object* target, std::vector<Stmt>& path) {
  path.push_back(root);
  if (root.get() == target) return true;
  bool found = false;
  map_children(root, [](const PrimExpr& e) { return e; },
               [&](const Stmt& c) {
                 if (!found) found = path_to(c, target, path);
                 return c;
               });
  if (!found) path.pop_back();
  return found;
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
}  // namespace

void Schedule::compute_at(const std::string& nest_name, const std::string& loop_name) {
  Recorder record(*this, "compute_at", nest_name, loop_name);
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
        refuse("compute_at", "the nest %" + nest_name + " writes '" + a.buffer->name + "' at " + indices_text(a.indices) +
                                 ", not at distinct loop variables of its perfect nest");
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
        refuse("compute_at", "'" + a.buffer->name + "', which the nest %" + nest_name + " reads, is written before %" + loop_name);
      }
    }
  }
  // The region one iteration of `loop` reads, over the loops inside it.
  Analyzer an;
  std::vector<const ForNode*> outer;
  for (const Stmt& s : to_loop)
    if (const auto* f = s.as<ForNode>()) outer.push_back(f);
  for (const ForNode* f : outer) an.bind_loop(*f);
  std::vector<InnerLoop> inner;
  for (const ForNode* f : all_loops(loop->body)) {
    inner.push_back({f->loop_var.get(), f->min, simplify(Sub(Add(f->min, f->extent), IntImm(f->extent.dtype(), 1)))});
    an.bind_loop(*f);
  }
  size_t rank = store_vars.size();
  std::vector<PrimExpr> lo(rank), hi(rank);
  for (const Access& a : accesses(loop->body)) {
    if (a.buffer->data.get() != buffer->data.get()) continue;
    if (a.buffer != buffer) refuse("compute_at", "'" + buffer->name + "' is read through a view; schedule before FlattenBuffer");
    for (size_t d = 0; d < rank; ++d) {
      auto r = index_range(a.indices[d].cast<PrimExpr>(), inner, an);
      if (!r) {
        refuse("compute_at", "cannot bound the index " + ir::to_text(a.indices[d]) + " of '" + buffer->name + "' over the loops in %" +
                                 loop_name);
      }
      lo[d] = lo[d].defined() ? PrimExpr(Min(lo[d], r->first)) : r->first;
      hi[d] = hi[d].defined() ? PrimExpr(Max(hi[d], r->second)) : r->second;
    }
  }
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
    if (buffer->scope == "shared" && f->for_kind() == ForKind::kThreadBinding && f->thread.rfind("threadIdx.", 0) == 0) {
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
    if (!alloc_found) refuse("compute_at", "'" + buffer->name + "' is in the " + buffer->scope + " scope but not allocated");
    std::vector<PrimExpr> shape;
    for (size_t d = 0; d < rank; ++d) {
      PrimExpr extent = simplify(Add(Sub(hi[d], lo[d]), IntImm(hi[d].dtype(), 1)), an);
      if (auto c = const_int(extent); !c || *c <= 0) {
        refuse("compute_at", "the region of '" + buffer->name + "' that one iteration of %" + loop_name + " reads along axis " +
                                 std::to_string(d) + " (" + ir::to_text(Any(lo[d])) + " to " + ir::to_text(Any(hi[d])) +
                                 ") has no constant extent, which a " + buffer->scope + " buffer needs");
      }
      shape.push_back(extent);
    }
    Buffer compact(buffer->name, buffer->dtype, shape, buffer->scope);
    ExprRule load_rule;
    auto relative = [&](const Array& indices) {
      std::vector<PrimExpr> out;
      for (size_t d = 0; d < rank; ++d) out.push_back(simplify(Sub(rewrite(indices[d].cast<PrimExpr>(), load_rule), lo[d]), an));
      return out;
    };
    load_rule = [&](const PrimExpr& e) -> std::optional<PrimExpr> {
      const auto* l = e.as<BufferLoadNode>();
      if (!l || l->buffer.get() != buffer) return std::nullopt;
      return BufferLoad(compact, relative(l->indices));
    };
    StmtRule store_rule = [&](const Stmt& st) -> std::optional<Stmt> {
      if (const auto* a = st.as<AllocateNode>(); a && a->buffer.get() == buffer) return rewrite(a->body, load_rule, store_rule);
      const auto* store = st.as<BufferStoreNode>();
      if (!store || store->buffer.get() != buffer) return std::nullopt;
      return BufferStore(compact, rewrite(store->value, load_rule), relative(store->indices));
    };
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
    Stmt body = rewrite(substitute(chain.back()->body, shifted), load_rule, store_rule);
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
    Stmt inside = Allocate(compact, seq({moved, rewrite(loop->body, load_rule, store_rule)}));
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
    if (f->for_kind() == ForKind::kParallel) refuse("rfactor", "the reduction loop %" + f->loop_var->name + " is parallel");
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
  Stmt sum = For(final, IntImm(index_type, 0), IntImm(index_type, *extent), ForKind::kSerial,
                 BufferStore(store->buffer, combine(BufferLoad(store->buffer, at), BufferLoad(rf, {PrimExpr(final)})), at));
  func_ = with_new_body(func_, replace(func_->body, top, Allocate(rf, seq({set, nest, sum}))));
  return {rf->name, init->name, final->name};
}

bool is_thread_axis(const std::string& axis) {
  static const std::set<std::string> axes{"blockIdx.x", "blockIdx.y", "blockIdx.z",
                                          "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  return axes.count(axis) > 0;
}

void Schedule::bind(const std::string& loop, const std::string& axis) {
  Recorder record(*this, "bind", loop, axis);
  const ForNode* f = find_loop(func_, "bind", loop);
  if (!is_thread_axis(axis)) {
    refuse("bind", "'" + axis + "' is not a thread axis (blockIdx.x/y/z, threadIdx.x/y/z)");
  }
  if (const_int(f->min) != 0) refuse("bind", "%" + loop + " does not start at 0 (split or normalise it first)");
  if (f->for_kind() != ForKind::kSerial) refuse("bind", "%" + loop + " is not a serial loop");
  // The axis may not be bound twice on one path from the root.
  std::vector<Stmt> path;
  path_to(func_->body, f, path);
  for (const Stmt& above : path) {
    const auto* a = above.as<ForNode>();
    if (a && a != f && a->for_kind() == ForKind::kThreadBinding && a->thread == axis) {
      refuse("bind", "%" + loop + " is inside %" + a->loop_var->name + ", already bound to " + axis);
    }
  }
  refuse_races(f, "bind");
  func_ = with_new_body(func_, replace(func_->body, f, For(f->loop_var, f->min, f->extent, ForKind::kThreadBinding,
                                                           f->body, axis, f->annotations)));
}


std::string Schedule::trace_json() const {
  JsonValue steps;
  steps.kind = JsonValue::Kind::kArray;
  steps.array = trace_;
  return to_json(steps);
}

namespace {
// The arguments of one trace step, read by position with their types
// checked (a ScheduleError naming the primitive and the argument).
class StepArgs {
 public:
  StepArgs(const JsonValue& step, const std::string& primitive) : step_(step), primitive_(primitive) {}
  const std::string& str(size_t k) const { return expect(k, JsonValue::Kind::kString, "a string").string; }
  int64_t integer(size_t k) const { return expect(k, JsonValue::Kind::kInt, "an integer").integer; }
  std::vector<std::string> names(size_t k) const {
    std::vector<std::string> out;
    for (const JsonValue& n : expect(k, JsonValue::Kind::kArray, "a list of names").array) {
      if (n.kind != JsonValue::Kind::kString) fail(k, "a list of names");
      out.push_back(n.string);
    }
    return out;
  }
  // A layout's text, applied to the buffer's indices (its rank is theirs).
  Schedule::IndexMap layout(size_t k) const {
    return [text = str(k)](const std::vector<PrimExpr>& indices) {
      Layout parsed;
      try {
        parsed = parse_layout(text, indices.size());
      } catch (const Error& e) {
        throw ScheduleError(e.what());
      }
      return apply_layout(parsed, indices);
    };
  }

 private:
  const JsonValue& expect(size_t k, JsonValue::Kind kind, const char* what) const {
    const JsonValue& v = step_.array[k];
    if (v.kind != kind) fail(k, std::string(what) + ", got " + v.kind_name());
    return v;
  }
  [[noreturn]] void fail(size_t k, const std::string& what) const {
    throw ScheduleError(primitive_ + ": argument " + std::to_string(k) + " must be " + what);
  }
  const JsonValue& step_;
  const std::string& primitive_;
};

// Every primitive a trace may name: its arguments after the name, and the call.
struct TracePrimitive {
  const char* name;
  size_t arity;
  void (*apply)(Schedule& s, const StepArgs& a);
};
const TracePrimitive kTracePrimitives[] = {
    {"split", 2, [](Schedule& s, const StepArgs& a) { s.split(a.str(1), a.integer(2)); }},
    {"fuse", 2, [](Schedule& s, const StepArgs& a) { s.fuse(a.str(1), a.str(2)); }},
    {"reorder", 1, [](Schedule& s, const StepArgs& a) { s.reorder(a.names(1)); }},
    {"parallel", 1, [](Schedule& s, const StepArgs& a) { s.parallel(a.str(1)); }},
    {"vectorize", 1, [](Schedule& s, const StepArgs& a) { s.vectorize(a.str(1)); }},
    {"unroll", 1, [](Schedule& s, const StepArgs& a) { s.unroll(a.str(1)); }},
    {"bind", 2, [](Schedule& s, const StepArgs& a) { s.bind(a.str(1), a.str(2)); }},
    {"decompose_reduction", 1, [](Schedule& s, const StepArgs& a) { s.decompose_reduction(a.str(1)); }},
    {"compute_inline", 1, [](Schedule& s, const StepArgs& a) { s.compute_inline(a.str(1)); }},
    {"reverse_compute_inline", 1, [](Schedule& s, const StepArgs& a) { s.reverse_compute_inline(a.str(1)); }},
    {"cache_read", 3, [](Schedule& s, const StepArgs& a) { s.cache_read(a.str(1), a.layout(2), a.str(3)); }},
    {"transform_layout", 2, [](Schedule& s, const StepArgs& a) { s.transform_layout(a.str(1), a.layout(2)); }},
    {"cache_write", 2, [](Schedule& s, const StepArgs& a) { s.cache_write(a.str(1), a.str(2)); }},
    {"compute_at", 2, [](Schedule& s, const StepArgs& a) { s.compute_at(a.str(1), a.str(2)); }},
    {"rfactor", 1, [](Schedule& s, const StepArgs& a) { s.rfactor(a.str(1)); }},
};
}  // namespace

void Schedule::apply(const JsonValue& step) {
  if (step.kind != JsonValue::Kind::kArray || step.array.empty() || step.array[0].kind != JsonValue::Kind::kString)
    throw ScheduleError("a trace step is an array [primitive, arguments...], got " + std::string(step.kind_name()));
  const std::string& primitive = step.array[0].string;
  std::vector<std::string> known;
  for (const TracePrimitive& p : kTracePrimitives) {
    known.push_back(p.name);
    if (primitive != p.name) continue;
    size_t given = step.array.size() - 1;
    if (given != p.arity) {
      throw ScheduleError(primitive + " takes " + std::to_string(p.arity) + " arguments in a trace, got " +
                          std::to_string(given));
    }
    p.apply(*this, StepArgs(step, primitive));
    return;
  }
  throw ScheduleError("'" + primitive + "' is not a schedule primitive" + did_you_mean(primitive, known));
}

Schedule Schedule::replay(PrimFunc func, const std::string& trace) {
  JsonValue steps = parse_json(trace, "<trace>");
  if (steps.kind != JsonValue::Kind::kArray)
    throw ScheduleError(std::string("a trace is a JSON array of steps, got ") + steps.kind_name());
  Schedule s(std::move(func));
  for (size_t k = 0; k < steps.array.size(); ++k) {
    try {
      s.apply(steps.array[k]);
    } catch (const ScheduleError& e) {
      throw ScheduleError("step " + std::to_string(k + 1) + " of the trace: " + e.what());
    }
  }
  return s;
}

}  // namespace loom::tir
