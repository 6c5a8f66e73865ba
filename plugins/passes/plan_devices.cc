#include "plan_devices.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "graph_util.h"
#include "loom/ir/op.h"
#include "loom/ir/text.h"
#include "loom/support/stack.h"
#include "loom/object/traversal.h"
#include "loom/target/target.h"
#include "loom/tir/function.h"
#include "loom/transform/infer_type.h"
#include "loom/transform/property.h"

namespace loom::passes {

namespace {
// Where a value lives: a device for a tensor, a place per field for a
// tuple, nothing for a value without memory (a scalar).
struct Place {
  std::optional<Device> device;
  std::vector<Place> fields;
};

const Device kHost{};  // cpu:0

bool all_on(const Place& p, const Device& d) {
  if (p.device) return *p.device == d;
  for (const Place& f : p.fields)
    if (!all_on(f, d)) return false;
  return true;
}

// A value of `type` with every tensor on `d`.
Place place_on(const ir::Type& type, const Device& d) {
  if (type.as<ir::TensorTypeNode>()) return Place{d, {}};
  Place p;
  if (const auto* t = type.as<ir::TupleTypeNode>())
    for (const Any& f : t->fields) p.fields.push_back(place_on(f.cast<ir::Type>(), d));
  return p;
}

ir::Type type_of(const ir::Expr& e) {
  if (const auto* v = e.as<graph::VarNode>(); v && !v->checked_type.defined()) return v->annotation;
  return e->checked_type;
}

// `e` with `type` as its checked type (for the nodes the pass makes).
template <class E>
E typed(E e, const ir::Type& type) {
  const_cast<ir::ExprNode*>(static_cast<const ir::ExprNode*>(e.get()))->checked_type = type;
  return e;
}

graph::Call device_copy(const ir::Expr& x, const Device& src, const Device& dst) {
  return typed(graph::Call(ir::Op::get("device_copy"), {x}, Map{{"src", Any(src)}, {"dst", Any(dst)}}), type_of(x));
}

class Planner {
 public:
  explicit Planner(const ir::IRModule& module) : module_(module) {}

  // The body with every tensor placed; the parameters and the result live
  // on the host.
  ir::Expr plan(const graph::FunctionNode& f) {
    for (const Any& p : f.params) {
      graph::Var var = p.cast<graph::Var>();
      places_[var.get()] = place_on(type_of(var), kHost);
    }
    auto [body, place] = visit(f.body);
    body = to_tail(body, place, kHost);
    // The copies of let-bound variables go right after their binding; the
    // parameters' at the top.
    body = graph::rewrite_lets(body, [&](const graph::Var& var, const ir::Expr& value, const ir::Expr& rest) {
      return ir::Expr(graph::Let(var, value, with_copies_of(var.get(), rest)));
    });
    for (size_t k = f.params.size(); k-- > 0;) body = with_copies_of(f.params[k].object(), body);
    return body;
  }

  bool changed() const { return changed_; }

 private:
  // The device a call_dps of @callee runs on (target::call_device).
  Device device_of_callee(const std::string& callee) {
    auto found = callee_devices_.find(callee);
    if (found != callee_devices_.end()) return found->second;
    return callee_devices_[callee] = target::call_device(module_, callee);
  }

  std::pair<ir::Expr, Place> visit(const ir::Expr& e) {
    return with_stack([&] { return visit_here(e); });  // one level of stack per level of nesting
  }

  std::pair<ir::Expr, Place> visit_here(const ir::Expr& e) {
    if (e.as<graph::LetNode>()) {  // iterative over long chains
      std::vector<std::pair<graph::Var, ir::Expr>> chain;
      ir::Expr cur = e;
      cur = graph::for_each_binding(cur, [&](const graph::LetNode& let) {
        auto [value, place] = visit(let.value);
        places_[let.var.get()] = place;
        chain.emplace_back(let.var, value);
      });
      auto [body, place] = visit(cur);
      for (size_t k = chain.size(); k-- > 0;) body = graph::Let(chain[k].first, chain[k].second, body);
      return {body, place};
    }
    if (const auto* v = e.as<graph::VarNode>()) {
      auto found = places_.find(v);
      return {e, found != places_.end() ? found->second : place_on(type_of(e), kHost)};
    }
    if (const auto* t = e.as<graph::TupleNode>()) {
      std::vector<ir::Expr> fields;
      Place place;
      for (const Any& f : t->fields) {
        auto [field, p] = visit(f.cast<ir::Expr>());
        fields.push_back(field);
        place.fields.push_back(p);
      }
      return {rebuilt_tuple(e, fields), place};
    }
    if (const auto* g = e.as<graph::TupleGetItemNode>()) {
      auto [tuple, place] = visit(g->tuple);
      Place item =
          g->index < static_cast<int64_t>(place.fields.size()) ? place.fields[g->index] : place_on(type_of(e), kHost);
      if (tuple.same_as(g->tuple)) return {e, item};
      return {typed(graph::TupleGetItem(tuple, g->index), type_of(e)), item};
    }
    if (const auto* i = e.as<graph::IfNode>()) {
      // The condition is read on the host; both branches give host values.
      auto [cond, cp] = visit(i->cond);
      auto [then_branch, tp] = visit(i->then_branch);
      auto [else_branch, ep] = visit(i->else_branch);
      cond = to(cond, cp, kHost);
      then_branch = to(then_branch, tp, kHost);
      else_branch = to(else_branch, ep, kHost);
      ir::Expr out = e;
      if (!cond.same_as(i->cond) || !then_branch.same_as(i->then_branch) || !else_branch.same_as(i->else_branch)) {
        out = typed(graph::If(cond, then_branch, else_branch), type_of(e));
      }
      return {out, place_on(type_of(e), kHost)};
    }
    if (const auto* call = e.as<graph::CallNode>()) return visit_call(e, *call);
    return {e, place_on(type_of(e), kHost)};  // constants (copied where used), scalars
  }

  std::pair<ir::Expr, Place> visit_call(const ir::Expr& e, const graph::CallNode& call) {
    const auto* op = call.callee.as<ir::OpNode>();
    std::vector<ir::Expr> args;
    bool same = true;
    auto keep = [&](const ir::Expr& old, const ir::Expr& now) {
      same &= now.same_as(old);
      args.push_back(now);
    };
    if (op && op->name == "device_copy") {  // planned before: its destination is where its value lives
      auto [x, place] = visit(call.args[0].cast<ir::Expr>());
      keep(call.args[0].cast<ir::Expr>(), x);
      return {same ? e : rebuilt_call(e, call, args), Place{call.attrs.at("dst").as_device(), {}}};
    }
    if (op && op->name == "call_dps") {
      const auto* g = call.args[0].as_object_ref().as<ir::GlobalVarNode>();
      Device d = g ? device_of_callee(g->name) : kHost;
      args.push_back(call.args[0].cast<ir::Expr>());
      const auto* inputs = call.args[1].as_object_ref().as<graph::TupleNode>();
      if (inputs) {
        std::vector<ir::Expr> fields;
        for (const Any& f : inputs->fields) {
          auto [field, place] = visit(f.cast<ir::Expr>());
          fields.push_back(to(field, place, d));
        }
        keep(call.args[1].cast<ir::Expr>(), rebuilt_tuple(call.args[1].cast<ir::Expr>(), fields));
      } else {
        auto [x, place] = visit(call.args[1].cast<ir::Expr>());
        keep(call.args[1].cast<ir::Expr>(), to(x, place, d));
      }
      return {same ? e : rebuilt_call(e, call, args), place_on(type_of(e), d)};
    }
    // Operators (call_packed, ...) and graph or extern functions called
    // directly take and give host values.
    for (const Any& a : call.args) {
      auto [x, place] = visit(a.cast<ir::Expr>());
      keep(a.cast<ir::Expr>(), to(x, place, kHost));
    }
    return {same ? e : rebuilt_call(e, call, args), place_on(type_of(e), kHost)};
  }

  ir::Expr rebuilt_call(const ir::Expr& e, const graph::CallNode& call, const std::vector<ir::Expr>& args) {
    std::vector<ir::Type> type_args;
    for (const Any& t : call.type_args) type_args.push_back(t.cast<ir::Type>());
    return typed(graph::Call(call.callee, args, call.attrs, type_args), type_of(e));
  }

  ir::Expr rebuilt_tuple(const ir::Expr& e, const std::vector<ir::Expr>& fields) {
    const auto* t = e.as<graph::TupleNode>();
    bool same = true;
    for (size_t k = 0; k < fields.size(); ++k) same &= fields[k].same_as(t->fields[k].cast<ir::Expr>());
    return same ? e : typed(graph::Tuple(fields), type_of(e));
  }

  // `e` with its value moved to `d` at the end of its let chain, so the
  // copy reads as the last binding's use, not as a wrapper of the chain.
  ir::Expr to_tail(const ir::Expr& e, const Place& have, const Device& d) {
    std::vector<const graph::LetNode*> chain;
    ir::Expr cur = e;
    cur = graph::for_each_binding(cur, [&](const graph::LetNode& let) { chain.push_back(&let); });
    ir::Expr tail = to(cur, have, d);
    if (tail.same_as(cur)) return e;
    for (size_t k = chain.size(); k-- > 0;) tail = graph::Let(chain[k]->var, chain[k]->value, tail);
    return tail;
  }

  // `e` (living at `have`) with every tensor of it on `d`.
  ir::Expr to(const ir::Expr& e, const Place& have, const Device& d) {
    if (all_on(have, d)) return e;
    changed_ = true;
    if (have.device) {
      // A variable, or a field of one, is copied once per device, right
      // after the variable's binding.
      if (const auto* v = e.as<graph::VarNode>()) return copy_of(v, e, *have.device, d);
      if (const auto* g = e.as<graph::TupleGetItemNode>(); g && g->tuple.as<graph::VarNode>()) {
        return copy_of(g->tuple.get(), e, *have.device, d);
      }
      return device_copy(e, *have.device, d);
    }
    std::vector<ir::Expr> fields;
    if (const auto* t = e.as<graph::TupleNode>()) {
      for (size_t k = 0; k < have.fields.size(); ++k)
        fields.push_back(to(t->fields[k].cast<ir::Expr>(), have.fields[k], d));
      return rebuilt_tuple(e, fields);
    }
    // Another tuple-valued expression: bound once, then copied field by field.
    ir::Expr tuple = e;
    std::optional<graph::Var> bound;
    if (!e.as<graph::VarNode>()) {
      bound = typed(graph::Var("tuple" + std::to_string(fresh_++)), type_of(e));
      tuple = *bound;
    }
    const auto* type = type_of(e).as<ir::TupleTypeNode>();
    for (size_t k = 0; k < have.fields.size(); ++k) {
      ir::Expr item = typed(graph::TupleGetItem(tuple, static_cast<int64_t>(k)), type->fields[k].cast<ir::Type>());
      fields.push_back(to(item, have.fields[k], d));
    }
    ir::Expr out = typed(graph::Tuple(fields), type_of(e));
    return bound ? ir::Expr(graph::Let(*bound, e, out)) : out;
  }

  // The variable holding `e` (the variable `of`, or a field of it) on dst.
  ir::Expr copy_of(const Object* of, const ir::Expr& e, const Device& src, const Device& dst) {
    const auto* item = e.as<graph::TupleGetItemNode>();
    int64_t index = item ? item->index : -1;
    for (const Copy& c : copies_[of])
      if (c.dst == dst && c.index == index) return c.var;
    const auto* var = static_cast<const graph::VarNode*>(of);
    std::string device = dst.to_string();
    std::string name = var->name + (item ? "_" + std::to_string(index) : "") + "_" + device.substr(0, device.find(':'));
    graph::Var copy = typed(graph::Var(name), type_of(e));
    copies_[of].push_back(Copy{copy, e, index, src, dst});
    return copy;
  }

  ir::Expr with_copies_of(const Object* var, ir::Expr body) {
    auto found = copies_.find(var);
    if (found == copies_.end()) return body;
    for (size_t k = found->second.size(); k-- > 0;) {
      const Copy& c = found->second[k];
      body = graph::Let(c.var, device_copy(c.of, c.src, c.dst), body);
    }
    return body;
  }

  struct Copy {
    graph::Var var;
    ir::Expr of;    // the variable, or a field of it
    int64_t index;  // the field's; -1 for the variable
    Device src, dst;
  };
  const ir::IRModule& module_;
  std::unordered_map<const Object*, Place> places_;
  std::unordered_map<const Object*, std::vector<Copy>> copies_;
  std::map<std::string, Device> callee_devices_;
  int fresh_ = 0;
  bool changed_ = false;
};
}  // namespace

namespace {
// `f` with the attribute "target" set to `target`.
tir::PrimFunc placed_on(const tir::PrimFunc& f, const target::Target& target) {
  std::map<std::string, Any> attrs = f->attrs.get() ? f->attrs->items : std::map<std::string, Any>{};
  attrs["target"] = target;
  return tir::PrimFunc(std::vector<Any>(f->params.begin(), f->params.end()), f->body, f->ret, Map(attrs));
}

// The placement of graph functions passed on to the prim functions they
// call (docs/devices.md, "One module, several devices"): a prim function
// with no placement of its own that a placed graph function calls takes
// that function's target (its attribute "target"); one called from graph
// functions on different targets is copied once per placed target
// (@f_vulkan), and those callers call their copy.
ir::IRModule place_callees(const ir::IRModule& module) {
  // For each unplaced prim function, its callers and their targets (an
  // undefined target: the module's).
  std::map<std::string, std::vector<std::pair<std::string, target::Target>>> callers;
  bool any_placed = false;
  for (const std::string& name : module.names()) {
    if (!module.lookup(name).as<graph::FunctionNode>() || !graph::codegen_of(module.lookup(name)).empty()) continue;
    target::Target placed = target::placed_target(module, name);
    // Placed on the module's own target: nothing to pass on.
    if (target::same_target(placed, target::target_of(module))) placed = target::Target();
    any_placed |= placed.defined();
    std::set<std::string> seen;
    Visitor v;
    v.on<ir::GlobalVarNode>([&](const ir::GlobalVarNode* g) {
      if (!seen.insert(g->name).second || !module.contains(g->name)) return;
      if (!module.lookup(g->name).as<tir::PrimFuncNode>() || target::placed_target(module, g->name).defined()) return;
      callers[g->name].emplace_back(name, placed);
    });
    v.visit(Any(module.lookup(name)));
  }
  if (!any_placed) return module;
  FunctionNames names(module);
  std::map<std::string, Any> changed;
  std::map<std::string, std::map<std::string, std::string>> renamed;  // caller -> callee -> its copy
  for (const auto& [callee, by] : callers) {
    auto f = downcast<tir::PrimFunc>(ObjectRef(module.lookup(callee)));
    std::vector<target::Target> targets;  // the distinct placed targets
    bool unplaced_caller = false;
    for (const auto& [caller, t] : by) {
      if (!t.defined()) {
        unplaced_caller = true;
        continue;
      }
      auto same = [&](const target::Target& have) { return target::same_target(have, t); };
      if (std::none_of(targets.begin(), targets.end(), same)) targets.push_back(t);
    }
    if (targets.empty()) continue;
    if (targets.size() == 1 && !unplaced_caller) {
      changed[callee] = placed_on(f, targets[0]);
      continue;
    }
    for (const target::Target& t : targets) {
      std::string copy = names.fresh(callee + "_" + t->kind);
      changed[copy] = placed_on(f, t);
      for (const auto& [caller, ct] : by)
        if (target::same_target(ct, t)) renamed[caller][callee] = copy;
    }
  }
  for (const auto& [caller, map] : renamed) {
    Mutator m;
    m.on<ir::GlobalVarNode>([&](const ir::GlobalVarNode* g, const ObjectRef& self) -> Any {
      auto found = map.find(g->name);
      return found == map.end() ? Any(self) : Any(ir::GlobalVar(found->second));
    });
    changed[caller] = m.mutate(Any(module.lookup(caller)));
  }
  if (changed.empty()) return module;
  // A rebuilt call has lost its type (a derived field): inferred again.
  if (!renamed.empty()) return transform::InferType()(module.with_functions(changed));
  return module.with_functions(changed);
}

// PlanDevices' output, and `input` itself where it has nothing to do.
ir::IRModule plan(const ir::IRModule& input) {
  ir::IRModule module = place_callees(input);
  std::map<std::string, Any> planned;
  for (const std::string& name : module.names()) {
    const auto* f = module.lookup(name).as<graph::FunctionNode>();
    if (!f || f->attrs.contains("codegen")) continue;  // a codegen's: not ours
    Planner planner(module);
    ir::Expr body = planner.plan(*f);
    if (planner.changed()) planned[name] = graph::with_body(*f, body);
  }
  return planned.empty() ? module : module.with_functions(planned);
}

// devices_planned: planning would change nothing (every tensor is on the
// device of the kernels that use it, every callee built for its caller's
// placement).
std::optional<std::string> unplanned(const ir::IRModule& module) {
  std::optional<std::string> problem;
  ir::IRModule planned = plan(module);
  if (planned.same_as(module)) return problem;
  for (const std::string& name : planned.names()) {
    if (!module.contains(name) || !module.lookup(name).same_as(planned.lookup(name))) {
      problem = "@" + name + " has values that are not on the device of the kernels that use them";
      break;
    }
  }
  if (!problem) problem = "the module's values are not on the devices of the kernels that use them";
  return problem;
}
}  // namespace

void register_devices_planned() {
  transform::PropertyRegistry::register_property(
      transform::PropertyInfo::named(kDevicesPlanned)
          .summary("every tensor of a graph function is on the device of the kernels that use it, crossings are "
                   "device_copy calls, and each prim function is built for its caller's placement")
          .established_by("PlanDevices")
          .check(unplanned));
}

transform::Pass PlanDevices() {
  transform::PassInfo info =
      transform::PassInfo::named("PlanDevices")
          .summary(
              "every tensor gets the device of the kernel that makes it (a call_dps of a prim function runs on its "
              "target's device), the parameters and results of graph functions the host; each crossing becomes a "
              "device_copy, one per variable and device")
          .needs({"types_inferred", "ops_lowered"})
          .establishes({kDevicesPlanned})
          .preserves({"ops_lowered", "fused", "buffers_flat", "intrinsics_lowered"});
  return transform::module_pass(info,
                                [](const ir::IRModule& input, const transform::PassContext&) { return plan(input); });
}

}  // namespace loom::passes
