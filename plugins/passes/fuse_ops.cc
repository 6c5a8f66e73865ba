#include "fuse_ops.h"

#include <algorithm>
#include <functional>
#include <set>
#include <vector>

#include "graph_util.h"
#include "loom/ir/op.h"
#include "loom/tir/util.h"

namespace loom::passes {

namespace {
using ir::PatternKind;

struct Group {
  std::vector<size_t> members;  // binding indices, in order
  PatternKind anchor;
};

bool is_primitive(const ir::IRModule& module, const ir::Expr& callee) {
  const auto* g = callee.as<ir::GlobalVarNode>();
  if (!g || !module.contains(g->name)) return false;
  const auto* f = module.lookup(g->name).as<graph::FunctionNode>();
  return f && f->attrs.contains("primitive") && f->attrs.at("primitive").as_int() == 1 && !f->attrs.contains("codegen");
}

// The symbolic dimensions of a value's tensor types.
std::set<const Object*> dimension_vars(const ir::Expr& e) {
  std::set<const Object*> out;
  if (!e.defined() || !e->checked_type.defined()) return out;
  for (const tir::VarNode* v : tir::used_vars(Any(e->checked_type), [](const tir::VarNode*) { return true; }))
    out.insert(v);
  return out;
}

// Whether a call's result has a dimension its arguments' types do not
// bind (arange(extent=%n)): a group holding it could not size that result
// from the group's parameters, so it stays a kernel of its own, called
// where %n is known.
bool sized_by_attributes(const graph::CallNode& call, const ir::Expr& value) {
  std::set<const Object*> bound;
  for (const Any& a : call.args) {
    std::set<const Object*> vars = dimension_vars(a.cast<ir::Expr>());
    bound.insert(vars.begin(), vars.end());
  }
  for (const Object* v : dimension_vars(value))
    if (!bound.count(v)) return true;
  return false;
}

// The pattern of a binding's value, or nullopt when it cannot be fused.
std::optional<PatternKind> pattern_of(const ir::IRModule& module, const ir::Expr& value, std::string* name) {
  const auto* call = value.as<graph::CallNode>();
  if (!call) return std::nullopt;
  if (const auto* op = call->callee.as<ir::OpNode>()) {
    auto entry = ir::OpRegistry::entry(op->name);
    if (!entry || !ir::OpRegistry::property(op->name, "FLower") || entry->def.pattern == PatternKind::kOpaque ||
        sized_by_attributes(*call, value)) {
      return std::nullopt;
    }
    *name = op->name;
    return entry->def.pattern;
  }
  // A primitive function made by an earlier (user) fusion pass anchors a
  // group like an output-fusable operator; its elementwise tail joins it.
  if (is_primitive(module, call->callee)) {
    *name = call->callee.as<ir::GlobalVarNode>()->name;
    return PatternKind::kOutputFusable;
  }
  return std::nullopt;
}

}  // namespace

transform::Pass FuseOps() {
  transform::PassInfo info =
      transform::PassInfo::named("FuseOps")
          .summary(
              "groups operator calls into primitive functions: elementwise and broadcast operators join the group of "
              "their producer when they are its only user")
          .opt_level(1)
          .options(
              {SchemaField{"max_depth", "int", Any(int64_t{8}), "the most operators in one group"}.between(1, 256)})
          .needs({"types_inferred", "shared_values_bound"})
          .establishes({"fused"})
          .changes({"graph"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext& context) {
    int64_t max_depth = context.get_config("FuseOps.max_depth").as_int();
    std::map<std::string, Any> out;  // the groups' functions and the rewritten callers
    FunctionNames names(module);
    for (const std::string& fname : module.names()) {
      const auto* f = module.lookup(fname).as<graph::FunctionNode>();
      if (!f || f->attrs.contains("primitive") || f->attrs.contains("codegen")) continue;  // a codegen's: not ours
      // The top-level chain with nested operator calls bound to variables of
      // their own (so `gelu(add(h, b))` is two members).
      std::vector<graph::Binding> bindings;
      ir::Expr result;
      std::tie(bindings, result) = graph::flatten_chain(f->body);
      graph::Var result_var("out");
      if (result.as<graph::CallNode>()) {  // the result call is a member too
        bindings.push_back({result_var, result});
        result = result_var;
      }
      std::unordered_map<const Object*, int> uses = graph::var_uses(graph::build_chain(bindings, result));
      std::vector<Group> groups;
      std::unordered_map<const Object*, size_t> group_of;  // a group's output variable -> group
      std::vector<int64_t> binding_group(bindings.size(), -1);
      // The elementwise bindings from `i` on that close a diamond over the
      // group output `a` (a value with several users, all of them among
      // these bindings: swish, x * sigmoid(x); hard-swish, x * clip(x + 3,
      // 0, 6) / 6), whose values other than the last are used only among
      // them; empty when there is none.
      auto diamond = [&](size_t i, const Object* a, PatternKind most) {
        std::vector<size_t> members;
        std::set<const Object*> inside;
        int left = uses[a];
        for (size_t k = i; k < bindings.size() && left > 0; ++k) {
          const auto* call = bindings[k].value.as<graph::CallNode>();
          if (!call) continue;
          bool reads_a = false, reads_inside = false;
          for (const Any& x : call->args) {
            reads_a = reads_a || x.object() == a;
            reads_inside = reads_inside || inside.count(x.object());
          }
          if (!reads_a && !reads_inside) continue;
          std::string op_name;
          auto pattern = pattern_of(module, bindings[k].value, &op_name);
          if (!pattern || *pattern > most) return std::vector<size_t>{};
          for (const Any& x : call->args) left -= x.object() == a ? 1 : 0;
          members.push_back(k);
          inside.insert(bindings[k].var.get());
        }
        if (left != 0 || members.size() < 2) return std::vector<size_t>{};
        // Every value but the last used only by the members.
        std::unordered_map<const Object*, int> used_inside;
        for (size_t k : members)
          for (const Any& x : bindings[k].value.as<graph::CallNode>()->args)
            if (inside.count(x.object())) ++used_inside[x.object()];
        for (size_t m = 0; m + 1 < members.size(); ++m) {
          const Object* v = bindings[members[m]].var.get();
          if (uses[v] != used_inside[v]) return std::vector<size_t>{};
        }
        return members;
      };
      std::unordered_map<size_t, size_t> forced;  // binding -> the group a diamond put it in
      std::vector<std::string> op_names(bindings.size());
      for (size_t i = 0; i < bindings.size(); ++i) {
        std::string name;
        auto pattern = pattern_of(module, bindings[i].value, &name);
        if (!pattern) continue;
        op_names[i] = name;
        int64_t joined = -1;
        if (auto f = forced.find(i); f != forced.end()) {
          joined = static_cast<int64_t>(f->second);
          for (auto it = group_of.begin(); it != group_of.end();)
            it = it->second == f->second ? group_of.erase(it) : std::next(it);
        } else if (*pattern <= PatternKind::kInjective) {
          for (const Any& a : bindings[i].value.as<graph::CallNode>()->args) {
            auto found = group_of.find(a.object());
            if (found == group_of.end()) continue;
            Group& g = groups[found->second];
            // An injective operator (a slice, a reshape, a concatenation)
            // moves elements: it joins only a group that moves or maps
            // them too, never an anchor's epilogue.
            bool moves = g.anchor <= PatternKind::kInjective;
            if (*pattern == PatternKind::kInjective && !moves) continue;
            std::vector<size_t> closing =
                uses[a.object()] == 1
                    ? std::vector<size_t>{}
                    : diamond(i, a.object(), moves ? PatternKind::kInjective : PatternKind::kBroadcast);
            if (uses[a.object()] != 1 && closing.empty()) continue;
            if (static_cast<int64_t>(g.members.size() + std::max<size_t>(closing.size(), 1)) > max_depth) continue;
            joined = static_cast<int64_t>(found->second);
            for (size_t k : closing)
              if (k != i) forced[k] = found->second;
            group_of.erase(found);
            break;
          }
        }
        if (joined < 0) {
          joined = static_cast<int64_t>(groups.size());
          groups.push_back(Group{{}, *pattern});
        }
        Group& g = groups[joined];
        g.anchor = std::max(g.anchor, *pattern);
        // The other arguments' groups of elementwise, broadcast and
        // injective operators whose value only this binding reads join as
        // well (the two slices a concatenation or a gated product reads):
        // each was a kernel of its own that wrote its value for this one.
        if (g.anchor <= PatternKind::kInjective) {
          for (const Any& a : bindings[i].value.as<graph::CallNode>()->args) {
            auto found = group_of.find(a.object());
            if (found == group_of.end() || found->second == static_cast<size_t>(joined) || uses[a.object()] != 1)
              continue;
            Group& h = groups[found->second];
            bool pending =
                std::any_of(forced.begin(), forced.end(), [&](const auto& f) { return f.second == found->second; });
            if (h.anchor > PatternKind::kInjective || pending ||
                static_cast<int64_t>(g.members.size() + h.members.size() + 1) > max_depth)
              continue;
            for (size_t m : h.members) binding_group[m] = joined;
            g.members.insert(g.members.end(), h.members.begin(), h.members.end());
            std::sort(g.members.begin(), g.members.end());
            h.members.clear();
            group_of.erase(found);
          }
        }
        g.members.push_back(i);
        group_of[bindings[i].var.get()] = static_cast<size_t>(joined);
        binding_group[i] = joined;
      }
      // Rebuild: each group of two or more becomes a call of a new
      // primitive function at the place of its last member.
      std::vector<graph::Binding> rebuilt;
      bool changed = false;
      for (size_t i = 0; i < bindings.size(); ++i) {
        int64_t gi = binding_group[i];
        if (gi < 0 || groups[gi].members.size() < 2) {
          rebuilt.push_back(bindings[i]);
          continue;
        }
        const Group& g = groups[gi];
        if (i != g.members.back()) continue;
        changed = true;
        // Parameters: what the members read from outside, constants too
        // (weights: passed in like any tensor, so the group still becomes
        // one kernel).
        std::vector<graph::Binding> members;
        for (size_t m : g.members) members.push_back(bindings[m]);
        graph::Lifted lifted = graph::lift_free_values(members, true);
        std::vector<graph::Binding> body;
        std::unordered_map<const Object*, ir::Expr> renamed = lifted.param_of;
        for (size_t m : g.members) {
          ir::Expr value = graph::substitute(bindings[m].value, renamed);
          const auto* call = value.as<graph::CallNode>();
          if (call && is_primitive(module, call->callee)) {
            auto [inlined, res] = inline_primitive(module, *call);
            body.insert(body.end(), inlined.begin(), inlined.end());
            if (res.as<graph::VarNode>()) {  // the anchor's value is its last binding
              renamed[bindings[m].var.get()] = res;
              continue;
            }
            value = res;
          }
          graph::Var inner(bindings[m].var->name);
          body.push_back({inner, value});
          renamed[bindings[m].var.get()] = inner;
        }
        ir::Expr fbody = graph::build_chain(body, renamed.at(bindings[g.members.back()].var.get()));
        std::string hint = "fused";  // and its members' operators, in order
        for (size_t m : g.members) hint += "_" + op_names[m];
        std::string unique = names.fresh(hint);
        out[unique] =
            graph::Function(lifted.params, fbody, bindings[i].value->checked_type,
                            Map({{"primitive", int64_t{1}}, {"pattern", int64_t(static_cast<int64_t>(g.anchor))}}));
        rebuilt.push_back({bindings[i].var, graph::Call(ir::GlobalVar(unique), lifted.args)});
      }
      if (!changed) continue;                                            // (flattening alone is not worth a change)
      if (!rebuilt.empty() && rebuilt.back().var.same_as(result_var)) {  // back to a result expression
        result = rebuilt.back().value;
        rebuilt.pop_back();
      }
      out[fname] = graph::with_body(*f, graph::build_chain(rebuilt, result));
    }
    return module.with_functions(out);
  });
}

}  // namespace loom::passes
