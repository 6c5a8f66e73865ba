#include "dead_code_elimination.h"

#include <set>

#include "graph_util.h"

namespace loom::passes {

transform::Pass DeadCodeElimination() {
  transform::PassInfo info =
      transform::PassInfo::named("DeadCodeElimination")
          .summary("drops unused pure let bindings and the prim and extern functions no graph function calls")
          .preserves({"ops_lowered", "fused", "buffers_flat", "intrinsics_lowered"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext&) {
    std::map<std::string, Any> rewritten;
    std::set<std::string> called;
    bool has_graph = false;
    for (const std::string& name : module.names()) {
      const auto* f = module.lookup(name).as<graph::FunctionNode>();
      if (!f) continue;
      has_graph = true;
      ir::Expr body = graph::drop_dead_bindings(f->body);
      if (!body.same_as(f->body)) rewritten[name] = graph::with_body(*f, body);
      Visitor v;
      v.on<ir::GlobalVarNode>([&](const ir::GlobalVarNode* g) { called.insert(g->name); });
      v.visit(Any(body));
    }
    ir::IRModule out = module.with_functions(rewritten);
    if (!has_graph) return out;  // a library of kernels: every function is an entry
    std::map<std::string, Any> kept;
    for (const std::string& name : out.names()) {
      ir::BaseFunc f = out.lookup(name);
      if (f.as<graph::FunctionNode>() || called.count(name)) kept[name] = f;
    }
    if (kept.size() == out.names().size()) return out;
    return ir::IRModule(kept, out->attrs, out->global_infos);
  });
}

}  // namespace loom::passes
