// The property registry and the core's properties (loom/transform/property.h).
// intrinsics_lowered is registered by the target area (it asks the
// module's target which intrinsics its codegen implements).
#include "loom/transform/property.h"

#include "loom/graph/function.h"
#include "loom/graph/shared.h"
#include "loom/ir/op.h"
#include "loom/object/traversal.h"
#include "loom/support/registry.h"
#include "loom/tir/function.h"

namespace loom::transform {

namespace {
// The first graph expression without a type: each computation (calls,
// tuples, items, lets, ifs, constants) and each use of a variable; the
// callee of a call is a reference, not a value.
std::optional<std::string> untyped(const ir::IRModule& module) {
  return first_problem<graph::FunctionNode>(module, [](const std::string& name, const graph::FunctionNode& f) {
    std::optional<std::string> found;
    if (!f.ret_type.defined()) return found = "@" + name + " has no result type";
    Visitor v;
    auto require = [&](const ir::ExprNode* e) {
      if (!found && !e->checked_type.defined()) found = "@" + name + ": a " + e->type_key() + " has no type";
    };
    v.on<graph::LetNode>([&](const graph::LetNode* let) {
      // Iterative over let chains; the bound variable is a binding, not a use.
      ir::Expr cur = let->body;
      require(let);
      v.visit(Any(let->value));
      while (const auto* next = cur.as<graph::LetNode>()) {
        require(next);
        v.visit(Any(next->value));
        cur = next->body;
      }
      v.visit(Any(cur));
    });
    v.on<graph::CallNode>([&](const graph::CallNode* call) {
      require(call);
      v.visit(Any(call->args));
    });
    v.on<ir::ExprNode>([&](const ir::ExprNode* e) {
      require(e);
      v.visit_children(e);
    });
    // References to functions and operators (call_dps's callee) are not values.
    v.on<ir::GlobalVarNode>([](const ir::GlobalVarNode*) {});
    v.on<ir::OpNode>([](const ir::OpNode*) {});
    v.visit(Any(f.body));
    return found;
  });
}

std::optional<std::string> shared_value(const ir::IRModule& module) {
  return first_problem<graph::FunctionNode>(module, [](const std::string& name, const graph::FunctionNode& f) {
    std::optional<std::string> found;
    if (graph::has_shared_values(f.body)) found = "@" + name + " uses a value in several places without binding it";
    return found;
  });
}

std::optional<std::string> unlowered_op(const ir::IRModule& module) {
  return first_problem<graph::FunctionNode>(module, [&module](const std::string& name, const graph::FunctionNode& f) {
    std::optional<std::string> found;
    if (!graph::codegen_of(module.lookup(name)).empty()) return found;  // a partitioned region: its codegen's
    Visitor v;
    v.on<graph::CallNode>([&](const graph::CallNode* call) {
      const auto* op = call->callee.as<ir::OpNode>();
      if (!found && op && ir::OpRegistry::property(op->name, "FLower")) {
        found = "@" + name + " calls the operator '" + op->name + "', which has a lowering";
      }
      v.visit_children(call);
    });
    v.visit(Any(f.body));
    return found;
  });
}

// The registry, with the core's properties registered when it is first
// used (at the latest when libloom_core loads, below), so passes that the
// core registers in static initialisers can name them.
NamedRegistry<PropertyInfo>& properties() {
  static auto* instance = [] {
    auto* r = new NamedRegistry<PropertyInfo>("IR property", "property", /*overridable=*/true);
    r->add(PropertyInfo::named(property::kTypesInferred)
               .summary("every graph expression has its type and every graph function its result type")
               .level("graph")
               .established_by("InferType")
               .auto_establish()
               .check(untyped));
    r->add(PropertyInfo::named(property::kSharedValuesBound)
               .summary("every graph value used in more than one place is bound by a let, so it is computed once")
               .level("graph")
               .established_by("BindSharedValues")
               .auto_establish()
               .check(shared_value));
    r->add(PropertyInfo::named(property::kOpsLowered)
               .summary("no graph function calls an operator that has a lowering (FLower)")
               .level("graph")
               .established_by("LegalizeOps")
               .check(unlowered_op));
    r->add(PropertyInfo::named(property::kFused)
               .summary("operator calls are grouped into primitive functions")
               .level("graph")
               .established_by("FuseOps"));
    return r;
  }();
  return *instance;
}

const bool core_properties_registered = (properties(), true);
}  // namespace

std::string function_level(const ir::BaseFunc& f) {
  const std::string& key = f->type_key();
  return key.substr(0, key.find('.'));
}

void PropertyRegistry::register_property(PropertyInfo info, bool allow_override) {
  if (info.established_by.empty()) {
    LOOM_THROW(Error) << "IR property '" << info.name << "' needs the pass that establishes it";
  }
  properties().add(std::move(info), allow_override);
}
std::optional<PropertyInfo> PropertyRegistry::entry(const std::string& name) { return properties().entry(name); }
PropertyInfo PropertyRegistry::get(const std::string& name) { return properties().get(name); }
std::vector<std::string> PropertyRegistry::list() { return properties().names(); }

}  // namespace loom::transform
