// Schedule primitives that inline a temporary buffer (loom/schedule/schedule.h):
// compute_inline puts its producer's value into each reader;
// reverse_compute_inline puts its one elementwise reader into the
// producer's nest (an epilogue).
#include "loom/schedule/schedule.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "loom/object/structural.h"
#include "loom/support/strings.h"
#include "loom/tir/builder.h"
#include "loom/tir/functor.h"
#include "loom/tir/util.h"
#include "schedule_internal.h"

namespace loom::tir {

using namespace schedule_detail;  // NOLINT: the primitives' shared helpers (schedule_internal.h)

namespace {

// Whether the indices are exactly the variables `vars`, in order.
bool indices_are(const Array& indices, const std::vector<const VarNode*>& vars) {
  if (indices.size() != vars.size()) return false;
  for (size_t k = 0; k < vars.size(); ++k)
    if (indices[k].object() != vars[k]) return false;
  return true;
}

// Each of `vars` bound to the index at its position (cast to its type).
std::unordered_map<const Object*, PrimExpr> bind_indices(const std::vector<const VarNode*>& vars,
                                                         const Array& indices) {
  std::unordered_map<const Object*, PrimExpr> with;
  for (size_t k = 0; k < vars.size(); ++k) {
    PrimExpr index = indices[k].cast<PrimExpr>();
    if (index.dtype() != vars[k]->dtype) index = Cast(vars[k]->dtype, index);
    with[vars[k]] = index;
  }
  return with;
}

// The allocation named `name`; else a refusal (as `primitive`).
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

// The statements of `s`, nested sequences flattened (FuseTIR leaves a
// kernel's statements in a sequence of their own inside the caller's).
void flat_elements(const Stmt& s, std::vector<Stmt>& out) {
  for (const Stmt& part : elements(s)) {
    if (part.as<SeqStmtNode>()) {
      flat_elements(part, out);
    } else {
      out.push_back(part);
    }
  }
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
    flat_elements(body, parts);
  }
  // The new statement for `alloc` (without it where `keep` is false).
  Stmt rebuild(const std::vector<Stmt>& stmts, bool keep) const {
    Stmt body = seq(stmts);
    for (size_t k = inner.size(); k-- > 0;) body = Allocate(inner[k]->buffer, body);
    return keep ? Stmt(Allocate(alloc->buffer, body)) : body;
  }
};

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

// reverse_compute_inline of a buffer that several statements write (the
// pieces of a concatenation): each store of the buffer becomes the
// reader's store at that element, its load of the buffer the stored
// value, and the buffer goes.  The writers may store anywhere (any loops,
// any indices) but may not read the buffer, so each store is a whole
// element; the reader may not read what it writes, nor anything the
// statements from the first writer on write, so that computing an
// element earlier, or twice where two stores overlap (the last one
// stands, as before), changes nothing.  Returns the scope's statements
// without the allocation.
Stmt into_writers(const Scope& scope, const std::vector<size_t>& writers, size_t reader, const ElementwiseNest& nest,
                  const std::string& name) {
  const std::vector<Stmt>& parts = scope.parts;
  const BufferNode* buffer = scope.alloc->buffer.get();
  const BufferNode* output = nest.store->buffer.get();
  auto why = [&](const std::string& text) { refuse("reverse_compute_inline", text); };
  // Every element a writer stores must be one the reader reads (else its
  // store would land outside the reader's output).  The reader reads the
  // buffer at its loop variables, one per dimension (checked by the caller).
  for (size_t k = 0; k < nest.loops.size(); ++k) {
    if (!same_expression(Any(nest.loops[k]->extent), buffer->shape[k]))
      why("the reader of '" + name + "' does not read all of it (loop %" + nest.loops[k]->loop_var->name +
          " against dimension " + std::to_string(k) + ")");
  }
  std::set<const Object*> read;
  for (const Access& a : accesses(parts[reader]))
    if (!a.store) read.insert(a.buffer->data.get());
  if (read.count(output->data.get())) why("the reader of '" + name + "' reads '" + output->name + "', which it writes");
  for (size_t k = writers.front(); k < reader; ++k) {
    for (const Access& a : accesses(parts[k])) {
      if (a.buffer->data.get() == output->data.get())
        why("a statement before the reader of '" + name + "' uses '" + output->name + "'");
      if (a.store && a.buffer->data.get() != buffer->data.get() && read.count(a.buffer->data.get()))
        why("a writer of '" + name + "' writes '" + a.buffer->name + "', which its reader reads");
      if (!a.store && a.buffer->data.get() == buffer->data.get())
        why("a writer of '" + name + "' reads it (its elements are not written whole by one store)");
    }
  }
  StmtRule store_rule = [&](const Stmt& st) -> std::optional<Stmt> {
    const auto* store = st.as<BufferStoreNode>();
    if (!store || store->buffer->data.get() != buffer->data.get()) return std::nullopt;
    if (store->buffer.get() != buffer || store->value.dtype().lanes != 1)
      why("'" + name + "' is written through a view or as a vector; inline before FlattenBuffer and VectorizeLoop");
    std::unordered_map<const Object*, PrimExpr> with = bind_indices(nest.vars, store->indices);
    PrimExpr value = store->value;
    ExprRule loads = [&](const PrimExpr& e) -> std::optional<PrimExpr> {
      const auto* load = e.as<BufferLoadNode>();
      if (!load || load->buffer->data.get() != buffer->data.get()) return std::nullopt;
      return value;
    };
    return rewrite(substitute(ref_of<Stmt>(nest.store), with), loads, nullptr);
  };
  std::vector<Stmt> rest;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k == reader) continue;
    bool writes = std::find(writers.begin(), writers.end(), k) != writers.end();
    rest.push_back(writes ? rewrite(parts[k], nullptr, store_rule) : parts[k]);
  }
  return scope.rebuild(rest, false);
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
    refuse("compute_inline", "'" + name +
                                 "' is not written by one loop nest storing each element once at its loop "
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
      refuse("compute_inline", "'" + name +
                                   "' is read through a view or as a vector; inline before FlattenBuffer "
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
  std::vector<size_t> producers;
  std::optional<size_t> consumer;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (touches(parts[k], buffer, true)) {
      producers.push_back(k);
    } else if (touches(parts[k], buffer)) {
      if (consumer) refuse("reverse_compute_inline", "'" + name + "' is read by more than one statement");
      consumer = k;
    }
  }
  if (producers.empty() || !consumer || *consumer < producers.back()) {
    refuse("reverse_compute_inline", "'" + name + "' needs statements that write it and a later one that reads it");
  }
  auto nest = elementwise_nest(parts[*consumer]);
  if (!nest) refuse("reverse_compute_inline", "the reader of '" + name + "' is not an elementwise loop nest");
  const BufferNode* output = nest->store->buffer.get();
  for (const Access& a : accesses(parts[*consumer])) {
    if (a.buffer->data.get() == buffer->data.get() && !indices_are(a.indices, nest->vars)) {
      refuse("reverse_compute_inline",
             "the reader of '" + name + "' reads it at " + indices_text(a.indices) + ", not at its own indices");
    }
  }
  if (producers.size() > 1) {
    func_ = with_new_body(func_, replace(func_->body, alloc, into_writers(scope, producers, *consumer, *nest, name)));
    return;
  }
  size_t producer = producers.front();
  for (size_t k = producer + 1; k < *consumer; ++k) {
    if (touches(parts[k], output)) {
      refuse("reverse_compute_inline", "a statement between writer and reader uses '" + output->name + "'");
    }
  }
  if (touches(parts[producer], output))
    refuse("reverse_compute_inline", "the writer of '" + name + "' uses '" + output->name + "'");
  // The writer's outer loops, one per dimension, at whose level every
  // store to the buffer is at exactly those loop variables.
  const auto* top = parts[producer].as<ForNode>();
  if (!top) refuse("reverse_compute_inline", "the writer of '" + name + "' is not a loop nest");
  std::vector<const ForNode*> chain = perfect_nest(top);
  size_t rank = nest->vars.size();
  if (chain.size() < rank)
    refuse("reverse_compute_inline", "the writer of '" + name + "' has fewer perfectly nested loops than dimensions");
  std::vector<const VarNode*> writer_vars;
  for (size_t k = 0; k < rank; ++k) {
    writer_vars.push_back(chain[k]->loop_var.get());
    if (const_int(chain[k]->min) != 0 || !same_expression(Any(chain[k]->extent), Any(nest->loops[k]->extent))) {
      refuse("reverse_compute_inline", "loop %" + chain[k]->loop_var->name + " of the writer does not match loop %" +
                                           nest->loops[k]->loop_var->name + " of the reader");
    }
  }
  for (const Access& a : accesses(parts[producer])) {
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
    rest.push_back(k == producer ? replace(parts[k], level, new_level) : parts[k]);
  }
  func_ = with_new_body(func_, replace(func_->body, alloc, scope.rebuild(rest, true)));
}

}  // namespace loom::tir
