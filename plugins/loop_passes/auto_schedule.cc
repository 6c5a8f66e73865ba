// AutoSchedule picks a schedule (loom/schedule/schedule.h) for each prim function
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
//
// This file holds the pass, the order of the steps above and the choice of
// each nest's rule (StageScheduler::run); the rules live beside it, one
// file each (auto_schedule_rules.h lists them).
#include "auto_schedule.h"

#include <cstdio>
#include <memory>

#include "auto_schedule_rules.h"
#include "tuning.h"

#include <loom/arith/simplify.h>
#include <loom/graph/calls.h>
#include <loom/ir/text.h>
#include <loom/target/target.h>
#include <loom/tir/layout.h>
#include <loom/transform/prim_pass.h>

#include <optional>
#include <set>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here
using arith::simplify;
using namespace auto_schedule;  // NOLINT: the rules and what they share (auto_schedule_rules.h)

namespace auto_schedule {

// The nest `root` scheduled by the rule its shape calls for: a reduction
// register-tiled, or else in partial sums per lane with its other loops
// vectorized; any other nest vectorized inside; the outer loop parallel.
void StageScheduler::run(const std::string& root) {
  const ForNode* top = find(s_, root);
  parallel_ = decide("nest.parallel", worth_threads(top));
  if (has_reduction(top)) {
    if (auto parts = partition_rows(root)) {
      panel_ = 0;
      run(parts->first);
      if (!panel_ || !tail_over_panels(parts->second, panel_)) run(parts->second);
      return;
    }
    if (!tile_reduction(root)) {
      vector_reductions(root);
      vectorize_leaves(root);
      parallel_outer(root);
    }
  } else {
    parallel_outer(vectorize_inner(root));
  }
}

}  // namespace auto_schedule

namespace {

// Whether the nest `top` reads `buffer`.
bool reads(const ForNode* top, const std::string& buffer) {
  bool found = false;
  Visitor v;
  v.on<BufferLoadNode>([&](const BufferLoadNode* l) {
    if (l->buffer->name == buffer) found = true;
    v.visit_children(l);
  });
  v.visit(Any(top->body));
  return found;
}

// Whether any nest reading `buffer` has a reduction.
bool read_by_reduction(const Schedule& s, const std::string& buffer) {
  std::vector<std::string> nests;
  roots(s.func()->body, nests);
  for (const std::string& n : nests) {
    const ForNode* f = find(s, n);
    if (reads(f, buffer) && has_reduction(f)) return true;
  }
  return false;
}

// The most multiply-adds per padded element for which a convolution
// reads its padded input in place (pad_in_place).
constexpr int64_t kPadInPlaceWork = 128;

// Whether the padded copy `buffer` is better read in place by the
// convolutions that read it: it is select(in bounds, load, 0) whose
// condition and source index leave its last axis alone (a channels-last
// input, padded along rows and columns), and each reduction reading it
// does fewer than kPadInPlaceWork multiply-adds per padded element.
// Inlined, each read becomes a check per window tap that does not depend
// on the vector lanes, and LoopPartition splits the output's rows and
// columns so that the interior reads the input directly.  That pays
// where the copy is a large share of the work: a depthwise convolution
// (about 9 multiply-adds per element; MobileNetV2's stride-2 layer over
// 96x112x112 copied 5 MB first and took twice as long) or a stem with 3
// input channels (about 70); a 3x3 convolution over 64 channels (about
// 540) gains nothing and its edges, partitioned, double its code.
bool pad_in_place(const Schedule& s, const std::string& buffer) {
  std::vector<std::string> nests;
  roots(s.func()->body, nests);
  bool pad = false;
  int64_t elements = 1;
  for (const std::string& n : nests) {
    const ForNode* top = find(s, n);
    std::vector<const ForNode*> chain = perfect_nest(top);
    const auto* st = chain.back()->body.as<BufferStoreNode>();
    if (st && st->buffer->name == buffer) {
      const auto* select = st->value.as<SelectNode>();
      const auto* load = select ? select->true_value.as<BufferLoadNode>() : nullptr;
      // The padding: any constant (a convolution's 0, a max pooling's
      // -inf, a quantized input's zero point).
      bool constant = select && (select->false_value.as<FloatImmNode>() || select->false_value.as<IntImmNode>());
      const VarNode* last = chain.back()->loop_var.get();
      size_t n_st = st->indices.size(), n_load = load ? load->indices.size() : 0;
      if (!load || !constant || !n_st || !n_load || st->indices[n_st - 1].object() != last ||
          load->indices[n_load - 1].object() != last || uses_var(Any(select->condition), last))
        return false;
      for (const Any& e : st->buffer->shape) {
        auto extent = const_int(e.cast<PrimExpr>());
        if (!extent) return false;
        elements *= *extent;
      }
      pad = true;
      continue;
    }
    if (!reads(top, buffer) || !has_reduction(top)) continue;
    auto work = work_of(top);
    if (!work || *work >= kPadInPlaceWork * elements) return false;
  }
  return pad;
}

// The most temporaries AutoSchedule tries to inline in one function.
constexpr size_t kMaxInlined = 64;

// The vector width of the target function `name` is built for (its kind's
// trait), 128 bits without a target.
int vector_bits_of(const ir::IRModule& module, const std::string& name) {
  target::Target t = target::function_target(module, name);
  return static_cast<int>(t.defined() ? target::vector_bits(t) : 128);
}

}  // namespace

// The base decider takes the rule's own choice.
int64_t Decider::choose(const std::string&, const std::vector<int64_t>&, int64_t preferred) { return preferred; }

// The function `f` scheduled by AutoSchedule's rules with `decider`'s choices (auto_schedule.h).
Schedule schedule_with(const PrimFunc& f, int bits, const std::set<std::string>& constant, int64_t min_work,
                       Decider& decider, const std::set<std::string>& native) {
  Schedule s(f);
  // The vector width: the target's, or half of it from 256 bits up.
  if (bits >= 256) bits = static_cast<int>(decider.choose("vector.bits", {bits, bits / 2}, bits));
  // Each inlining walks the function: the first kMaxInlined temporaries
  // are tried, so the pass stays linear in a function with very many
  // (docs/passes.md, "AutoSchedule"; docs/reliability.md, "Cost").
  std::vector<std::string> temporaries = allocated(s);
  if (temporaries.size() > kMaxInlined) temporaries.resize(kMaxInlined);
  for (const std::string& b : temporaries)
    if (!read_by_reduction(s, b) || pad_in_place(s, b)) attempt([&] { s.compute_inline(b); });
  temporaries = allocated(s);
  if (temporaries.size() > kMaxInlined) temporaries.resize(kMaxInlined);
  for (const std::string& b : temporaries) attempt([&] { s.reverse_compute_inline(b); });
  std::vector<std::string> nests;
  roots(s.func()->body, nests);
  StageScheduler stages(s, bits, constant, min_work, decider, native);
  for (size_t k = 0; k < nests.size(); ++k) {
    // An elementwise nest right before a reduction (a convolution's padded
    // input) is scheduled after it, so that it can move into the
    // reduction's outer loop when each iteration reads its own part.
    bool before_reduction =
        k + 1 < nests.size() && !has_reduction(find(s, nests[k])) && has_reduction(find(s, nests[k + 1]));
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

// The scheduled function, simplified; `f` itself when nothing changed.
PrimFunc finish_schedule(const Schedule& s, const PrimFunc& f) {
  Stmt body = simplify(s.func()->body);
  if (s.func().same_as(f) && body.same_as(f->body)) return f;
  return with_body(*s.func().get(), body);
}

namespace {
// The function `f` scheduled by the rules' own choices.
PrimFunc schedule(const PrimFunc& f, int bits, const std::set<std::string>& constant, int64_t min_work,
                  const std::set<std::string>& native) {
  Decider rules;
  return finish_schedule(schedule_with(f, bits, constant, min_work, rules, native), f);
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
      std::fprintf(stderr,
                   "loom: warning: tuning database %s:%d: the record of task %s does not apply to @%s (%s); "
                   "it is skipped\n",
                   database.path().c_str(), r->line, hash.c_str(), name.c_str(), e.what());
    }
  }
  return PrimFunc();
}
}  // namespace

transform::Pass AutoSchedule() {
  transform::PassInfo info =
      transform::PassInfo::named("AutoSchedule")
          .summary(
              "a schedule for each prim function from its shape: elementwise temporaries inlined, epilogues moved into "
              "reductions, matmul-like reductions register-tiled (constant weights packed at compile time), inner "
              "loops vectorized, outer loops parallel")
          .opt_level(2)
          .options({SchemaField{"parallel_min_work", "int", Any(int64_t{32768}),
                                "a loop nest with fewer stores (each counted once per iteration of the loops around "
                                "it) runs on one thread: a parallel region costs a few microseconds"}
                        .at_least(0)})
          .preserves({"types_inferred", "ops_lowered", "fused", "intrinsics_lowered"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext& context) {
    int64_t min_work = context.get_config("AutoSchedule.parallel_min_work").as_int();
    std::map<std::string, std::set<size_t>> constant = graph::constant_inputs(module);
    std::set<std::string> relaid;  // functions that gave an input a layout
    std::string database_path = context.get_config("tuning.database").cast<std::string>();
    std::shared_ptr<const TuningDatabase> database;
    std::string cpu;
    if (!database_path.empty()) {
      database = TuningDatabase::open(database_path);
      cpu = context.get_config("tuning.cpu").cast<std::string>();
      if (cpu.empty()) cpu = target::detect_cpu();
    }
    std::map<std::string, Any> changed = transform::rewrite_prim_funcs(
        module,
        [&](const std::string& name, const PrimFunc& f) {
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
          after = schedule(f, vector_bits_of(module, name), constant_buffers, min_work,
                           target::native_intrinsics(target::function_target(module, name)));
          if (param_layouts(*after.get()) != param_layouts(*f.get())) relaid.insert(name);
          return after;
        },
        target::on_cpu_target);
    return graph::relayout_constant_inputs(module.with_functions(changed), relaid);
  });
}

}  // namespace loom::loop