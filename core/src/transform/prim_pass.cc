// prim_pass (loom/transform/prim_pass.h).
#include "loom/transform/prim_pass.h"

#include "loom/tir/util.h"

namespace loom::transform {

Pass prim_pass(PassInfo info, PrimBodyFn body_of) {
  return module_pass(info, [body_of](const ir::IRModule& module, const PassContext& ctx) {
    std::map<std::string, Any> changed;
    for (const std::string& name : module.names()) {
      const auto* f = module.lookup(name).as<tir::PrimFuncNode>();
      if (!f) continue;
      tir::Stmt body;
      try {
        body = body_of(*f, module, ctx);
      } catch (const Error& e) {
        LOOM_THROW(Error) << "@" << name << ": " << e.what();
      }
      if (!body.same_as(f->body)) changed[name] = tir::with_body(*f, body);
    }
    return module.with_functions(changed);
  });
}

}  // namespace loom::transform
