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
//       be read contiguously (matmul, dense after a transposed cache_read
//       of its weight, batch matmul): init, reduction and epilogue split
//       into nests of their own; in each, register tiles of ti rows by tj
//       vectors (unrolled, the innermost loop vectorized) with the
//       reduction loops moved outside the tile and, when long, blocked so
//       that a block of the right operand stays in the L1 cache; the tile
//       loops fused and run in parallel;
//     - other nests: the innermost loop split by the vector width and
//       vectorized when its stores are contiguous, the outermost parallel.
// Every step is a schedule primitive, so a failed precondition only skips
// that step.  No step changes the order in which any output element
// accumulates, so results are bit-identical to the unscheduled function.
// Vector width: the target's (a function target.KIND.vector_bits, else
// the attribute vector-bits, else 128 bits).
#include "auto_schedule.h"

#include <loom/ir/text.h>
#include <loom/object/traversal.h>
#include <loom/target/target.h>
#include <loom/tir/schedule.h>
#include <loom/tir/util.h>

#include <functional>
#include <optional>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here

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
  if (const auto* f = s.as<ForNode>()) {
    out.push_back(f->loop_var->name);
    return;
  }
  map_children(s, [](const PrimExpr& e) { return e; },
               [&](const Stmt& c) {
                 roots(c, out);
                 return c;
               });
}


// Whether a statement contains a reduction: a store inside a loop whose
// variable its indices do not use.
bool has_reduction(const ForNode* top) {
  bool found = false;
  std::vector<const VarNode*> loops{top->loop_var.get()};
  std::function<void(const Stmt&)> walk = [&](const Stmt& st) {
    if (const auto* f = st.as<ForNode>()) {
      loops.push_back(f->loop_var.get());
      walk(f->body);
      loops.pop_back();
      return;
    }
    if (const auto* store = st.as<BufferStoreNode>()) {
      for (const VarNode* v : loops)
        if (!uses_var(Any(store->indices), v)) found = true;
      return;
    }
    map_children(st, [](const PrimExpr& e) { return e; },
                 [&](const Stmt& c) {
                   walk(c);
                   return c;
                 });
  };
  walk(top->body);
  return found;
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

// The innermost index of `indices` moves by one element per step of `j`
// (and no other index uses j): the accesses along j are contiguous.
bool contiguous_along(const Array& indices, const VarNode* j) {
  if (indices.size() == 0) return false;
  for (size_t k = 0; k + 1 < indices.size(); ++k)
    if (uses_var(indices[k], j)) return false;
  auto last = indices[indices.size() - 1].cast<PrimExpr>();
  if (!uses_var(Any(last), j)) return true;  // invariant: a broadcast
  PrimExpr rest = simplify(Sub(last, ref_var(j)));
  return !uses_var(Any(rest), j);
}

// Loads in `body` along `j` that are neither contiguous nor invariant.
std::vector<const BufferLoadNode*> strided_loads(const Stmt& body, const VarNode* j) {
  std::vector<const BufferLoadNode*> out;
  Visitor v;
  v.on<BufferLoadNode>([&](const BufferLoadNode* l) {
    if (uses_var(Any(l->indices), j) && !contiguous_along(l->indices, j)) out.push_back(l);
    v.visit_children(l);
  });
  v.visit(Any(body));
  return out;
}

class StageScheduler {
 public:
  StageScheduler(Schedule& s, int vector_bits) : s_(s), vector_bits_(vector_bits) {}

  void run(const std::string& root) {
    const ForNode* top = find(s_, root);
    if (has_reduction(top)) {
      if (!tile_reduction(root)) parallel_outer(root);
    } else {
      parallel_outer(vectorize_inner(root));
    }
  }

 private:
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
      if (extent && *extent < 16) {
        std::string second = chain[1]->loop_var->name;
        attempt([&] { outer = s_.fuse(root, second); });
      }
    }
    const ForNode* f = find(s_, outer);
    auto extent = const_int(f->extent);
    if (extent && *extent < 2) return;
    attempt([&] { s_.parallel(outer); });
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
    if (!store || !contiguous_along(store->indices, inner->loop_var.get()) ||
        !uses_var(Any(store->indices), inner->loop_var.get())) {
      return root;
    }
    if (!strided_loads(inner->body, inner->loop_var.get()).empty()) return root;
    std::string name = inner->loop_var->name;
    auto [outer, vec] = s_.split(name, lanes);
    s_.vectorize(vec);
    return name == root ? outer : root;
  }

  // The register-tiled reduction; false (schedule unchanged) when the nest
  // does not have the shape.
  bool tile_reduction(const std::string& root) {
    Schedule saved = s_;
    try {
      if (tile(root)) return true;
    } catch (const ScheduleError&) {
    }
    s_ = saved;
    return false;
  }

  bool tile(const std::string& root) {
    std::vector<const ForNode*> chain = perfect_nest(find(s_, root));
    // The spatial loops end where the body becomes a sequence (init, ...).
    size_t spatial = chain.size();
    if (chain.back()->body.as<SeqStmtNode>() == nullptr) return false;
    if (spatial < 2) return false;
    const ForNode* i = chain[spatial - 2];
    const ForNode* j = chain[spatial - 1];
    int lanes = lanes_for(j->body);
    auto ei = const_int(i->extent), ej = const_int(j->extent);
    if (lanes < 2 || !ei || !ej || *ej % lanes != 0) return false;
    std::string iname = i->loop_var->name, jname = j->loop_var->name;
    // Loads strided along j: a 2-D parameter indexed [j, r] is copied
    // transposed once (dense's weight), anything else gives up.
    for (const BufferLoadNode* l : strided_loads(j->body, j->loop_var.get())) {
      if (l->indices.size() != 2 || l->indices[0].object() != j->loop_var.get()) return false;
      s_.cache_read(l->buffer->name, {1, 0});
    }
    if (!strided_loads(find(s_, jname)->body, find(s_, jname)->loop_var.get()).empty()) return false;
    // The tile's accumulators, a row of B and a broadcast of A fit the
    // vector registers (16; 32 with 512-bit vectors).
    int64_t registers = vector_bits_ >= 512 ? 32 : 16;
    int64_t vectors = *ej / lanes;
    int64_t tj = vectors % 4 == 0 && registers >= 32 ? 4 : vectors % 2 == 0 ? 2 : 1;
    int64_t ti = 1;
    for (int64_t candidate : {8, 6, 4, 3, 2})
      if (ti == 1 && *ei % candidate == 0 && candidate * tj + tj + 1 <= registers) ti = candidate;
    if (ti * tj < 4) return false;  // too small a tile to pay
    auto [io, ii] = s_.split(iname, ti);
    auto [jo, ji] = s_.split(jname, lanes);
    auto [joo, joi] = s_.split(jo, tj);
    s_.reorder({io, joo, ii, joi, ji});
    // Init, reduction and epilogue become nests of their own over the whole
    // output, so the reduction can be blocked: a block of the reduction
    // loop (kb long) runs over every tile before the next block, which
    // keeps a kb x (tj vectors) panel of the right operand in the L1 cache.
    std::vector<std::vector<std::string>> nests = s_.decompose_reduction(io);
    for (const auto& nest : nests) {
      const std::string &tio = nest[0], &tjo = nest[1], &tii = nest[2], &tji = nest[3], &tv = nest[4];
      const ForNode* last = find(s_, tv);
      std::vector<std::string> reduction;
      if (has_loop(last->body))
        for (const ForNode* r : perfect_nest(find(s_, tv)))
          if (r != last) reduction.push_back(r->loop_var->name);
      s_.unroll(tii);
      s_.unroll(tji);
      s_.vectorize(tv);
      std::string outer_block;
      if (reduction.size() == 1) {
        auto extent = const_int(find(s_, reduction[0])->extent);
        int64_t kb = 0;
        for (int64_t candidate = 256; extent && *extent > 256 && candidate >= 64 && !kb; --candidate)
          if (*extent % candidate == 0) kb = candidate;
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
      attempt([&] { s_.parallel(tiles); });
    }
    return true;
  }

  Schedule& s_;
  int vector_bits_;
};

int vector_bits_of(const ir::IRModule& module) {
  if (!module->attrs.contains("target")) return 128;
  auto target = module->attrs.at("target").cast<target::Target>();
  if (auto f = FunctionRegistry::find("target." + target->kind + ".vector_bits")) {
    // Asked once per target, not once per prim function (the llvm plugin
    // builds a target machine to answer).
    thread_local target::Target asked;
    thread_local int answer = 0;
    if (!asked.same_as(target)) {
      answer = static_cast<int>((*f)(Any(target)).as_int());
      asked = target;
    }
    return answer;
  }
  if (target->attrs.contains("vector-bits")) {
    int64_t bits = target->attrs.at("vector-bits").as_int();
    return static_cast<int>(bits < 0 ? target::detect_vector_bits() : bits);
  }
  return 128;
}

}  // namespace

transform::Pass AutoSchedule() {
  transform::PassInfo info{
      "AutoSchedule",
      "a schedule for each prim function from its shape: elementwise temporaries inlined, epilogues moved into "
      "reductions, matmul-like reductions register-tiled, inner loops vectorized, outer loops parallel",
      2,
      {},
      {}};
  return prim_pass(info, [](const tir::PrimFuncNode& f, const ir::IRModule& module, const transform::PassContext&) {
    Schedule s(downcast<PrimFunc>(ObjectRef(ObjectPtr<Object>(const_cast<tir::PrimFuncNode*>(&f)))));
    int bits = vector_bits_of(module);
    for (const std::string& b : allocated(s))
      if (!read_by_reduction(s, b)) attempt([&] { s.compute_inline(b); });
    for (const std::string& b : allocated(s)) attempt([&] { s.reverse_compute_inline(b); });
    std::vector<std::string> nests;
    roots(s.func()->body, nests);
    StageScheduler stages(s, bits);
    for (const std::string& n : nests) stages.run(n);
    return simplify(s.func()->body);
  });
}

}  // namespace loom::loop
