#include "loom/transform/bind_shared_values.h"

#include <map>

#include "loom/graph/function.h"
#include "loom/graph/shared.h"
#include "loom/transform/property.h"

namespace loom::transform {

Pass BindSharedValues() {
  return module_pass(PassInfo::named("BindSharedValues")
                         .summary("bind every graph value used in more than one place by a let, so it is computed once")
                         .establishes({property::kSharedValuesBound})
                         .preserves({property::kAll}),
                     [](const IRModule& module, const PassContext&) {
                       std::map<std::string, Any> bound;
                       for (const std::string& name : module.names()) {
                         const auto* f = module.lookup(name).as<graph::FunctionNode>();
                         if (!f) continue;
                         ir::Expr body = graph::bind_shared_values(f->body);
                         if (body.same_as(f->body)) continue;
                         std::vector<graph::Var> params;
                         for (const Any& p : f->params) params.push_back(p.cast<graph::Var>());
                         bound[name] = graph::Function(params, body, f->ret_type, f->attrs);
                       }
                       return bound.empty() ? module : module.with_functions(bound);
                     });
}

namespace {
const bool registered = [] {
  PassRegistry::register_pass(BindSharedValues());
  return true;
}();
}  // namespace

}  // namespace loom::transform
