// Schedule primitives; see loom/tir/schedule.h.
#include "loom/tir/schedule.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/text.h"
#include "loom/object/structural.h"
#include "loom/object/traversal.h"
#include "loom/support/strings.h"
#include "loom/tir/util.h"

namespace loom::tir {
namespace {

[[noreturn]] void refuse(const std::string& primitive, const std::string& why) {
  LOOM_THROW(ScheduleError) << "schedule." << primitive << ": " << why;
}

void pre_order(const Stmt& s, const std::function<void(const Stmt&)>& f) {
  f(s);
  map_children(s, [](const PrimExpr& e) { return e; },
               [&](const Stmt& child) {
                 pre_order(child, f);
                 return child;
               });
}

std::vector<const ForNode*> all_loops(const Stmt& body) {
  std::vector<const ForNode*> out;
  pre_order(body, [&](const Stmt& s) {
    if (const auto* f = s.as<ForNode>()) out.push_back(f);
  });
  return out;
}

// Post-order rewriting of expressions and statements; a callback returning
// a value replaces the node (and its subtree is not visited).
using ExprRule = std::function<std::optional<PrimExpr>(const PrimExpr&)>;
using StmtRule = std::function<std::optional<Stmt>(const Stmt&)>;
PrimExpr rewrite(const PrimExpr& e, const ExprRule& fe) {
  if (fe)
    if (auto r = fe(e)) return *r;
  return map_children(e, [&](const PrimExpr& c) { return rewrite(c, fe); });
}
Stmt rewrite(const Stmt& s, const ExprRule& fe, const StmtRule& fs) {
  if (fs)
    if (auto r = fs(s)) return *r;
  return map_children(s, [&](const PrimExpr& c) { return rewrite(c, fe); },
                      [&](const Stmt& c) { return rewrite(c, fe, fs); });
}
Stmt replace(const Stmt& root, const Object* target, const Stmt& with) {
  return rewrite(root, nullptr, [&](const Stmt& s) -> std::optional<Stmt> {
    if (s.get() == target) return with;
    return std::nullopt;
  });
}

Stmt with_kind(const ForNode* f, ForKind kind, Stmt body) {
  return For(f->loop_var, f->min, f->extent, kind, std::move(body), f->thread, f->annotations);
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
    if (!depends) return with_kind(f, f->for_kind(), push_guard(f->body, cond, vars));
  }
  return IfThenElse(cond, s);
}
}  // namespace

std::pair<std::string, std::string> Schedule::split(const std::string& loop, int64_t factor) {
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
  for (size_t k = last + 1; k-- > 0;) body = with_kind(reordered[k], reordered[k]->for_kind(), body);
  func_ = with_new_body(func_, replace(func_->body, top, body));
}

std::vector<std::string> Schedule::tile(const std::string& x, const std::string& y, int64_t fx, int64_t fy) {
  auto [xo, xi] = split(x, fx);
  auto [yo, yi] = split(y, fy);
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

void Schedule::parallel(const std::string& loop) {
  const ForNode* f = find_loop(func_, "parallel", loop);
  std::unordered_set<const Object*> local;
  pre_order(f->body, [&](const Stmt& s) {
    if (const auto* a = s.as<AllocateNode>()) local.insert(a->buffer->data.get());
  });
  for (const Access& a : accesses(f->body)) {
    if (!a.store || local.count(a.buffer->data.get())) continue;
    if (!uses_var(Any(a.indices), f->loop_var.get())) {
      refuse("parallel", "%" + loop + ": buffer '" + a.buffer->name + "' is written at " + indices_text(a.indices) +
                             ", which does not depend on %" + loop + ", so iterations would race");
    }
  }
  func_ = with_new_body(func_, replace(func_->body, f, with_kind(f, ForKind::kParallel, f->body)));
}

void Schedule::vectorize(const std::string& loop) {
  const ForNode* f = find_loop(func_, "vectorize", loop);
  if (!const_int(f->extent)) refuse("vectorize", "%" + loop + " has the non-constant extent " + ir::to_text(Any(f->extent)));
  func_ = with_new_body(func_, replace(func_->body, f, with_kind(f, ForKind::kVectorized, f->body)));
}

void Schedule::unroll(const std::string& loop) {
  const ForNode* f = find_loop(func_, "unroll", loop);
  if (!const_int(f->extent)) refuse("unroll", "%" + loop + " has the non-constant extent " + ir::to_text(Any(f->extent)));
  func_ = with_new_body(func_, replace(func_->body, f, with_kind(f, ForKind::kUnrolled, f->body)));
}

std::vector<std::vector<std::string>> Schedule::decompose_reduction(const std::string& loop) {
  const ForNode* top = find_loop(func_, "decompose_reduction", loop);
  std::vector<const ForNode*> chain = perfect_nest(top);
  std::vector<Stmt> parts = elements(chain.back()->body);
  if (parts.size() < 2) {
    refuse("decompose_reduction", "the innermost body of the nest at %" + loop + " is not a sequence of statements");
  }
  // Each buffer written in the nest is accessed at one index only, so the
  // iterations of the distributed nests touch disjoint elements.
  std::vector<Access> all = accesses(chain.back()->body);
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
    Stmt body = substitute(parts[k], with);
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
  });
  if (!found) refuse(primitive, "no allocated buffer '" + name + "'" + did_you_mean(name, names));
  return found;
}

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
  const AllocateNode* alloc = find_alloc(func_, "compute_inline", name);
  const BufferNode* buffer = alloc->buffer.get();
  std::vector<Stmt> parts = elements(alloc->body);
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
  func_ = with_new_body(func_, replace(func_->body, alloc, seq(rest)));
}

void Schedule::reverse_compute_inline(const std::string& name) {
  const AllocateNode* alloc = find_alloc(func_, "reverse_compute_inline", name);
  const BufferNode* buffer = alloc->buffer.get();
  std::vector<Stmt> parts = elements(alloc->body);
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
  Stmt new_level = with_kind(level, level->for_kind(), seq({level->body, epilogue}));
  std::vector<Stmt> rest;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k == *consumer) continue;
    rest.push_back(k == *producer ? replace(parts[k], level, new_level) : parts[k]);
  }
  func_ = with_new_body(func_, replace(func_->body, alloc, Allocate(alloc->buffer, seq(rest))));
}

std::string Schedule::cache_read(const std::string& name, const std::vector<int>& axes) {
  Buffer buffer;
  for (const Buffer& b : func_.buffer_params())
    if (b->name == name) buffer = b;
  if (!buffer.defined()) refuse("cache_read", "no buffer parameter '" + name + "'");
  size_t rank = buffer->shape.size();
  std::vector<int> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k < sorted.size(); ++k) {
    if (sorted.size() != rank || sorted[k] != static_cast<int>(k)) {
      refuse("cache_read", "the axes must be a permutation of the " + std::to_string(rank) + " axes of '" + name + "'");
    }
  }
  if (touches(func_->body, buffer.get(), true)) refuse("cache_read", "'" + name + "' is written by the function");
  for (const Access& a : accesses(func_->body)) {
    if (a.buffer->data.get() == buffer->data.get() && a.buffer != buffer.get()) {
      refuse("cache_read", "'" + name + "' is read through a view; cache before FlattenBuffer");
    }
  }
  std::vector<PrimExpr> shape;
  for (int a : axes) shape.push_back(buffer->shape[a].cast<PrimExpr>());
  Buffer copy(fresh_name(func_, name + "_local"), buffer->dtype, shape, "global");
  ExprRule redirect = [&](const PrimExpr& e) -> std::optional<PrimExpr> {
    const auto* load = e.as<BufferLoadNode>();
    if (!load || load->buffer.get() != buffer.get()) return std::nullopt;
    std::vector<PrimExpr> indices;
    for (int a : axes) indices.push_back(rewrite(load->indices[a].cast<PrimExpr>(), redirect));
    return BufferLoad(copy, indices);
  };
  Stmt body = rewrite(func_->body, redirect, nullptr);
  // The copy: for c0..: copy[c0, ...] = buffer[...].
  std::vector<Var> vars;
  std::set<std::string> taken;
  for (size_t k = 0; k < rank; ++k) {
    vars.emplace_back(fresh_name(func_, "c" + std::to_string(k), taken), DataType::Int(64));
    taken.insert(vars.back()->name);
  }
  std::vector<PrimExpr> source(rank), target;
  for (size_t k = 0; k < rank; ++k) {
    source[axes[k]] = vars[k];
    target.push_back(vars[k]);
  }
  Stmt fill = BufferStore(copy, BufferLoad(buffer, source), target);
  for (size_t k = rank; k-- > 0;) fill = For(vars[k], IntImm(DataType::Int(64), 0), Cast(DataType::Int(64), shape[k]), ForKind::kSerial, fill);
  func_ = with_new_body(func_, Allocate(copy, seq({fill, body})));
  return copy->name;
}

}  // namespace loom::tir
