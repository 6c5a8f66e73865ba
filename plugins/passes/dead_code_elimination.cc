#include "dead_code_elimination.h"

#include <set>

#include "graph_util.h"

namespace loom::passes {

transform::Pass DeadCodeElimination() {
  transform::PassInfo info = transform::PassInfo::named("DeadCodeElimination")
                                 .summary(
                                     "drops unused pure let bindings and the functions the entries (the graph "
                                     "functions that are not primitive) do not reach")
                                 .preserves({"ops_lowered", "fused", "buffers_flat", "intrinsics_lowered"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext&) {
    std::map<std::string, Any> rewritten;
    std::map<std::string, std::set<std::string>> calls;  // a graph function -> the globals its body names
    std::vector<std::string> entries;                    // the graph functions that are not primitive
    for (const std::string& name : module.names()) {
      const auto* f = module.lookup(name).as<graph::FunctionNode>();
      if (!f) continue;
      ir::Expr body = graph::drop_dead_bindings(f->body);
      if (!body.same_as(f->body)) rewritten[name] = graph::with_body(*f, body);
      Visitor v;
      std::set<std::string>& named = calls[name];
      v.on<ir::GlobalVarNode>([&](const ir::GlobalVarNode* g) { named.insert(g->name); });
      v.visit(Any(body));
      if (!f->attrs.contains("primitive")) entries.push_back(name);
    }
    ir::IRModule out = module.with_functions(rewritten);
    if (entries.empty()) return out;  // a library of kernels (or of primitive functions): every function is an entry
    // What the entries reach: a primitive graph function FuseOps made and
    // FuseTIR replaced by a shared prim function (the repeated blocks of a
    // network) goes, and so do the kernels only it called.
    std::set<std::string> reached(entries.begin(), entries.end());
    for (std::vector<std::string> work = entries; !work.empty();) {
      std::string name = work.back();
      work.pop_back();
      auto found = calls.find(name);
      if (found == calls.end()) continue;
      for (const std::string& callee : found->second)
        if (reached.insert(callee).second) work.push_back(callee);
    }
    std::map<std::string, Any> kept;
    for (const std::string& name : out.names())
      if (reached.count(name)) kept[name] = out.lookup(name);
    if (kept.size() == out.names().size()) return out;
    return ir::IRModule(kept, out->attrs, out->global_infos);
  });
}

}  // namespace loom::passes
