#include "fuse_tir.h"

#include <map>
#include <set>
#include <unordered_map>

#include "graph_util.h"
#include "loom/arith/simplify.h"
#include "loom/ir/op.h"
#include "loom/object/structural.h"
#include "loom/tir/builder.h"
#include "loom/tir/function.h"
#include "loom/tir/functor.h"
#include "loom/tir/util.h"

namespace loom::passes {

namespace {
// The fused prim function of a primitive graph function, or nullopt when
// its body is not a chain of call_dps of prim functions.
std::optional<tir::PrimFunc> fuse(const ir::IRModule& module, const graph::FunctionNode& f) {
  // Parameters and result as buffers; symbolic dimensions become scalars.
  tir::PrimBuilder builder;
  auto tensor = [](const ir::Type& type) {
    const auto* t = type.as<ir::TensorTypeNode>();
    return t && !t->unknown_rank() ? t : nullptr;
  };
  std::unordered_map<const Object*, tir::Buffer> buffer_of;  // graph variable -> buffer
  for (const Any& p : f.params) {
    const auto* var = p.as_object_ref().as<graph::VarNode>();
    const auto* type = tensor(var->annotation.defined() ? var->annotation : var->checked_type);
    if (!type) return std::nullopt;
    buffer_of[var] = builder.param(*type, var->name);
  }
  std::vector<std::pair<const graph::VarNode*, const graph::CallNode*>> steps;
  ir::Expr cur = f.body;
  bool kernels_only = true;
  cur = graph::for_each_binding(cur, [&](const graph::LetNode& let) {
    const auto* call = let.value.as<graph::CallNode>();
    const auto* op = call ? call->callee.as<ir::OpNode>() : nullptr;
    if (!op || op->name != "call_dps") kernels_only = false;
    steps.push_back({let.var.get(), call});
  });
  if (!kernels_only) return std::nullopt;
  const auto* result = cur.as<graph::VarNode>();
  if (!result || steps.empty() || steps.back().first != result) return std::nullopt;

  const auto* output_type = tensor(steps.back().second->type_args[0].cast<ir::Type>());
  if (!output_type) return std::nullopt;
  tir::Buffer output = builder.param(*output_type, "Out");
  std::vector<tir::Buffer> intermediates;
  std::vector<tir::Stmt> body;
  for (const auto& [var, call] : steps) {
    const auto* g = call->args[0].as_object_ref().as<ir::GlobalVarNode>();
    if (!g || !module.lookup(g->name).as<tir::PrimFuncNode>()) return std::nullopt;
    tir::PrimFunc kernel = tir::fresh_copy(downcast<tir::PrimFunc>(module.lookup(g->name)));
    std::vector<tir::Buffer> kernel_buffers = kernel.buffer_params();
    const auto* inputs = call->args[1].as_object_ref().as<graph::TupleNode>();
    ir::Type out_type = call->type_args[0].cast<ir::Type>();
    if (!inputs || !tensor(out_type) || kernel_buffers.size() != inputs->fields.size() + 1) {
      return std::nullopt;
    }
    std::vector<tir::Buffer> actual;
    for (const Any& a : inputs->fields) {
      auto found = buffer_of.find(a.object());
      if (found == buffer_of.end()) return std::nullopt;  // a constant or a tuple: not fused here
      actual.push_back(found->second);
    }
    tir::Buffer out = var == result ? output : builder.buffer(*tensor(out_type), var->name);
    if (var != result) intermediates.push_back(out);
    buffer_of[var] = out;
    actual.push_back(out);
    // The kernel's buffers are ours; its scalar parameters are our
    // dimensions, substituted everywhere (its own allocations' shapes
    // included), so nothing in the fused body refers to the kernel's
    // parameters and its allocations can join ours.
    std::unordered_map<const Object*, tir::Buffer> replace;
    for (size_t k = 0; k < kernel_buffers.size(); ++k) replace[kernel_buffers[k].get()] = actual[k];
    std::unordered_map<const Object*, tir::PrimExpr> dimension;
    for (const Any& p : kernel->params) {
      const auto* scalar = p.as_object_ref().as<tir::VarNode>();
      if (!scalar) continue;
      auto bound = tir::bind_from_shapes(kernel_buffers, scalar);
      if (!bound) return std::nullopt;
      dimension[scalar] =
          arith::simplify(tir::solve_binding(*bound, actual[bound->buffer]->shape[bound->dim].cast<tir::PrimExpr>()));
    }
    Mutator m;
    m.on<tir::BufferNode>([&](const tir::BufferNode* b, const ObjectRef& self) -> Any {
      auto found = replace.find(b);
      return found == replace.end() ? Any(m.mutate_children(self)) : Any(found->second);
    });
    m.on<tir::VarNode>([&](const tir::VarNode* v, const ObjectRef& self) -> Any {
      auto found = dimension.find(v);
      return found == dimension.end() ? Any(self) : Any(found->second);
    });
    tir::Stmt stmt = m.mutate_as<tir::Stmt>(kernel->body);
    // The kernel's own allocations (a convolution's padded input) join the
    // intermediates at the top, so that each step is a loop nest in one
    // sequence, which the schedule primitives expect.
    while (const auto* a = stmt.as<tir::AllocateNode>()) {
      intermediates.push_back(a->buffer);
      stmt = a->body;
    }
    body.push_back(stmt);
  }
  tir::Stmt fused = tir::SeqStmt(body);
  for (size_t k = intermediates.size(); k-- > 0;) fused = tir::Allocate(intermediates[k], fused);
  return builder.finish(fused, Map({{"fused_from", Any(std::string("primitive graph function"))}}));
}
}  // namespace

transform::Pass FuseTIR() {
  transform::PassInfo info = transform::PassInfo::named("FuseTIR")
                                 .summary(
                                     "each primitive graph function whose body is a chain of call_dps becomes one prim "
                                     "function (intermediates allocated inside), called through call_dps")
                                 .opt_level(1)
                                 .needs({"fused", "ops_lowered"})
                                 .preserves({"ops_lowered", "fused", "intrinsics_lowered"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext&) {
    std::map<std::string, Any> prims;
    std::map<std::string, ir::Type> fused;         // name -> result type
    std::map<std::string, std::string> kernel_of;  // name -> the prim function it calls
    // Groups that fuse to the same prim function (the blocks of a network
    // repeat) share one, compiled once; the others are left to
    // DeadCodeElimination.
    std::unordered_multimap<uint64_t, std::string> by_hash;
    std::set<std::string> inlined;  // primitive functions that are not one kernel
    for (const std::string& name : module.names()) {
      const auto* f = module.lookup(name).as<graph::FunctionNode>();
      if (!f || !f->attrs.contains("primitive") || f->attrs.contains("codegen")) continue;
      auto prim = fuse(module, *f);
      if (!prim) {
        // Not one kernel: its operators run in its callers' frames, where
        // every shape variable is bound (a VM function of its own would
        // have to bind them again from its arguments, and cannot from a
        // sum of sizes the data decides).
        inlined.insert(name);
        continue;
      }
      {
        fused[name] = f->ret_type.defined() ? f->ret_type : f->body->checked_type;
        kernel_of[name] = name;
        uint64_t hash = structural_hash(Any(*prim));
        auto [first, last] = by_hash.equal_range(hash);
        for (auto it = first; it != last; ++it) {
          if (structural_equal(Any(*prim), prims.at(it->second))) {
            kernel_of[name] = it->second;
            break;
          }
        }
        if (kernel_of[name] == name) {
          prims[name] = *prim;
          by_hash.emplace(hash, name);
        }
      }
    }
    if (fused.empty() && inlined.empty()) return module;
    ir::IRModule out = module.with_functions(prims);
    std::map<std::string, Any> callers;
    ir::Op call_dps = ir::Op::get("call_dps");
    for (const std::string& name : out.names()) {
      const auto* f = out.lookup(name).as<graph::FunctionNode>();
      if (!f) continue;
      Mutator m;
      m.on<graph::CallNode>([&](const graph::CallNode*, const ObjectRef& self) -> Any {
        ObjectRef mutated = m.mutate_children(self);
        const auto* call = mutated.as<graph::CallNode>();
        const auto* g = call->callee.as<ir::GlobalVarNode>();
        if (g && inlined.count(g->name)) {
          auto [bindings, result] = inline_primitive(out, *call);
          return Any(graph::build_chain(bindings, result));
        }
        if (!g || !fused.count(g->name)) return Any(mutated);
        std::vector<ir::Expr> args;
        for (const Any& a : call->args) args.push_back(a.cast<ir::Expr>());
        return Any(graph::Call(call_dps, {ir::GlobalVar(kernel_of[g->name]), graph::Tuple(args)}, Map::empty(),
                               {fused[g->name]}));
      });
      ir::Expr body = m.mutate_as<ir::Expr>(f->body);
      if (!body.same_as(f->body)) callers[name] = graph::with_body(*f, body);
    }
    return out.with_functions(callers);
  });
}

}  // namespace loom::passes
