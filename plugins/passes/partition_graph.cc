#include "partition_graph.h"

#include <algorithm>
#include <queue>
#include <set>

#include "loom/graph/function.h"
#include "loom/ir/op.h"
#include "partition_util.h"

namespace loom::passes {

namespace {
struct Region {
  std::string codegen;
  std::vector<size_t> members;  // binding indices, ascending
  bool live = true;
};

// Which bindings each binding's value reads (by index), over one chain.
std::vector<std::vector<size_t>> reads_of(const Chain& chain) {
  std::vector<std::vector<size_t>> reads(chain.bindings.size());
  for (size_t i = 0; i < chain.bindings.size(); ++i) {
    std::set<size_t> seen;
    Visitor v;
    v.on<graph::VarNode>([&](const graph::VarNode* var) {
      auto found = chain.index_of_var.find(var);
      if (found != chain.index_of_var.end() && seen.insert(found->second).second) reads[i].push_back(found->second);
    });
    v.visit(Any(chain.bindings[i].value));
  }
  return reads;
}

// Whether the bindings `t` as one region would wait on themselves: some
// binding outside `t` reads (through any path) a value of `t` and is read
// (through any path) by `t`.  Only bindings between the first and the last
// of `t` can be on such a path.
bool makes_cycle(const std::set<size_t>& t, const std::vector<std::vector<size_t>>& reads) {
  size_t lo = *t.begin(), hi = *t.rbegin();
  std::vector<bool> reached(hi - lo + 1, false);  // outside t, reads t
  for (size_t j = lo; j <= hi; ++j) {
    if (t.count(j)) continue;
    for (size_t d : reads[j]) {
      if (d >= lo && (t.count(d) || reached[d - lo])) {
        reached[j - lo] = true;
        break;
      }
    }
  }
  for (size_t j : t)
    for (size_t d : reads[j])
      if (d >= lo && !t.count(d) && reached[d - lo]) return true;
  return false;
}
}  // namespace

transform::Pass PartitionGraph() {
  return partition_pass(
      "PartitionGraph",
      "groups the calls AnnotateTarget marked for one codegen into maximal connected regions that create no cycle "
      "(docs/partitioning.md); each region becomes a graph function with attrs codegen, called through call_dps",
      [](const ir::IRModule& module, const std::vector<graph::PatternTable>&, const std::string& fname, Chain& chain,
         FunctionNames& names, std::map<std::string, Any>& out) {
        ir::Op call_dps = ir::Op::get("call_dps");
        size_t n = chain.bindings.size();
        std::vector<std::string> codegen(n);
        bool any = false;
        for (size_t i = 0; i < n; ++i) {
          const auto* call = chain.bindings[i].value.as<graph::CallNode>();
          if (!call) continue;
          if (composite_callee(module, call->callee)) {
            codegen[i] = graph::codegen_of(module.lookup(call->callee.as<ir::GlobalVarNode>()->name));
            any |= !codegen[i].empty();
          }
        }
        if (!any) return false;
        std::vector<std::vector<size_t>> reads = reads_of(chain);
        // Grow regions in order: a marked call joins the regions of its
        // codegen it reads from, each unless the union would wait on itself.
        std::vector<Region> regions;
        std::vector<int64_t> region_of(n, -1);
        for (size_t i = 0; i < n; ++i) {
          if (codegen[i].empty()) continue;
          std::set<size_t> members{i};
          std::vector<size_t> merged;
          for (size_t d : reads[i]) {
            int64_t r = region_of[d];
            if (r < 0 || regions[r].codegen != codegen[i] || std::count(merged.begin(), merged.end(), r)) continue;
            std::set<size_t> grown = members;
            grown.insert(regions[r].members.begin(), regions[r].members.end());
            if (makes_cycle(grown, reads)) continue;
            members = grown;
            merged.push_back(static_cast<size_t>(r));
          }
          for (size_t r : merged) regions[r].live = false;
          for (size_t k : members) region_of[k] = static_cast<int64_t>(regions.size());
          regions.push_back(Region{codegen[i], std::vector<size_t>(members.begin(), members.end())});
        }
        // The values read after their region: by a binding outside it, or by
        // the result.
        std::vector<bool> read_after(n, false);
        for (size_t j = 0; j < n; ++j)
          for (size_t d : reads[j])
            if (region_of[j] != region_of[d]) read_after[d] = true;
        {
          Visitor v;
          v.on<graph::VarNode>([&](const graph::VarNode* var) {
            auto found = chain.index_of_var.find(var);
            if (found != chain.index_of_var.end()) read_after[found->second] = true;
          });
          v.visit(Any(chain.result));
        }
        // Each region's function and the bindings that call it.
        std::map<size_t, std::vector<graph::Binding>> calls;  // region -> bindings
        for (size_t r = 0; r < regions.size(); ++r) {
          if (!regions[r].live) continue;
          const Region& region = regions[r];
          std::vector<graph::Binding> members;
          for (size_t k : region.members) members.push_back(chain.bindings[k]);
          std::vector<size_t> outputs;
          for (size_t k : region.members)
            if (read_after[k]) outputs.push_back(k);
          if (outputs.empty()) outputs.push_back(region.members.back());
          graph::Lifted lifted = graph::lift_free_values(members, false);
          std::unordered_map<const Object*, ir::Expr> renamed = lifted.param_of;
          std::vector<graph::Binding> body;
          for (const graph::Binding& b : members) {
            graph::Var inner(b.var->name);
            body.push_back({inner, graph::substitute(b.value, renamed)});
            renamed[b.var.get()] = inner;
          }
          std::vector<ir::Type> types;
          std::vector<ir::Expr> results;
          for (size_t k : outputs) {
            types.push_back(chain.bindings[k].value->checked_type);
            results.push_back(renamed.at(chain.bindings[k].var.get()));
          }
          ir::Type ret = outputs.size() == 1 ? types[0] : ir::Type(ir::TupleType(types));
          ir::Expr result = outputs.size() == 1 ? results[0] : ir::Expr(graph::Tuple(results));
          std::string name = names.fresh(region.codegen + "_region");
          out[name] = graph::Function(lifted.params, graph::build_chain(body, result), ret,
                                      Map({{"codegen", Any(region.codegen)}}));
          graph::Call call(call_dps, {ir::GlobalVar(name), graph::Tuple(lifted.args)}, Map::empty(), {ret});
          const_cast<graph::CallNode*>(call.get())->checked_type = ret;
          std::vector<graph::Binding>& bound = calls[r];
          if (outputs.size() == 1) {
            bound.push_back({chain.bindings[outputs[0]].var, call});
          } else {
            graph::Var all(name, ret);
            bound.push_back({all, call});
            for (size_t k = 0; k < outputs.size(); ++k)
              bound.push_back({chain.bindings[outputs[k]].var, graph::TupleGetItem(all, static_cast<int64_t>(k))});
          }
        }
        // The chain again, a region where its first member was unless what
        // it reads comes later: bindings and regions in their order, each
        // once what it reads is bound.
        auto node_of = [&](size_t i) { return region_of[i] >= 0 ? n + static_cast<size_t>(region_of[i]) : i; };
        std::map<size_t, std::set<size_t>> waits;  // node -> the nodes it reads
        std::map<size_t, size_t> first;            // node -> its first binding
        for (size_t i = 0; i < n; ++i) {
          size_t node = node_of(i);
          first.emplace(node, i);
          for (size_t d : reads[i])
            if (node_of(d) != node) waits[node].insert(node_of(d));
        }
        std::map<size_t, std::vector<size_t>> readers;
        std::map<size_t, size_t> pending;
        for (const auto& [node, at] : first) {
          pending[node] = waits[node].size();
          for (size_t d : waits[node]) readers[d].push_back(node);
        }
        using Item = std::pair<size_t, size_t>;  // (first binding, node)
        std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
        for (const auto& [node, count] : pending)
          if (count == 0) ready.push({first.at(node), node});
        std::vector<graph::Binding> rebuilt;
        size_t emitted = 0;
        while (!ready.empty()) {
          size_t node = ready.top().second;
          ready.pop();
          ++emitted;
          if (node >= n) {
            const std::vector<graph::Binding>& bound = calls.at(node - n);
            rebuilt.insert(rebuilt.end(), bound.begin(), bound.end());
          } else {
            rebuilt.push_back(chain.bindings[node]);
          }
          for (size_t r : readers[node])
            if (--pending[r] == 0) ready.push({first.at(r), r});
        }
        if (emitted != first.size()) LOOM_THROW(Error) << "PartitionGraph: @" << fname << ": the regions form a cycle";
        chain.bindings = rebuilt;
        return true;
      });
}

}  // namespace loom::passes
