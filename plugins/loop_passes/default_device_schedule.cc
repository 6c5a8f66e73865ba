// DefaultDeviceSchedule gives each loop nest of a prim function a thread
// binding, so that SplitHostDevice can turn it into a kernel: the
// schedule a device target's default pipeline runs where a CPU target
// runs AutoSchedule (docs/devices.md, "The default device schedule").
//
// It runs after FuseTIR (one nest per operator, multi-dimensional
// buffers) and before SplitHostDevice.  For each nest not inside a loop,
// the first of these that applies:
//   - a contraction (C[i] = 0; C[i] += x * y over reduction loops: matmul,
//     dense, conv2d) with at least 16 x 16 outputs gets shared-memory
//     tiles (tiled_contraction, device_kernels.h);
//   - a nest with fewer outputs (rows) than elements in its largest
//     reduction gets a block per row, its reductions across the block's
//     threads (cross_thread_rows);
//   - otherwise the leading loops of its perfect nest whose iterations
//     write disjoint elements (every store outside their own allocations
//     uses the loop's variable: the spatial loops of an elementwise
//     operator, the rows of a reduction) are fused into one, split by the
//     block size and bound to blockIdx.x and threadIdx.x; what is below
//     them (a reduction loop) runs serially in each thread;
//   - a nest with no such loop (a reduction to one value) runs on one
//     block (across its threads where cross_thread_rows takes it, else on
//     one thread), and a store outside any loop on one thread.
// A function that already has a bound loop was scheduled by hand and is
// left as it is; one marked scheduled without one runs on one thread.  The tiles and the thread-per-output schedule
// keep each output's summation order (bit-identical results); a cross-thread sum adds in another order, as rfactor
// does.  Leaves every store of every function under a bound loop.
#include "default_device_schedule.h"

#include "auto_schedule.h"
#include "device_kernels.h"

#include <loom/arith/simplify.h>
#include <loom/target/target.h>
#include <loom/tir/builder.h>
#include <loom/tir/functor.h>
#include <loom/schedule/schedule.h>
#include <loom/tir/util.h>
#include <loom/transform/prim_pass.h>

#include <algorithm>
#include <set>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here

namespace {

// A loop of extent one bound to blockIdx.x around `s`: one block runs it
// (one thread, unless `s` binds threads itself).
Stmt on_one_thread(const Stmt& s, const std::string& name) {
  DataType i64 = DataType::Int(64);
  return For(Var(name, i64), IntImm(i64, 0), IntImm(i64, 1), ForKind::kThreadBinding, s, "blockIdx.x");
}

// Statements outside any loop that touch memory, and nests with no
// spatial loop, put on one block (of `threads` threads where the
// reductions can be spread over them); `taken` holds the names in use.
Stmt bind_loose_work(const Stmt& s, std::set<std::string>& taken, int64_t threads) {
  if (const auto* loop = s.as<ForNode>()) {
    if (writes_disjoint(loop)) return s;
    FreshNames names(taken);
    if (largest_reduction(s) > 1) {
      if (std::optional<Stmt> rows = cross_thread_rows(s, threads, names)) return on_one_thread(*rows, names("single"));
    }
  } else if (!s.as<BufferStoreNode>() && !s.as<EvaluateNode>()) {
    return map_children(
        s, [](const PrimExpr& e) { return e; }, [&](const Stmt& c) { return bind_loose_work(c, taken, threads); });
  } else if (s.as<EvaluateNode>()) {
    bool loads = false;
    pre_order(
        s, [](const Stmt&) { return true; },
        [&](const PrimExpr& e) {
          loads = loads || e.as<BufferLoadNode>();
          return !loads;
        });
    if (!loads) return s;  // no memory touched: stays on the host
  }
  return on_one_thread(s, FreshNames(taken)("single"));
}

// The names of the spatial loops not inside a loop (after bind_loose_work,
// every other loop not inside a loop is bound).
void spatial_roots(const Stmt& s, std::vector<std::string>& roots) {
  if (const auto* loop = s.as<ForNode>()) {
    if (loop->for_kind() != ForKind::kThreadBinding) roots.push_back(loop->loop_var->name);
    return;
  }
  map_children(
      s, [](const PrimExpr& e) { return e; },
      [&](const Stmt& c) {
        spatial_roots(c, roots);
        return c;
      });
}

const ForNode* find_loop(const Stmt& body, const std::string& name) {
  const ForNode* found = nullptr;
  pre_order(body, [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    if (loop && loop->loop_var->name == name) found = loop;
    return !found;
  });
  return found;
}

Stmt replace(const Stmt& body, const Object* node, const Stmt& with) {
  return Rewriter()
      .pre_stmt([&](const Stmt& s) -> std::optional<Stmt> {
        if (s.get() == node) return with;
        return std::nullopt;
      })
      .run(body);
}

PrimFunc schedule(const PrimFunc& f, int64_t block, int64_t tile_threads) {
  if (has_thread_binding(f->body)) return f;
  // A function marked scheduled runs its loops in order (a scatter, a
  // running sum: docs/operators.md): on one thread.
  if (f->attrs.contains(kScheduledAttr) && f->attrs.at(kScheduledAttr).as_bool()) {
    return with_body(*f.get(), on_one_thread(f->body, "serial_block"));
  }
  // Loop and buffer names in use: new ones are fresh.
  std::set<std::string> taken;
  for (const Buffer& b : f.buffer_params()) taken.insert(b->name);
  pre_order(f->body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) taken.insert(loop->loop_var->name);
    if (const auto* a = s.as<AllocateNode>()) taken.insert(a->buffer->name);
    return true;
  });
  Stmt body = bind_loose_work(f->body, taken, block);
  // (The schedule may rename loops apart: the roots are named in it.)
  Schedule sch(body.same_as(f->body) ? f : with_body(*f.get(), body));
  std::vector<std::string> roots;
  spatial_roots(sch.func()->body, roots);
  FreshNames names(taken);
  for (const std::string& root : roots) {
    const ForNode* top = find_loop(sch.func()->body, root);
    std::vector<const ForNode*> spatial_loops;
    for (const ForNode* loop : perfect_nest(top)) {
      if (!writes_disjoint(loop)) break;
      spatial_loops.push_back(loop);
    }
    if (std::optional<Stmt> tiles = tiled_contraction(spatial_loops, tile_threads, names)) {
      sch = Schedule(with_body(*sch.func().get(), replace(sch.func()->body, top, *tiles)));
      continue;
    }
    // The leading spatial loops of the perfect nest, fused into one.
    std::vector<std::string> spatial;
    for (const ForNode* loop : spatial_loops) spatial.push_back(loop->loop_var->name);
    std::string fused = spatial[0];
    size_t fused_count = 1;
    for (; fused_count < spatial.size(); ++fused_count) {
      try {
        fused = sch.fuse(fused, spatial[fused_count]);
      } catch (const ScheduleError&) {
        break;  // bounds that depend on an outer loop: the rest runs in each thread
      }
    }
    // A block per row where there are fewer rows than reduced elements.
    const ForNode* row = find_loop(sch.func()->body, fused);
    std::optional<int64_t> rows = const_int(row->extent);
    if (fused_count == spatial.size() && rows && *rows < largest_reduction(row->body)) {
      if (std::optional<Stmt> kernel = cross_thread_rows(row->body, block, names)) {
        Stmt bound = For(row->loop_var, row->min, row->extent, ForKind::kThreadBinding, *kernel, "blockIdx.x");
        sch = Schedule(with_body(*sch.func().get(), replace(sch.func()->body, row, bound)));
        continue;
      }
    }
    auto [outer, inner] = sch.split(fused, block);
    sch.bind(outer, "blockIdx.x");
    sch.bind(inner, "threadIdx.x");
  }
  return with_body(*sch.func().get(), arith::simplify(sch.func()->body));
}

}  // namespace

transform::Pass DefaultDeviceSchedule() {
  transform::PassInfo info =
      transform::PassInfo::named("DefaultDeviceSchedule")
          .summary(
              "a thread binding for each loop nest, for a parallel device: contractions (matmul, dense, conv2d) in "
              "shared-memory tiles; nests with fewer rows than reduced elements a block per row with cross-thread "
              "reductions; otherwise the leading loops that write disjoint elements fused, split by the block size and "
              "bound to blockIdx.x and threadIdx.x, the rest serial in each thread")
          .options(
              {SchemaField{"block_size", "int", Any(int64_t{128}),
                           "threads per block (work-group), at most the target's max-work-group-size where it has one"}
                   .at_least(1),
               SchemaField{"tile_threads", "int", Any(int64_t{64}),
                           "threads per block of a contraction's shared-memory tiles: 64 (8 x 8 threads, 64 x 64 "
                           "outputs; best on PoCL) or 256 (16 x 16 threads, 128 x 128 outputs; GPUs), at most the "
                           "target's max-work-group-size; below 64, no tiles"}
                   .at_least(1)})
          .preserves({"*"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext& context) {
    int64_t block = context.get_config("DefaultDeviceSchedule.block_size").as_int();
    int64_t tile_threads = context.get_config("DefaultDeviceSchedule.tile_threads").as_int();
    std::map<std::string, Any> changed = transform::rewrite_prim_funcs(
        module,
        [&](const std::string& name, const PrimFunc& f) {
          int64_t b = block, tiles = tile_threads;
          target::Target target = target::function_target(module, name);
          if (target.defined() && target->attrs.contains("max-work-group-size")) {
            int64_t most = target.attr("max-work-group-size").as_int();
            if (most > 0) b = std::min(b, most), tiles = std::min(tiles, most);
          }
          return schedule(f, b, tiles);
        },
        target::on_device_target);
    return module.with_functions(changed);
  });
}

}  // namespace loom::loop
