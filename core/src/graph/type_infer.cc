// Type inference over graph functions (docs/ir.md).  checked_type is a
// cache on the (otherwise immutable) expression nodes, ignored by
// structural equality, so it is filled in place; a function whose ret_type
// is missing is rebuilt with it.
#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "loom/graph/function.h"
#include "loom/graph/type_infer.h"
#include "loom/ir/op.h"
#include "loom/ir/text.h"
#include "loom/object/structural.h"
#include "loom/support/stack.h"
#include "loom/tir/function.h"
#include "loom/tir/functor.h"

namespace loom::graph {

using namespace loom::ir;  // NOLINT: the module, types and functions of the ir base

namespace {

class TypeInferencer {
 public:
  TypeInferencer(const IRModule& module, std::vector<Diagnostic>& out) : module_(module), out_(out) {}

  // The type of @name's value as a function (inferring a graph function's
  // result type on demand; a recursive call sees the declared result type,
  // or an unknown one when there is none).
  Type function_type(const std::string& name) {
    auto cached = function_types_.find(name);
    if (cached != function_types_.end()) return cached->second;
    BaseFunc f = module_.lookup(name);
    if (const auto* g = f.as<graph::FunctionNode>()) {
      std::vector<Type> params;
      for (const Any& p : g->params) params.push_back(p.cast<graph::Var>()->annotation);
      function_types_[name] = g->ret_type.defined() ? Type(FuncType(params, g->ret_type)) : Type();  // in progress
      std::string saved = name_;
      name_ = name;
      Type ret = g->ret_type.defined() ? g->ret_type : infer(g->body);
      if (g->ret_type.defined()) {
        Type body = infer(g->body);
        if (body.defined() && !structural_equal(body, g->ret_type)) {
          report("the body has type " + to_text(body) + " but the function declares " + to_text(g->ret_type), g->body);
        }
      }
      name_ = saved;
      return function_types_[name] = FuncType(params, ret);
    }
    if (const auto* x = f.as<ExternFuncNode>()) return function_types_[name] = x->signature;
    return function_types_[name] = Type();  // prim functions are called through call_dps
  }

  Type expr_type(const Expr& e) { return infer(e); }

 private:
  void report(const std::string& message, const Any& node) {
    out_.push_back(Diagnostic{name_, message, node.is_none() ? "" : to_text(node)});
  }

  Type infer(const Expr& e) {
    if (!e.defined()) return Type();
    if (e->checked_type.defined()) return e->checked_type;
    auto failed = failed_.find(e.get());
    if (failed != failed_.end()) return failed->second;  // reported once per inference
    size_t problems = out_.size();
    Type t = with_stack([&] { return compute(e); });  // one level of stack per level of nesting
    // Only a type found without a problem is cached on the node (see the
    // file comment): a node whose type came with a problem must be checked
    // again by the next inference, or a second InferType would accept it.
    if (out_.size() == problems)
      const_cast<ExprNode*>(e.get())->checked_type = t;
    else
      failed_[e.get()] = t;
    return t;
  }

  Type compute(const Expr& e) {
    Any where(e);
    if (const auto* v = e.as<graph::VarNode>()) return v->annotation.defined() ? v->annotation : bound_types_[v];
    if (const auto* c = e.as<graph::ConstantNode>()) {
      std::vector<int64_t> shape = c->data.shape_vector();
      return tir::tensor_type(shape, c->data->dtype);
    }
    if (const auto* g = e.as<GlobalVarNode>()) return module_.contains(g->name) ? function_type(g->name) : Type();
    if (const auto* t = e.as<graph::TupleNode>()) {
      std::vector<Type> fields;
      for (const Any& f : t->fields) fields.push_back(infer(f.cast<Expr>()));
      return TupleType(fields);
    }
    if (const auto* p = e.as<graph::TupleGetItemNode>()) {
      Type tuple = infer(p->tuple);
      if (!tuple.defined()) return Type();
      const auto* tt = tuple.as<TupleTypeNode>();
      if (!tt) {
        report("tuple item of a non-tuple of type " + to_text(tuple), where);
        return Type();
      }
      if (p->index >= static_cast<int64_t>(tt->fields.size())) {
        report("tuple index " + std::to_string(p->index) + " is out of range for a tuple of " +
                   std::to_string(tt->fields.size()) + " field" + (tt->fields.size() == 1 ? "" : "s"),
               where);
        return Type();
      }
      return tt->fields[p->index].cast<Type>();
    }
    if (const auto* p = e.as<graph::LetNode>()) {
      Type value = infer(p->value);
      if (p->var->annotation.defined() && value.defined() && !structural_equal(value, p->var->annotation)) {
        report("let binds '%" + p->var->name + "' declared as " + to_text(p->var->annotation) + " to a value of type " +
                   to_text(value),
               where);
      }
      bound_types_[p->var.get()] = p->var->annotation.defined() ? p->var->annotation : value;
      if (!value.defined() && poisoned(p->value)) poisoned_.insert(p->var.get());
      return infer(p->body);
    }
    if (const auto* p = e.as<graph::IfNode>()) {
      Type cond = infer(p->cond);
      if (cond.defined() && !is_bool(cond))
        report("the condition of if has type " + to_text(cond) + ", not bool", where);
      Type then_type = infer(p->then_branch), else_type = infer(p->else_branch);
      if (then_type.defined() && else_type.defined() && !structural_equal(then_type, else_type)) {
        report("the branches of if have different types: " + to_text(then_type) + " and " + to_text(else_type), where);
      }
      return then_type.defined() ? then_type : else_type;
    }
    if (const auto* p = e.as<graph::CallNode>()) return call(e, p);
    return Type();
  }

  static bool is_bool(const Type& t) {
    if (const auto* p = t.as<PrimTypeNode>()) return p->dtype == DataType::Bool();
    if (const auto* p = t.as<TensorTypeNode>())
      return p->dtype == DataType::Bool() && p->shape.defined() && p->shape.size() == 0;
    return false;
  }

  // Whether `e` has no type because of a problem already reported: an
  // expression whose inference reported one, a variable bound to one, a
  // tuple (item) or call built from one.  What reads it is not checked, so
  // one wrong type gives one error, not one more per reader ("argument 0
  // must be a tensor, got an untyped value").
  bool poisoned(const Expr& e) const {
    if (!e.defined()) return false;
    if (poisoned_.count(e.get())) return true;
    auto failed = failed_.find(e.get());
    if (failed != failed_.end() && !failed->second.defined()) return true;
    if (const auto* g = e.as<graph::TupleGetItemNode>()) return poisoned(g->tuple);
    if (const auto* t = e.as<graph::TupleNode>()) {
      for (const Any& f : t->fields)
        if (poisoned(f.cast<Expr>())) return true;
    }
    return false;
  }

  Type call(const Expr& e, const graph::CallNode* p) {
    bool follows = false;
    for (const Any& a : p->args) {
      Expr arg = a.cast<Expr>();
      if (!infer(arg).defined() && poisoned(arg)) follows = true;
    }
    if (follows) {
      poisoned_.insert(e.get());
      return Type();
    }
    if (const auto* op = p->callee.as<OpNode>()) {
      auto entry = OpRegistry::entry(op->name);
      if (!entry) return Type();  // reported by the well-formedness check
      if (!entry->def.infer_type.defined()) {
        report("operator '" + op->name + "' has no type rule", Any(e));
        return Type();
      }
      Type result;
      try {
        result = entry->def.infer_type(e, module_).cast<Type>();
      } catch (const Error& error) {
        report(op->name + ": " + error.what(), Any(e));
        return Type();
      }
      if (op->name == "call_dps") check_dps_types(e, p, result);
      return result;
    }
    Type callee = infer(p->callee);
    const auto* f = callee.as<FuncTypeNode>();
    if (!f) {
      if (callee.defined()) report("calls a value of type " + to_text(callee) + ", which is not a function", Any(e));
      return Type();
    }
    if (p->args.size() != f->params.size()) {
      report("calls a function of " + std::to_string(f->params.size()) + " parameter" +
                 (f->params.size() == 1 ? "" : "s") + " with " + std::to_string(p->args.size()) + " argument" +
                 (p->args.size() == 1 ? "" : "s"),
             Any(e));
    }
    // A callee's parameter types may name shape variables (a whole
    // dimension): each call binds them from its arguments, as the VM does,
    // and its result type is the callee's with them replaced.
    Binding binding;
    for (int pass = 0; pass < 2; ++pass) {  // bind first, so a composite may use a later parameter's variable
      for (size_t i = 0; i < p->args.size() && i < f->params.size(); ++i) {
        Type want = f->params[i].cast<Type>();
        Type got = p->args[i].cast<Expr>()->checked_type;
        if (!want.defined() || !got.defined()) continue;
        if (pass == 0) {
          bind_dims(want, got, binding);
        } else if (!structural_equal(substitute(want, binding), got)) {
          report("argument " + std::to_string(i) + " has type " + to_text(got) + " but the callee expects " +
                     to_text(want),
                 Any(e));
        }
      }
    }
    return binding.empty() ? f->ret : substitute(f->ret, binding);
  }

  using Binding = std::unordered_map<const Object*, tir::PrimExpr>;

  // Binds the variables that are whole dimensions of `want` to the
  // matching dimensions of `got` (the first binding stands; a mismatch is
  // reported by the comparison after substitution).
  static void bind_dims(const Type& want, const Type& got, Binding& binding) {
    const auto* w = want.as<TensorTypeNode>();
    const auto* g = got.as<TensorTypeNode>();
    if (w && g && !w->unknown_rank() && !g->unknown_rank() && w->shape.size() == g->shape.size()) {
      for (size_t k = 0; k < w->shape.size(); ++k) {
        const auto* var = w->shape[k].as_object_ref().as<tir::VarNode>();
        if (var && !binding.count(var)) binding[var] = g->shape[k].cast<tir::PrimExpr>();
      }
      return;
    }
    const auto* wt = want.as<TupleTypeNode>();
    const auto* gt = got.as<TupleTypeNode>();
    if (wt && gt && wt->fields.size() == gt->fields.size()) {
      for (size_t k = 0; k < wt->fields.size(); ++k)
        bind_dims(wt->fields[k].cast<Type>(), gt->fields[k].cast<Type>(), binding);
    }
  }

  // `e` with its integer operations on constants computed (`%n + 1` with
  // %n bound to 4 is 5); the type rules' own shapes are simplified by the
  // operators that make them, this only finishes a substitution.
  static tir::PrimExpr fold_constants(const tir::PrimExpr& e) {
    const auto* op = e.as<tir::BinaryOpNode>();
    if (!op) return e;
    tir::PrimExpr a = fold_constants(op->a), b = fold_constants(op->b);
    const auto* x = a.as<tir::IntImmNode>();
    const auto* y = b.as<tir::IntImmNode>();
    if (x && y) {
      int64_t p = x->value, q = y->value;
      auto floor_div = [](int64_t n, int64_t d) { return n / d - ((n % d != 0) && ((n < 0) != (d < 0))); };
      if (e.as<tir::AddNode>()) return tir::IntImm(x->dtype, p + q);
      if (e.as<tir::SubNode>()) return tir::IntImm(x->dtype, p - q);
      if (e.as<tir::MulNode>()) return tir::IntImm(x->dtype, p * q);
      if (e.as<tir::MinNode>()) return tir::IntImm(x->dtype, std::min(p, q));
      if (e.as<tir::MaxNode>()) return tir::IntImm(x->dtype, std::max(p, q));
      if (e.as<tir::FloorDivNode>() && q != 0) return tir::IntImm(x->dtype, floor_div(p, q));
      if (e.as<tir::FloorModNode>() && q != 0) return tir::IntImm(x->dtype, p - floor_div(p, q) * q);
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return e;
    if (e.as<tir::AddNode>()) return tir::Add(a, b);
    if (e.as<tir::SubNode>()) return tir::Sub(a, b);
    if (e.as<tir::MulNode>()) return tir::Mul(a, b);
    if (e.as<tir::MinNode>()) return tir::Min(a, b);
    if (e.as<tir::MaxNode>()) return tir::Max(a, b);
    if (e.as<tir::FloorDivNode>()) return tir::FloorDiv(a, b);
    if (e.as<tir::FloorModNode>()) return tir::FloorMod(a, b);
    return e;  // (comparisons and logic are not dimensions)
  }

  // `type` with the bound variables replaced in its dimensions.
  static Type substitute(const Type& type, const Binding& binding) {
    if (binding.empty() || !type.defined()) return type;
    if (const auto* t = type.as<TensorTypeNode>()) {
      if (t->unknown_rank()) return type;
      std::vector<Any> dims;
      for (const Any& d : t->shape) {
        tir::PrimExpr dim = d.cast<tir::PrimExpr>();
        dims.push_back(Any(fold_constants(tir::substitute(dim, binding))));
      }
      return TensorType(Array(dims), t->dtype);
    }
    if (const auto* t = type.as<TupleTypeNode>()) {
      std::vector<Type> fields;
      for (const Any& f : t->fields) fields.push_back(substitute(f.cast<Type>(), binding));
      return TupleType(fields);
    }
    return type;
  }

  // call_dps(@f, (inputs...)) -> out: each input and output against @f's
  // tensor parameters, in order.  Arity was checked by well_formed.
  void check_dps_types(const Expr& e, const graph::CallNode* p, const Type& out) {
    if (p->args.size() != 2) return;
    const auto* g = p->args[0].cast<Expr>().as<GlobalVarNode>();
    const auto* inputs = p->args[1].cast<Expr>().as<graph::TupleNode>();
    if (!g || !inputs || !module_.contains(g->name)) return;
    // A tuple result is one output per field.
    auto add_outputs = [](std::vector<Type>& to, const Type& t) {
      if (const auto* tuple = t.defined() ? t.as<TupleTypeNode>() : nullptr) {
        for (const Any& f : tuple->fields) to.push_back(f.cast<Type>());
      } else {
        to.push_back(t);
      }
    };
    std::vector<Type> passed;
    for (const Any& a : inputs->fields) passed.push_back(a.cast<Expr>()->checked_type);
    add_outputs(passed, out);
    BaseFunc callee = module_.lookup(g->name);
    auto role = [&](size_t i) {
      return i < inputs->fields.size() ? "input " + std::to_string(i)
                                       : "output " + std::to_string(i - inputs->fields.size());
    };
    // An extern function's signature, or a partitioned region's parameters
    // and result: each tensor compared as a whole.
    std::optional<std::vector<Type>> want;
    if (const auto* x = callee.as<ExternFuncNode>()) {
      want.emplace();
      for (const Any& t : x->signature->params) want->push_back(t.cast<Type>());
    } else if (const auto* fn = callee.as<graph::FunctionNode>()) {
      want.emplace();
      for (const Any& param : fn->params) {
        const auto* v = param.as_object_ref().as<graph::VarNode>();
        want->push_back(v->checked_type.defined() ? v->checked_type : v->annotation);
      }
      add_outputs(*want, fn->ret_type);
    }
    if (want) {
      for (size_t i = 0; i < passed.size() && i < want->size(); ++i) {
        const Type& w = (*want)[i];
        if (passed[i].defined() && w.defined() && !structural_equal(passed[i], w)) {
          report("call_dps " + role(i) + " of @" + g->name + " has type " + to_text(passed[i]) + " but @" + g->name +
                     " expects " + to_text(w),
                 Any(e));
        }
      }
      return;
    }
    const auto* prim = callee.as<tir::PrimFuncNode>();
    if (!prim) return;
    std::vector<const tir::BufferNode*> buffers;
    for (const Any& param : prim->params)
      if (const auto* b = param.as_object_ref().as<tir::BufferNode>()) buffers.push_back(b);
    for (size_t i = 0; i < passed.size() && i < buffers.size(); ++i) {
      const auto* t = passed[i].as<TensorTypeNode>();
      if (!passed[i].defined() || (t && !t->shape.defined())) continue;  // unknown: nothing to check
      std::string mismatch;
      if (!t) {
        mismatch = "is not a tensor";
      } else if (t->dtype != buffers[i]->dtype) {
        mismatch = "has dtype " + t->dtype.to_string() + ", the buffer " + buffers[i]->dtype.to_string();
      } else if (t->shape.size() != buffers[i]->shape.size()) {
        mismatch =
            "has rank " + std::to_string(t->shape.size()) + ", the buffer " + std::to_string(buffers[i]->shape.size());
      } else {
        for (size_t d = 0; d < t->shape.size() && mismatch.empty(); ++d) {
          const auto* have = t->shape[d].cast<tir::PrimExpr>().as<tir::IntImmNode>();
          const auto* want = buffers[i]->shape[d].cast<tir::PrimExpr>().as<tir::IntImmNode>();
          if (have && want && have->value != want->value) {
            mismatch = "has dimension " + std::to_string(d) + " of " + std::to_string(have->value) + ", the buffer " +
                       std::to_string(want->value);
          }
        }
      }
      if (!mismatch.empty()) {
        report("call_dps " + role(i) + " of @" + g->name + " (buffer '%" + buffers[i]->name + "') " + mismatch, Any(e));
      }
    }
  }

  const IRModule& module_;
  std::vector<Diagnostic>& out_;
  std::string name_;
  std::unordered_map<std::string, Type> function_types_;
  std::unordered_map<const Object*, Type> bound_types_;
  std::unordered_map<const Object*, Type> failed_;  // nodes typed with a problem, in this inference
  std::unordered_set<const Object*> poisoned_;      // untyped because of a problem reported before
};

}  // namespace

IRModule infer_types(const IRModule& module, std::vector<Diagnostic>* diagnostics) {
  std::vector<Diagnostic> local;
  std::vector<Diagnostic>& out = diagnostics ? *diagnostics : local;
  TypeInferencer inferencer(module, out);
  std::map<std::string, Any> typed;
  for (const std::string& name : module.names()) {
    BaseFunc f = module.lookup(name);
    const auto* g = f.as<graph::FunctionNode>();
    if (!g) continue;
    Type type = inferencer.function_type(name);
    if (!g->ret_type.defined() && type.defined()) {
      Type ret = type.as<FuncTypeNode>()->ret;
      if (ret.defined()) {
        std::vector<graph::Var> params;
        for (const Any& p : g->params) params.push_back(p.cast<graph::Var>());
        typed[name] = graph::Function(params, g->body, ret, g->attrs);
      }
    }
  }
  return module.with_functions(typed);
}

Type infer_expr_type(const Expr& expr, const IRModule& module) {
  std::vector<Diagnostic> problems;
  Type type = TypeInferencer(module, problems).expr_type(expr);
  if (problems.empty()) return type;
  std::string message = problems.front().message;  // no function: the expression stands alone
  if (!problems.front().node.empty()) message += " (in " + problems.front().node + ")";
  for (size_t k = 1; k < problems.size(); ++k) message += "; " + problems[k].message;
  throw TypeInferenceError(message);
}

}  // namespace loom::graph
