// prim_pass (loom/transform/prim_pass.h).
#include "loom/transform/prim_pass.h"

#include "loom/tir/util.h"

namespace loom::transform {

std::map<std::string, Any> rewrite_prim_funcs(const ir::IRModule& module, const PrimFuncRewrite& rewrite,
                                              const FunctionFilter& selects) {
  std::map<std::string, Any> changed;
  for (const std::string& name : module.names()) {
    ir::BaseFunc func = module.lookup(name);
    if (!func.as<tir::PrimFuncNode>() || (selects && !selects(module, name))) continue;
    auto f = downcast<tir::PrimFunc>(ObjectRef(func));
    tir::PrimFunc after;
    try {
      after = rewrite(name, f);
    } catch (const Error& e) {
      LOOM_THROW(Error) << "@" << name << ": " << e.what();
    }
    if (!after.same_as(f)) changed[name] = Any(after);
  }
  return changed;
}

Pass prim_pass(PassInfo info, PrimBodyFn body_of, FunctionFilter selects) {
  return module_pass(info, [body_of, selects](const ir::IRModule& module, const PassContext& ctx) {
    return module.with_functions(rewrite_prim_funcs(
        module,
        [&](const std::string&, const tir::PrimFunc& f) {
          tir::Stmt body = body_of(*f.get(), module, ctx);
          return body.same_as(f->body) ? f : tir::with_body(*f.get(), body);
        },
        selects));
  });
}

}  // namespace loom::transform
