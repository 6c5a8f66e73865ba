#include "legalize_ops.h"

#include <map>

#include "graph_util.h"
#include "loom/ir/op.h"
#include "loom/ir/text.h"
#include "loom/object/traversal.h"
#include "loom/tir/function.h"

namespace loom::passes {

transform::Pass LegalizeOps() {
  transform::PassInfo info = transform::PassInfo::named("LegalizeOps")
                                 .summary(
                                     "operator calls to call_dps of the prim functions their lowerings generate; "
                                     "identical calls (operator, attributes, types) share one function")
                                 .needs({"types_inferred"})
                                 .establishes({"ops_lowered"})
                                 .preserves({"fused"});
  // The lowerings read the calls' and the arguments' types (types_inferred).
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext&) {
    std::map<std::string, Any> out;  // new kernels and rewritten functions
    FunctionNames names(module);
    std::map<std::string, std::string> generated;  // signature -> function name
    ir::Op call_dps = ir::Op::get("call_dps");
    for (const std::string& fname : module.names()) {
      auto fn = module.lookup(fname);
      if (!fn.as<graph::FunctionNode>() || !graph::codegen_of(fn).empty()) continue;  // a codegen's: not ours
      Mutator m;
      m.on<graph::CallNode>([&](const graph::CallNode* call, const ObjectRef& self) -> Any {
        ObjectRef mutated = m.mutate_children(self);
        const auto* op = call->callee.as<ir::OpNode>();
        if (!op) return Any(mutated);
        auto lower = ir::OpRegistry::property(op->name, "FLower");
        if (!lower) return Any(mutated);
        if (!call->checked_type.defined()) {
          LOOM_THROW(Error) << "LegalizeOps: @" << fname << ": the call of '" << op->name
                            << "' has no type; run InferType first";
        }
        // The lowering reads the types of the original call (legalizing
        // the arguments does not change their types).
        std::string signature = op->name + ir::to_text(Any(call->attrs)) + "->" + ir::to_text(Any(call->checked_type));
        for (const Any& a : call->args) signature += "|" + ir::to_text(Any(a.cast<ir::Expr>()->checked_type));
        auto found = generated.find(signature);
        if (found == generated.end()) {
          tir::PrimFunc prim;
          try {
            prim = lower->cast<Function>()(self).cast<tir::PrimFunc>();
          } catch (const Error& e) {
            LOOM_THROW(Error) << "LegalizeOps: @" << fname << ": lowering '" << op->name << "': " << e.what();
          }
          std::string name = names.fresh(op->name);
          out[name] = prim;
          found = generated.emplace(signature, name).first;
        }
        std::vector<ir::Expr> args;
        for (const Any& a : mutated.as<graph::CallNode>()->args) args.push_back(a.cast<ir::Expr>());
        return Any(graph::Call(call_dps, {ir::GlobalVar(found->second), graph::Tuple(args)}, Map::empty(),
                               {call->checked_type}));
      });
      ir::BaseFunc legalized = m.mutate_as<ir::BaseFunc>(fn);
      if (!legalized.same_as(fn)) out[fname] = legalized;
    }
    return module.with_functions(out);
  });
}

}  // namespace loom::passes
