// SplitHostDevice splits each prim function of a module built for a device
// target into the host code that launches kernels and the kernels
// (docs/devices.md, "The host/device split").  It runs last among the
// loop passes of a device pipeline, after the loops are bound to threads
// (DefaultDeviceSchedule or a hand schedule) and intrinsics are lowered.
//
// Each outermost thread-bound loop, with everything inside it, becomes a
// new prim function NAME_kernelK (attribute "device_kernel"): its
// parameters are the buffers it touches, then the scalars it uses that are
// bound outside it (shape variables, host loop and let variables).  In
// its place the host function gets
//   tir.launch("NAME_kernelK", grid x/y/z, block x/y/z, buffers..., scalars...)
// with the grid (blockIdx) and block (threadIdx) sizes the kernel's bound
// loops have, computed on the host (symbolic dimensions included).  The
// host function keeps the rest (lets, allocations of intermediate
// buffers, which now live on the device, serial loops around launches)
// and takes the attribute "device_type": the DLPack device type its
// buffers are on, which the host codegen checks its arguments against and
// allocates through.
//
// Refused, naming the function: bound loops in a module for a CPU target;
// on a device target, a buffer read or written on the host (a store that
// no loop binding covers); one thread axis bound with two extents in one
// kernel; a launch size that uses a variable bound inside the kernel.
#include "split_host_device.h"

#include <loom/target/target.h>
#include <loom/tir/builder.h>
#include <loom/tir/functor.h>
#include <loom/tir/util.h>
#include <loom/transform/prim_pass.h>
#include <loom/transform/property.h>
#include <loom/ir/text.h>
#include <loom/object/structural.h>

#include <map>
#include <set>
#include <unordered_set>

namespace loom::loop {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here

namespace {

template <class Ref, class Node>
Ref ref_of(const Node* node) {
  return downcast<Ref>(ObjectRef(ObjectPtr<Object>(const_cast<Node*>(node))));
}

const char* const kAxes[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z"};

class Splitter {
 public:
  // `placed`: the function's own target (target::placed_target), which its
  // kernels carry so that target's codegen builds them; may be undefined.
  Splitter(std::string name, const PrimFunc& f, std::set<std::string>& names, target::Target placed)
      : name_(std::move(name)), names_(names), placed_(std::move(placed)) {
    for (const Any& p : f->params) {
      if (const auto* v = p.as_object_ref().as<VarNode>()) host_vars_.insert(v);
      if (const auto* b = p.as_object_ref().as<BufferNode>()) add_buffer_vars(b);
    }
  }

  Stmt run(const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) {
      if (loop->for_kind() == ForKind::kThreadBinding) return launch(s);
      host_vars_.insert(loop->loop_var.get());
    } else if (const auto* let = s.as<LetStmtNode>()) {
      host_vars_.insert(let->var.get());
    } else if (const auto* a = s.as<AllocateNode>()) {
      add_buffer_vars(a->buffer.get());
    } else if (const auto* store = s.as<BufferStoreNode>()) {
      fail("buffer '" + store->buffer->name + "' is written outside any thread-bound loop, on the host, where the " +
           "device's memory cannot be touched (bind the loop around it)");
    }
    pre_order(
        s, [](const Stmt&) { return false; },
        [&](const PrimExpr& e) {
          if (const auto* load = e.as<BufferLoadNode>()) {
            fail("buffer '" + load->buffer->name + "' is read outside any thread-bound loop, on the host, where the " +
                 "device's memory cannot be touched");
          }
          return true;
        });
    return map_children(
        s, [](const PrimExpr& e) { return e; }, [&](const Stmt& c) { return run(c); });
  }

  std::map<std::string, Any> kernels;

 private:
  [[noreturn]] void fail(const std::string& what) const { LOOM_THROW(Error) << what; }

  void add_buffer_vars(const BufferNode* b) {
    for (const VarNode* v : used_vars(Any(b->shape), [](const VarNode*) { return true; })) host_vars_.insert(v);
  }

  // The kernel rooted at the bound loop `root`, and the launch that
  // replaces it.
  Stmt launch(const Stmt& root) {
    std::string kernel = name_ + "_kernel" + std::to_string(kernels.size());
    while (names_.count(kernel)) kernel += "_";
    names_.insert(kernel);
    // Launch sizes: one extent per axis.
    std::map<std::string, PrimExpr> extents;
    pre_order(root, [&](const Stmt& s) {
      const auto* loop = s.as<ForNode>();
      if (!loop || loop->for_kind() != ForKind::kThreadBinding) return true;
      auto [at, fresh] = extents.emplace(loop->thread, loop->extent);
      if (!fresh && !structural_equal(Any(at->second), Any(loop->extent))) {
        fail("kernel '" + kernel + "' binds " + loop->thread + " with two extents (" + ir::to_text(Any(at->second)) +
             " and " + ir::to_text(Any(loop->extent)) + ")");
      }
      return true;
    });
    for (const auto& [axis, extent] : extents) {
      for (const VarNode* v : used_vars(Any(extent), [&](const VarNode* v) { return !host_vars_.count(v); })) {
        fail("the launch size of kernel '" + kernel + "' along " + axis + " uses %" + v->name +
             ", which is bound inside the kernel");
      }
    }
    // Parameters: the buffers it touches that it does not allocate, then the
    // scalars bound outside it.
    std::vector<Buffer> buffers;
    std::unordered_set<const Object*> allocated, seen;
    pre_order(
        root,
        [&](const Stmt& s) {
          if (const auto* a = s.as<AllocateNode>()) allocated.insert(a->buffer.get());
          const BufferNode* b = nullptr;
          if (const auto* store = s.as<BufferStoreNode>()) b = store->buffer.get();
          if (b && !allocated.count(b) && seen.insert(b).second) buffers.push_back(ref_of<Buffer>(b));
          return true;
        },
        [&](const PrimExpr& e) {
          if (const auto* load = e.as<BufferLoadNode>()) {
            const BufferNode* b = load->buffer.get();
            if (!allocated.count(b) && seen.insert(b).second) buffers.push_back(ref_of<Buffer>(b));
          }
          return true;
        });
    std::unordered_set<const VarNode*> data;
    for (const Buffer& b : buffers) data.insert(b->data.get());
    std::vector<Any> params;
    std::vector<PrimExpr> args{StringImm(kernel)};
    for (const char* axis : kAxes) {
      auto e = extents.find(axis);
      DataType i64 = DataType::Int(64);
      args.push_back(e == extents.end()         ? PrimExpr(IntImm(i64, 1))
                     : e->second.dtype() == i64 ? e->second
                                                : PrimExpr(Cast(i64, e->second)));
    }
    for (const Buffer& b : buffers) {
      params.push_back(b);
      args.push_back(b->data);
    }
    std::vector<Any> everything{Any(root)};
    for (const Buffer& b : buffers) everything.push_back(Any(b));
    std::unordered_set<const VarNode*> scalars_seen;
    for (const Any& node : everything) {
      for (const VarNode* v :
           used_vars(node, [&](const VarNode* v) { return host_vars_.count(v) && !data.count(v); })) {
        if (!scalars_seen.insert(v).second) continue;
        Var var = ref_of<Var>(v);
        params.push_back(var);
        args.push_back(var);
      }
    }
    Map attrs{{"device_kernel", true}};
    if (placed_.defined()) attrs = Map{{"device_kernel", true}, {"target", placed_}};
    // Its own variables: a variable is bound in one function.
    kernels[kernel] = fresh_copy(PrimFunc(params, root, ir::Type(), attrs));
    return Evaluate(Call(DataType::Int(32), "tir.launch", args));
  }

  std::string name_;
  std::set<std::string>& names_;
  target::Target placed_;
  std::unordered_set<const VarNode*> host_vars_;  // bound outside any kernel
};

}  // namespace

transform::Pass SplitHostDevice() {
  transform::PassInfo info =
      transform::PassInfo::named("SplitHostDevice")
          .summary(
              "for a device target: each outermost thread-bound loop becomes a kernel (a prim function marked "
              "device_kernel) and, in its place, a tir.launch with its grid and block sizes; the rest stays host code")
          .establishes({transform::property::kKernelsSplit})
          // Not buffers_flat: a kernel takes its buffers with their shapes
          // (the accesses stay flat).
          .preserves({transform::property::kIntrinsicsLowered, "devices_planned"})
          .changes({"tir"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext&) {
    std::set<std::string> names;
    for (const std::string& n : module.names()) names.insert(n);
    std::map<std::string, Any> kernels;
    std::map<std::string, Any> changed =
        transform::rewrite_prim_funcs(module, [&](const std::string& name, const PrimFunc& f) {
          if (f->attrs.contains("device_kernel")) return f;
          target::Target target = target::function_target(module, name);
          int device_type = target.defined() ? target::traits_of(target).device_type : 1;
          bool bound = has_thread_binding(f->body);
          if (device_type == 1) {
            if (bound) {
              LOOM_THROW(Error) << "loops bound to threads, but the target '" << (target.defined() ? target->kind : "")
                                << "' is a CPU (bind loops only for a device target)";
            }
            return f;
          }
          Splitter split(name, f, names, target::placed_target(module, name));
          Stmt body = split.run(f->body);
          for (auto& [k, v] : split.kernels) kernels[k] = v;
          std::map<std::string, Any> attrs = f->attrs.get() ? f->attrs->items : std::map<std::string, Any>{};
          attrs["device_type"] = int64_t{device_type};
          return PrimFunc(std::vector<Any>(f->params.begin(), f->params.end()), body, f->ret, Map(attrs));
        });
    for (auto& [k, v] : kernels) changed[k] = v;
    return module.with_functions(changed);
  });
}

}  // namespace loom::loop
