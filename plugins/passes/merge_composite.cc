#include "merge_composite.h"

#include <set>

#include "partition_util.h"

namespace loom::passes {

transform::Pass MergeComposite() {
  return partition_pass(
      "MergeComposite",
      "replaces each match of a partition codegen's multi-operator pattern (docs/partitioning.md) by a call of a "
      "composite function (attrs composite, primitive) when its inner values are used only inside it; codegens in "
      "the config's order, entries in their table's",
      [](const ir::IRModule&, const std::vector<graph::PatternTable>& tables, const std::string&, Chain& chain,
         FunctionNames& names, std::map<std::string, Any>& out) {
        std::unordered_map<const Object*, int> uses = graph::var_uses(graph::build_chain(chain.bindings, chain.result));
        bool changed = false;
        for (const graph::PatternTable& table : tables) {
          for (const graph::PatternEntry& entry : table.entries) {
            // Later bindings first, so a match takes the longest chain that
            // ends at its root.
            for (size_t i = chain.bindings.size(); i-- > 0;) {
              const auto* call = chain.bindings[i].value.as<graph::CallNode>();
              if (!call || !call->callee.as<ir::OpNode>()) continue;
              std::optional<graph::Match> m = match_entry(entry, table.name, chain, i);
              if (!m || m->calls.size() < 2) continue;  // one operator: AnnotateTarget's
              std::optional<std::vector<size_t>> members = matched_bindings(chain, *m);
              if (!members || members->back() != i) continue;
              // Every inner value is read only by the match (else the
              // composite would hide a value something else reads), and no
              // input is one of them.
              std::set<const Object*> inner;
              for (size_t k : *members)
                if (k != i) inner.insert(chain.bindings[k].var.get());
              std::unordered_map<const Object*, int> inside;
              for (size_t k : *members) {
                for (const Any& a : chain.bindings[k].value.as<graph::CallNode>()->args)
                  if (inner.count(a.object())) ++inside[a.object()];
              }
              bool taken = true;
              for (const Object* v : inner) taken &= uses[v] == inside[v];
              for (const ir::Expr& input : m->inputs) taken &= !inner.count(input.get());
              if (!taken) continue;
              std::string name = names.fresh(entry.name);
              auto [composite, replacement] = make_composite(chain, *members, *m, entry.name, "", name);
              out[name] = composite;
              for (size_t k : *members)
                if (k != i) chain.bindings[k].value = ir::Expr();
              chain.set(i, replacement);
              changed = true;
            }
          }
        }
        return changed;
      });
}

}  // namespace loom::passes
