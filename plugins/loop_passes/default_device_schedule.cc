// DefaultDeviceSchedule gives each loop nest of a prim function a thread
// binding, so that SplitHostDevice can turn it into a kernel: the
// schedule a device target's default pipeline runs where a CPU target
// runs AutoSchedule (docs/devices.md, "The default device schedule").
//
// It runs after FuseTIR (one nest per operator, multi-dimensional
// buffers) and before SplitHostDevice.  For each nest not inside a loop:
//   - the leading loops of its perfect nest whose iterations write
//     disjoint elements (every store outside their own allocations uses
//     the loop's variable: the spatial loops of an elementwise operator,
//     the rows of a reduction) are fused into one, split by the block
//     size and bound to blockIdx.x and threadIdx.x; what is below them
//     (a reduction loop) runs serially in each thread;
//   - a nest with no such loop (a reduction to one value) and a store
//     outside any loop run on one thread, in a loop of extent one bound to
//     blockIdx.x.
// A function that already has a bound loop was scheduled by hand and is
// left as it is.  Every step is a schedule primitive, whose checks hold;
// results are bit-identical to the unscheduled function (no reduction is
// reordered).  Leaves every store of every function under a bound loop.
#include "default_device_schedule.h"

#include <loom/arith/simplify.h>
#include <loom/target/target.h>
#include <loom/tir/builder.h>
#include <loom/tir/functor.h>
#include <loom/tir/schedule.h>
#include <loom/tir/util.h>
#include <loom/transform/prim_pass.h>

#include <algorithm>
#include <set>
#include <unordered_set>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here

namespace {

// Whether the iterations of `f` write disjoint elements: every store in
// it, to a buffer not allocated inside it, has an index that uses its
// variable.
bool is_spatial(const ForNode* f) {
  std::unordered_set<const Object*> local;
  bool spatial = true;
  pre_order(f->body, [&](const Stmt& s) {
    if (const auto* a = s.as<AllocateNode>()) local.insert(a->buffer->data.get());
    if (const auto* store = s.as<BufferStoreNode>()) {
      if (!local.count(store->buffer->data.get()) && !uses_var(Any(store->indices), f->loop_var.get())) spatial = false;
    }
    return spatial;
  });
  return spatial;
}

// A loop of extent one bound to blockIdx.x around `s`: one thread runs it.
Stmt on_one_thread(const Stmt& s, const std::string& name) {
  DataType i64 = DataType::Int(64);
  return For(Var(name, i64), IntImm(i64, 0), IntImm(i64, 1), ForKind::kThreadBinding, s, "blockIdx.x");
}

// Statements outside any loop that touch memory, and nests with no
// spatial loop, put on one thread; `taken` holds the loop names in use.
Stmt bind_loose_work(const Stmt& s, std::set<std::string>& taken) {
  if (const auto* loop = s.as<ForNode>()) {
    if (is_spatial(loop)) return s;
  } else if (!s.as<BufferStoreNode>() && !s.as<EvaluateNode>()) {
    return map_children(s, [](const PrimExpr& e) { return e; },
                        [&](const Stmt& c) { return bind_loose_work(c, taken); });
  } else if (s.as<EvaluateNode>()) {
    bool loads = false;
    pre_order(s, [](const Stmt&) { return true; }, [&](const PrimExpr& e) {
      loads = loads || e.as<BufferLoadNode>();
      return !loads;
    });
    if (!loads) return s;  // no memory touched: stays on the host
  }
  std::string name = "single";
  for (int k = 1; taken.count(name); ++k) name = "single_" + std::to_string(k);
  taken.insert(name);
  return on_one_thread(s, name);
}

// The names of the spatial loops not inside a loop (after bind_loose_work,
// every other loop not inside a loop is bound).
void spatial_roots(const Stmt& s, std::vector<std::string>& roots) {
  if (const auto* loop = s.as<ForNode>()) {
    if (loop->for_kind() != ForKind::kThreadBinding) roots.push_back(loop->loop_var->name);
    return;
  }
  map_children(s, [](const PrimExpr& e) { return e; }, [&](const Stmt& c) {
    spatial_roots(c, roots);
    return c;
  });
}

PrimFunc schedule(const PrimFunc& f, int64_t block) {
  if (has_thread_binding(f->body)) return f;
  std::set<std::string> taken;
  pre_order(f->body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) taken.insert(loop->loop_var->name);
    return true;
  });
  Stmt body = bind_loose_work(f->body, taken);
  // (The schedule may rename loops apart: the roots are named in it.)
  Schedule sch(body.same_as(f->body) ? f : with_body(*f.get(), body));
  std::vector<std::string> roots;
  spatial_roots(sch.func()->body, roots);
  for (const std::string& root : roots) {
    // The leading spatial loops of the perfect nest, fused into one.
    const ForNode* top = nullptr;
    pre_order(sch.func()->body, [&](const Stmt& s) {
      const auto* loop = s.as<ForNode>();
      if (loop && loop->loop_var->name == root) top = loop;
      return !top;
    });
    std::vector<const ForNode*> nest = perfect_nest(top);
    std::vector<std::string> spatial;
    for (const ForNode* loop : nest) {
      if (!is_spatial(loop)) break;
      spatial.push_back(loop->loop_var->name);
    }
    std::string fused = spatial[0];
    for (size_t k = 1; k < spatial.size(); ++k) {
      try {
        fused = sch.fuse(fused, spatial[k]);
      } catch (const ScheduleError&) {
        break;  // bounds that depend on an outer loop: the rest runs in each thread
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
  transform::PassInfo info{
      "DefaultDeviceSchedule",
      "a thread binding for each loop nest, for a parallel device: the leading loops that write disjoint elements "
      "fused, split by the block size and bound to blockIdx.x and threadIdx.x; the rest serial in each thread",
      0,
      {},
      {{"block_size", "int", Any(int64_t{128}),
        "threads per block (work-group), at most the target's max-work-group-size where it has one", 1, std::nullopt}},
      {},
      {},
      {"*"}};
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext& context) {
    int64_t block = context.get_config("DefaultDeviceSchedule.block_size").as_int();
    target::Target target = target::target_of(module);
    if (target.defined() && target->attrs.contains("max-work-group-size")) {
      int64_t most = target.attr("max-work-group-size").as_int();
      if (most > 0) block = std::min(block, most);
    }
    std::map<std::string, Any> changed =
        transform::rewrite_prim_funcs(module, [&](const std::string&, const PrimFunc& f) { return schedule(f, block); });
    return module.with_functions(changed);
  });
}

}  // namespace loom::loop
