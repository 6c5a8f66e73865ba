// Regions as prim functions (loom/driver/regions.h): each region alone in
// a module, its composites inlined and the region marked primitive, then
// the passes that lower a whole model: FuseOps (which leaves a primitive
// function as it is), LegalizeOps gives each operator
// call its kernel, FuseTIR fuses the region's chain of kernels into one
// prim function of the region's name.  One module per region, so two
// regions that fuse to the same function (FuseTIR shares those) still
// each get theirs.
#include "loom/driver/regions.h"

#include <unordered_map>

#include "loom/graph/bindings.h"
#include "loom/graph/expr.h"
#include "loom/graph/function.h"
#include "loom/ir/text.h"
#include "loom/object/traversal.h"
#include "loom/tir/function.h"
#include "loom/transform/pass.h"

namespace loom::driver {

namespace {
using Substitution = std::unordered_map<const Object*, ir::Expr>;
using graph::substitute;

// The region's body with every composite call replaced by the composite's
// own bindings (its parameters replaced by the call's arguments); Error
// naming the region for a body that is not a chain of bindings.
ir::Expr inline_composites(const ir::IRModule& part, const std::string& region, const graph::FunctionNode& f) {
  std::vector<std::pair<graph::Var, ir::Expr>> bindings;
  Substitution renamed;  // a composite call's variable -> the composite's result
  ir::Expr e = f.body;
  auto inline_call = [&](const graph::CallNode* call, const ir::Expr& fallback) -> ir::Expr {
    const auto* g = call ? call->callee.as<ir::GlobalVarNode>() : nullptr;
    if (!g) return fallback;
    const auto* composite = part.contains(g->name) ? part.lookup(g->name).as<graph::FunctionNode>() : nullptr;
    if (!composite || !composite->attrs.contains("composite")) {
      LOOM_THROW(Error) << "lower_regions: region @" << region << " calls @" << g->name
                        << ", which is not one of its composites";
    }
    Substitution params;
    for (size_t i = 0; i < composite->params.size() && i < call->args.size(); ++i)
      params[composite->params[i].object()] = call->args[i].cast<ir::Expr>();
    ir::Expr inner = graph::for_each_binding(composite->body, [&](const graph::LetNode& let) {
      bindings.emplace_back(let.var, substitute(let.value, params));
    });
    return substitute(inner, params);
  };
  e = graph::for_each_binding(e, [&](const graph::LetNode& let) {
    ir::Expr value = substitute(let.value, renamed);
    ir::Expr result = inline_call(value.as<graph::CallNode>(), ir::Expr());
    if (result.defined()) {
      renamed[let.var.get()] = result;
    } else {
      bindings.emplace_back(let.var, value);
    }
  });
  ir::Expr result = substitute(e, renamed);
  if (ir::Expr inlined = inline_call(result.as<graph::CallNode>(), ir::Expr()); inlined.defined()) result = inlined;
  for (auto it = bindings.rbegin(); it != bindings.rend(); ++it) result = graph::Let(it->first, it->second, result);
  return result;
}
}  // namespace

ir::IRModule lower_regions(const ir::IRModule& part) {
  std::map<std::string, Any> out;
  // The region is one group already (marked primitive, which FuseOps
  // leaves as it is); FuseOps runs so the sequence knows it is fused.
  transform::Pass lower =
      transform::sequential({transform::PassRegistry::get("FuseOps"), transform::PassRegistry::get("LegalizeOps"),
                             transform::PassRegistry::get("FuseTIR")},
                            "lower_regions");
  for (const std::string& name : part.names()) {
    const auto* f = part.lookup(name).as<graph::FunctionNode>();
    if (!f || graph::codegen_of(part.lookup(name)).empty() || f->attrs.contains("composite")) continue;
    std::vector<graph::Var> params;
    for (const Any& p : f->params) params.push_back(p.cast<graph::Var>());
    graph::Function primitive(params, inline_composites(part, name, *f), f->ret_type,
                              Map({{"primitive", Any(int64_t{1})}}));
    ir::IRModule alone(std::map<std::string, Any>{{name, Any(primitive)}}, part->attrs, part->global_infos);
    ir::IRModule lowered;
    try {
      lowered = lower(alone);
    } catch (const Error& e) {
      LOOM_THROW(Error) << "lower_regions: region @" << name << ": " << e.what();
    }
    ir::BaseFunc fused = lowered.lookup(name);
    if (!fused.as<tir::PrimFuncNode>()) {
      LOOM_THROW(Error) << "lower_regions: region @" << name << " did not fuse into one prim function (its body is "
                        << "not a chain of operator calls that have lowerings)";
    }
    out[name] = fused;
  }
  return ir::IRModule(out);
}

}  // namespace loom::driver
