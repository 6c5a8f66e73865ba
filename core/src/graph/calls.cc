// call_dps sites (loom/graph/calls.h).
#include "loom/graph/calls.h"

#include "loom/graph/expr.h"
#include "loom/graph/function.h"
#include "loom/graph/type_infer.h"
#include "loom/ir/text.h"
#include "loom/object/traversal.h"
#include "loom/tir/layout.h"
#include "loom/tir/util.h"

namespace loom::graph {

namespace {
// The callee and the input tuple of `call` when it is call_dps(@f, (...)).
std::pair<const ir::GlobalVarNode*, const TupleNode*> dps_call(const CallNode* call) {
  const auto* op = call->callee.as<ir::OpNode>();
  if (!op || op->name != "call_dps" || call->args.size() != 2) return {nullptr, nullptr};
  return {call->args[0].cast<ir::Expr>().as<ir::GlobalVarNode>(), call->args[1].cast<ir::Expr>().as<TupleNode>()};
}

std::vector<int64_t> shape_of(const tir::Buffer& buffer) {
  std::vector<int64_t> out;
  for (const Any& d : buffer->shape) {
    auto v = tir::const_int(d.cast<tir::PrimExpr>());
    out.push_back(v ? *v : -1);
  }
  return out;
}
// Whether an array of `shape` fits a parameter of `param` (-1: a symbolic
// dimension, any extent).
bool fits(const std::vector<int64_t>& shape, const std::vector<int64_t>& param) {
  if (shape.size() != param.size()) return false;
  for (size_t k = 0; k < shape.size(); ++k)
    if (param[k] != -1 && param[k] != shape[k]) return false;
  return true;
}
}  // namespace

std::map<std::string, std::set<size_t>> constant_inputs(const ir::IRModule& module) {
  std::map<std::string, std::set<size_t>> constant;
  std::set<std::string> escaping;
  Visitor v;
  v.on<CallNode>([&](const CallNode* call) {
    auto [callee, inputs] = dps_call(call);
    if (!callee || !inputs) return v.visit_children(call);
    std::set<size_t> here;
    for (size_t k = 0; k < inputs->fields.size(); ++k)
      if (inputs->fields[k].cast<ir::Expr>().as<ConstantNode>()) here.insert(k);
    auto [seen, first] = constant.emplace(callee->name, here);
    if (!first) {
      std::set<size_t> both;
      for (size_t k : seen->second)
        if (here.count(k)) both.insert(k);
      seen->second = both;
    }
    v.visit(call->args[1]);
  });
  v.on<ir::GlobalVarNode>([&](const ir::GlobalVarNode* g) { escaping.insert(g->name); });
  for (const std::string& name : module.names())
    if (module.lookup(name).as<FunctionNode>()) v.visit(Any(module.lookup(name)));
  for (const std::string& name : escaping) constant.erase(name);
  return constant;
}

ir::IRModule relayout_constant_inputs(const ir::IRModule& module, const std::set<std::string>& functions) {
  // One re-laid-out constant per (array, layout text): fusion may wrap one
  // weight in several constant nodes.
  std::map<std::pair<const Object*, std::string>, Constant> done;
  Mutator m;
  m.on<CallNode>([&](const CallNode* call, const ObjectRef& self) -> Any {
    ObjectRef rebuilt = m.mutate_children(self);
    const auto* now = rebuilt.as<CallNode>();
    auto [callee, inputs] = dps_call(now);
    if (!callee || !inputs || !functions.count(callee->name)) return Any(rebuilt);
    const auto* f = module.lookup(callee->name).as<tir::PrimFuncNode>();
    if (!f) return Any(rebuilt);
    std::vector<tir::Buffer> params =
        tir::PrimFunc(ObjectPtr<Object>(const_cast<tir::PrimFuncNode*>(f))).buffer_params();
    std::vector<ir::Expr> fields;
    for (const Any& a : inputs->fields) fields.push_back(a.cast<ir::Expr>());
    for (const auto& [input, text] : tir::param_layouts(*f)) {
      size_t k = std::stoul(input);
      auto where = [&] { return "call_dps @" + callee->name + " input " + input; };
      if (k >= fields.size() || k >= params.size()) LOOM_THROW(Error) << where() << ": there is no such input";
      const auto* c = fields[k].as<ConstantNode>();
      if (!c) {
        LOOM_THROW(Error) << where() << " must be a constant: @" << callee->name << " takes it in the layout " << text
                          << ", and only constants are re-laid out";
      }
      auto key = std::make_pair(static_cast<const Object*>(c->data.get()), text);
      auto found = done.find(key);
      if (found == done.end()) {
        Constant laid(tir::relayout(c->data, tir::parse_layout(text, c->data.shape_vector().size())));
        if (!fits(laid->data.shape_vector(), shape_of(params[k]))) {
          LOOM_THROW(Error) << where() << ": the constant of shape " << ir::to_text(Any(c->data->shape))
                            << " in the layout " << text << " does not fit the parameter '" << params[k]->name << "'";
        }
        graph::infer_expr_type(laid, module);
        found = done.emplace(key, laid).first;
      }
      fields[k] = found->second;
    }
    std::vector<ir::Type> type_args;
    for (const Any& t : now->type_args) type_args.push_back(t.cast<ir::Type>());
    Call out(now->callee, {now->args[0].cast<ir::Expr>(), Tuple(fields)}, now->attrs, type_args);
    graph::infer_expr_type(out, module);
    return Any(out);
  });
  std::map<std::string, Any> changed;
  for (const std::string& name : module.names()) {
    ir::BaseFunc f = module.lookup(name);
    if (!f.as<FunctionNode>()) continue;
    Any after = m.mutate(Any(f));
    if (!after.as_object_ref().same_as(f)) changed[name] = after;
  }
  return module.with_functions(changed);
}

}  // namespace loom::graph
