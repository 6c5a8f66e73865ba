#include "annotate_target.h"

#include "partition_util.h"

namespace loom::passes {

namespace {
// The first codegen (in the config's order) whose table has entry `name`.
const graph::PatternTable* table_with(const std::vector<graph::PatternTable>& tables, const std::string& name) {
  for (const graph::PatternTable& t : tables)
    for (const graph::PatternEntry& e : t.entries)
      if (e.name == name) return &t;
  return nullptr;
}
}  // namespace

transform::Pass AnnotateTarget() {
  return partition_pass(
      "AnnotateTarget",
      "marks what a partition codegen takes (docs/partitioning.md): each composite function gets the codegen whose "
      "table has its entry, and each operator call the first codegen with a one-operator entry matching it, "
      "becoming a call of a composite function of that entry; both carry the attribute codegen",
      [](const ir::IRModule& module, const std::vector<graph::PatternTable>& tables, const std::string&, Chain& chain,
         FunctionNames& names, std::map<std::string, Any>& out) {
        bool changed = false;
        for (size_t i = 0; i < chain.bindings.size(); ++i) {
          const auto* call = chain.bindings[i].value.as<graph::CallNode>();
          if (!call) continue;
          if (const graph::FunctionNode* composite = composite_callee(module, call->callee)) {
            const std::string& callee = call->callee.as<ir::GlobalVarNode>()->name;
            if (composite->attrs.contains("codegen") || out.count(callee)) continue;
            const graph::PatternTable* table = table_with(tables, composite->attrs.at("composite").as_string());
            if (!table) continue;  // a composite of a codegen not partitioned for
            std::map<std::string, Any> attrs = composite->attrs->items;
            attrs["codegen"] = Any(table->name);
            out[callee] = graph::with_body(*composite, composite->body, Map(attrs));
            continue;
          }
          if (!call->callee.as<ir::OpNode>()) continue;
          bool annotated = false;
          for (const graph::PatternTable& table : tables) {
            for (const graph::PatternEntry& entry : table.entries) {
              std::optional<graph::Match> m = match_entry(entry, table.name, chain, i);
              if (!m || m->calls.size() != 1) continue;
              std::string name = names.fresh(entry.name);
              auto [composite, replacement] = make_composite(chain, {i}, *m, entry.name, table.name, name);
              out[name] = composite;
              chain.set(i, replacement);
              annotated = changed = true;
              break;
            }
            if (annotated) break;
          }
        }
        return changed;
      });
}

}  // namespace loom::passes
