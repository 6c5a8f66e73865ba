// The well-formedness check (docs/ir.md, "Well-formedness").  It walks each
// function with the set of bound variables and reports every problem rather
// than stopping at the first.
#include <unordered_map>
#include <unordered_set>

#include "loom/graph/function.h"
#include "loom/graph/type_infer.h"
#include "loom/graph/well_formed.h"
#include "loom/ir/op.h"
#include "loom/ir/text.h"
#include "loom/object/traversal.h"
#include "loom/support/size.h"
#include "loom/support/stack.h"
#include "loom/tir/function.h"

namespace loom::graph {

using namespace loom::ir;  // NOLINT: the module, types and functions of the ir base

namespace {

using namespace loom::tir;  // NOLINT: the prim IR (its Var, Let and Call are written tir::, beside the graph IR's)

bool is_integer(DataType t) { return t.code == DataType::kInt || t.code == DataType::kUInt; }

class Checker {
 public:
  Checker(const IRModule& module, std::vector<Diagnostic>& out) : module_(module), out_(out) {}

  void function(const std::string& name, const BaseFunc& f) {
    name_ = name;
    bound_.clear();
    ever_bound_.clear();
    buffers_.clear();
    checked_.clear();
    free_vars_.clear();
    if (const auto* p = f.as<PrimFuncNode>())
      prim_func(p);
    else if (const auto* g = f.as<graph::FunctionNode>())
      graph_func(g);
    else if (const auto* e = f.as<ExternFuncNode>())
      extern_func(f, e);
    shapes(f);
  }

 private:
  void report(const std::string& message, const Any& node) {
    out_.push_back(Diagnostic{name_, message, node.is_none() ? "" : to_text(node)});
  }

  // Every tensor type and buffer of the function: constant dimensions are
  // not negative and their product is a size Loom can allocate
  // (docs/reliability.md, "Sizes").
  void shapes(const BaseFunc& f) {
    Visitor v;
    auto check = [&](const Array& shape, DataType dtype, const Any& node) {
      std::vector<int64_t> dims;
      for (const Any& d : shape) {
        const auto* c = d.as_object_ref().as<IntImmNode>();
        if (!c) return;  // symbolic: checked when it is bound, at run time
        dims.push_back(c->value);
      }
      try {
        checked_nbytes(dims, (dtype.bits * dtype.lanes + 7) / 8, to_text(node));
      } catch (const Error& e) {
        report(e.what(), node);
      }
    };
    v.on<TensorTypeNode>([&](const TensorTypeNode* t) {
      if (t->shape.defined())
        check(t->shape, t->dtype, Any(ObjectRef(ObjectPtr<Object>(const_cast<TensorTypeNode*>(t)))));
      v.visit_children(t);
    });
    v.on<BufferNode>([&](const BufferNode* b) {
      check(b->shape, b->dtype, Any(ObjectRef(ObjectPtr<Object>(const_cast<BufferNode*>(b)))));
      v.visit_children(b);
    });
    v.visit(Any(f));
  }

  // Binds `var` for the current scope; a variable object is bound once in a
  // function (the IR is in SSA form for variables).
  void bind(const Object* var, const Any& where) {
    bound_.insert(var);
    if (!ever_bound_.insert(var).second) {
      report("variable '" + to_text(Any(ObjectRef(ObjectPtr<Object>(const_cast<Object*>(var))))) + "' is bound twice",
             where);
    }
  }

  // ---- prim functions ------------------------------------------------------
  void prim_func(const PrimFuncNode* f) {
    for (const Any& p : f->params) {
      if (const auto* v = p.as_object_ref().as<tir::VarNode>()) bind(v, p);
    }
    // Buffer parameters bind their data variable and, on first appearance,
    // the symbolic variables of their shape, strides and offset.
    for (const Any& p : f->params) {
      const auto* b = p.as_object_ref().as<BufferNode>();
      if (!b) continue;
      declare_buffer(b, /*binds_symbols=*/true);
    }
    stmt(f->body);
  }

  void declare_buffer(const BufferNode* b, bool binds_symbols) {
    buffers_.insert(b);
    if (!bound_.count(b->data.get())) bind(b->data.get(), Any(b->data));  // aliases share a data var
    std::vector<Any> exprs(b->shape.begin(), b->shape.end());
    exprs.insert(exprs.end(), b->strides.begin(), b->strides.end());
    exprs.push_back(b->elem_offset);
    for (const Any& e : exprs) {
      if (binds_symbols) {
        bind_every_var(e);
      } else {
        prim(e.cast<PrimExpr>());
      }
    }
  }

  void use_buffer(const Buffer& b, const Any& where) {
    if (buffers_.count(b.get())) return;
    if (bound_.count(b->data.get())) {
      // A view (another shape of the same memory, e.g. FlattenBuffer's flat
      // buffers) of a parameter or of an enclosing alloc.
      declare_buffer(b.get(), /*binds_symbols=*/false);
      views_.push_back(b.get());
      return;
    }
    {
      report("buffer '%" + b->name + "' is used but is neither a parameter nor allocated by an enclosing alloc", where);
      buffers_.insert(b.get());  // report once
    }
  }

  void access(const Buffer& b, const Array& indices, const Any& where) {
    use_buffer(b, where);
    if (indices.size() != b->shape.size()) {
      report("buffer '%" + b->name + "' has " + std::to_string(b->shape.size()) + " dimension" +
                 (b->shape.size() == 1 ? "" : "s") + " but is indexed with " + std::to_string(indices.size()),
             where);
    }
    for (size_t i = 0; i < indices.size(); ++i) {
      PrimExpr index = indices[i].cast<PrimExpr>();
      prim(index);
      if (!is_integer(index.dtype())) {
        report("index " + std::to_string(i) + " of buffer '%" + b->name + "' has type " + index.dtype().to_string() +
                   "; buffer indices are integers",
               where);
      }
    }
  }

  // Each walk takes one more level of stack per level of nesting
  // (loom/support/stack.h).
  void prim(const PrimExpr& e) {
    with_stack([&] { prim_here(e); });
  }
  void prim_here(const PrimExpr& e) {
    if (!e.defined()) return;
    if (const auto* v = e.as<tir::VarNode>()) {
      if (!bound_.count(v)) report("variable '%" + v->name + "' is used but not bound", Any(e));
      return;
    }
    if (const auto* p = e.as<BufferLoadNode>()) {
      access(p->buffer, p->indices, Any(e));
      return;
    }
    if (const auto* p = e.as<tir::LetNode>()) {
      prim(p->value);
      if (p->value.defined() && p->value.dtype() != p->var->dtype) {
        report("let binds '%" + p->var->name + "' of type " + p->var->dtype.to_string() + " to a value of type " +
                   p->value.dtype().to_string(),
               Any(e));
      }
      bind(p->var.get(), Any(e));
      prim(p->body);
      bound_.erase(p->var.get());
      return;
    }
    if (const auto* p = e.as<SelectNode>()) {
      if (p->condition.dtype().code != DataType::kBool) {
        report("the condition of select has type " + p->condition.dtype().to_string() + ", not bool", Any(e));
      }
    }
    // Every other node: check its prim-expression children.
    for (const auto& field : TypeRegistry::info(e->type_index()).fields) {
      Any child = field.get(e.get());
      if (child.object() && child.object()->is_instance<PrimExprNode>()) prim(child.cast<PrimExpr>());
      if (child.object() && child.object()->is_instance<ArrayNode>()) {
        for (const Any& item : child.cast<Array>())
          if (item.object() && item.object()->is_instance<PrimExprNode>()) prim(item.cast<PrimExpr>());
      }
    }
  }

  void stmt(const Stmt& s) {
    with_stack([&] { stmt_here(s); });
  }
  void stmt_here(const Stmt& s) {
    if (!s.defined()) return;
    Any where(s);
    if (const auto* p = s.as<ForNode>()) {
      prim(p->min);
      prim(p->extent);
      for (const PrimExpr* bound : {&p->min, &p->extent}) {
        if (bound->defined() && bound->dtype() != p->loop_var->dtype) {
          report("loop bound of type " + bound->dtype().to_string() + " for loop variable '%" + p->loop_var->name +
                     "' of type " + p->loop_var->dtype.to_string(),
                 Any(*bound));
        }
      }
      if (const auto* c = p->extent.as<IntImmNode>(); c && c->value < 0) {
        report("loop '%" + p->loop_var->name + "' has a negative extent, " + std::to_string(c->value), where);
      }
      if (!is_integer(p->loop_var->dtype)) {
        report("loop variable '%" + p->loop_var->name + "' has type " + p->loop_var->dtype.to_string() +
                   "; loop variables are integers",
               where);
      }
      bind(p->loop_var.get(), where);
      stmt(p->body);
      bound_.erase(p->loop_var.get());
    } else if (const auto* p = s.as<BufferStoreNode>()) {
      access(p->buffer, p->indices, where);
      prim(p->value);
      DataType want = p->buffer->dtype, got = p->value.dtype();
      if (want.code != got.code || want.bits != got.bits) {
        report("stores a " + got.to_string() + " value into buffer '%" + p->buffer->name + "' of " + want.to_string(),
               where);
      }
      int lanes = p->indices.size() == 0 ? 1 : p->indices[p->indices.size() - 1].cast<PrimExpr>().dtype().lanes;
      if (got.lanes != lanes) {
        report("stores a value of " + std::to_string(got.lanes) + " lanes at an index of " + std::to_string(lanes) +
                   " lanes into buffer '%" + p->buffer->name + "'",
               where);
      }
    } else if (const auto* p = s.as<AllocateNode>()) {
      declare_buffer(p->buffer.get(), /*binds_symbols=*/false);
      stmt(p->body);
      buffers_.erase(p->buffer.get());
      for (const BufferNode* view : views_)  // views of this memory end with it
        if (view->data.get() == p->buffer->data.get()) buffers_.erase(view);
      bound_.erase(p->buffer->data.get());
    } else if (const auto* p = s.as<LetStmtNode>()) {
      prim(p->value);
      if (p->value.defined() && p->value.dtype() != p->var->dtype) {
        report("let binds '%" + p->var->name + "' of type " + p->var->dtype.to_string() + " to a value of type " +
                   p->value.dtype().to_string(),
               where);
      }
      bind(p->var.get(), where);
      stmt(p->body);
      bound_.erase(p->var.get());
    } else if (const auto* p = s.as<IfThenElseNode>()) {
      prim(p->condition);
      if (p->condition.dtype().code != DataType::kBool) {
        report("the condition of if has type " + p->condition.dtype().to_string() + ", not bool", where);
      }
      stmt(p->then_case);
      stmt(p->else_case);
    } else if (const auto* p = s.as<SeqStmtNode>()) {
      for (const Any& item : p->seq) stmt(item.cast<Stmt>());
    } else if (const auto* p = s.as<EvaluateNode>()) {
      prim(p->value);
    } else if (const auto* p = s.as<AttrStmtNode>()) {
      prim(p->value);
      stmt(p->body);
    }
  }

  // ---- graph functions -----------------------------------------------------
  void graph_func(const graph::FunctionNode* f) {
    for (const Any& p : f->params) {
      graph::Var v = p.cast<graph::Var>();
      bind(v.get(), p);
      bind_type_symbols(v->annotation);
    }
    expr(f->body);
  }

  // Symbolic dimensions in parameter types are bound by the parameters.
  void bind_type_symbols(const Type& t) {
    if (t.defined()) bind_every_var(Any(t));
  }

  // Binds every prim variable in `node` (symbols bound by a signature).
  void bind_every_var(const Any& node) {
    Visitor visitor;
    visitor.on<tir::VarNode>([&](const tir::VarNode* v) { bound_.insert(v); });
    visitor.visit(node);
  }

  void expr(const Expr& e) {
    with_stack([&] { expr_here(e); });
  }
  void expr_here(const Expr& e) {
    if (!e.defined()) return;
    Any where(e);
    // A value used in several places (a DAG built in Python or C++) is
    // checked once; at each later use only its free variables are
    // (loom/graph/shared.h).
    if (e.as<graph::CallNode>() || e.as<graph::TupleNode>() || e.as<graph::TupleGetItemNode>() ||
        e.as<graph::IfNode>()) {
      if (!checked_.insert(e.get()).second) {
        for (const graph::VarNode* v : free_vars(e))
          if (!bound_.count(v)) report("variable '%" + v->name + "' is used but not bound", where);
        return;
      }
    }
    if (const auto* v = e.as<graph::VarNode>()) {
      if (!bound_.count(v)) report("variable '%" + v->name + "' is used but not bound", where);
    } else if (const auto* g = e.as<GlobalVarNode>()) {
      if (!module_.contains(g->name)) report("reference to undefined function @" + g->name, where);
    } else if (const auto* p = e.as<graph::CallNode>()) {
      call(p, where);
    } else if (const auto* p = e.as<graph::TupleNode>()) {
      for (const Any& f : p->fields) expr(f.cast<Expr>());
    } else if (const auto* p = e.as<graph::TupleGetItemNode>()) {
      expr(p->tuple);
    } else if (const auto* p = e.as<graph::LetNode>()) {
      expr(p->value);
      bind(p->var.get(), where);
      expr(p->body);
      bound_.erase(p->var.get());
    } else if (const auto* p = e.as<graph::IfNode>()) {
      expr(p->cond);
      expr(p->then_branch);
      expr(p->else_branch);
    }
  }

  // The graph variables `e` uses and does not bind, each once.
  const std::vector<const graph::VarNode*>& free_vars(const Expr& e) {
    auto found = free_vars_.find(e.get());
    if (found != free_vars_.end()) return found->second;
    std::vector<const graph::VarNode*> out;
    std::unordered_set<const graph::VarNode*> seen;
    auto add = [&](const Expr& child, const graph::VarNode* except) {
      if (!child.defined()) return;
      for (const graph::VarNode* v : with_stack([&] { return free_vars(child); }))
        if (v != except && seen.insert(v).second) out.push_back(v);
    };
    if (const auto* v = e.as<graph::VarNode>()) {
      out.push_back(v);
    } else if (const auto* p = e.as<graph::CallNode>()) {
      add(p->callee, nullptr);
      for (const Any& a : p->args) add(a.cast<Expr>(), nullptr);
    } else if (const auto* p = e.as<graph::TupleNode>()) {
      for (const Any& f : p->fields) add(f.cast<Expr>(), nullptr);
    } else if (const auto* p = e.as<graph::TupleGetItemNode>()) {
      add(p->tuple, nullptr);
    } else if (const auto* p = e.as<graph::LetNode>()) {
      add(p->value, nullptr);
      add(p->body, p->var.get());
    } else if (const auto* p = e.as<graph::IfNode>()) {
      add(p->cond, nullptr);
      add(p->then_branch, nullptr);
      add(p->else_branch, nullptr);
    }
    return free_vars_[e.get()] = std::move(out);
  }

  // The number of tensors call_dps passes to a prim function (its buffer
  // parameters; scalar parameters come from the buffers' shapes) or an
  // extern function (its signature's parameters); -1 for anything else.
  int64_t dps_parameter_count(const BaseFunc& f) {
    if (const auto* p = f.as<PrimFuncNode>()) {
      int64_t buffers = 0;
      for (const Any& param : p->params) buffers += param.object()->is_instance<BufferNode>() ? 1 : 0;
      return buffers;
    }
    if (const auto* x = f.as<ExternFuncNode>()) return static_cast<int64_t>(x->signature->params.size());
    // A partitioned region (docs/partitioning.md): its inputs, then one
    // output per field of its result.
    if (const auto* g = f.as<graph::FunctionNode>(); g && !graph::codegen_of(f).empty()) {
      const auto* tuple = g->ret_type.defined() ? g->ret_type.as<TupleTypeNode>() : nullptr;
      return static_cast<int64_t>(g->params.size() + (tuple ? tuple->fields.size() : 1));
    }
    return -1;
  }

  void call(const graph::CallNode* p, const Any& where) {
    for (const Any& a : p->args) expr(a.cast<Expr>());
    if (const auto* op = p->callee.as<OpNode>()) {
      auto entry = OpRegistry::entry(op->name);
      if (!entry) {
        report("unknown operator '" + op->name + "'", where);
        return;
      }
      int arity = entry->def.num_inputs;
      if (arity >= 0 && static_cast<int>(p->args.size()) != arity) {
        report("operator '" + op->name + "' takes " + std::to_string(arity) + " argument" + (arity == 1 ? "" : "s") +
                   ", got " + std::to_string(p->args.size()),
               where);
      }
      try {
        OpRegistry::check_attrs(op->name, p->attrs);
      } catch (const Error& e) {
        report(e.what(), where);
      }
      if (op->name == "call_dps") call_dps(p, where);
      if ((op->name == "call_dps" || op->name == "call_packed") && p->type_args.size() != 1) {
        report(op->name + " needs exactly one output type, written " + op->name + "<TYPE>(...)", where);
      }
      return;
    }
    expr(p->callee);
    if (const auto* g = p->callee.as<GlobalVarNode>(); g && module_.contains(g->name)) {
      BaseFunc callee = module_.lookup(g->name);
      if (const auto* f = callee.as<graph::FunctionNode>()) {
        if (f->params.size() != p->args.size()) {
          report("@" + g->name + " takes " + std::to_string(f->params.size()) + " argument" +
                     (f->params.size() == 1 ? "" : "s") + ", got " + std::to_string(p->args.size()),
                 where);
        }
      } else {
        report("@" + g->name + " is a " + (callee.as<PrimFuncNode>() ? "prim" : "extern") +
                   " function; call it through call_dps",
               where);
      }
    }
  }

  void call_dps(const graph::CallNode* p, const Any& where) {
    if (p->args.size() != 2) return;  // arity reported already
    const auto* g = p->args[0].cast<Expr>().as<GlobalVarNode>();
    if (!g) {
      report("the first argument of call_dps must be a global function @f", where);
      return;
    }
    if (!module_.contains(g->name)) return;  // reported as an undefined reference
    BaseFunc callee = module_.lookup(g->name);
    int64_t params = dps_parameter_count(callee);
    if (params < 0) {
      report("call_dps calls @" + g->name + ", a graph function; call_dps calls prim and extern functions", where);
      return;
    }
    const auto* inputs = p->args[1].cast<Expr>().as<graph::TupleNode>();
    if (!inputs) {
      report("the second argument of call_dps must be a tuple of inputs (args...)", where);
      return;
    }
    int64_t outputs = 1;
    if (p->type_args.size() == 1) {
      if (const auto* tuple = p->type_args[0].cast<Type>().as<TupleTypeNode>())
        outputs = static_cast<int64_t>(tuple->fields.size());
    }
    int64_t passed = static_cast<int64_t>(inputs->fields.size()) + outputs;
    if (passed != params) {
      report("call_dps passes " + std::to_string(inputs->fields.size()) + " input" +
                 (inputs->fields.size() == 1 ? "" : "s") + " and " + std::to_string(outputs) + " output" +
                 (outputs == 1 ? "" : "s") + " to @" + g->name + ", which takes " + std::to_string(params) +
                 (callee.as<PrimFuncNode>() ? " buffer" : "") + " parameter" + (params == 1 ? "" : "s"),
             where);
    }
  }

  // ---- extern functions ----------------------------------------------------
  void extern_func(const BaseFunc& f, const ExternFuncNode* e) {
    try {
      ExternKindEntry kind = ExternKindRegistry::get(e->kind);
      kind.validate(f, name_);
    } catch (const Error& error) {
      report(error.what(), Any());
    }
  }

  const IRModule& module_;
  std::vector<Diagnostic>& out_;
  std::string name_;
  std::unordered_set<const Object*> bound_;       // in scope now
  std::unordered_set<const Object*> ever_bound_;  // bound anywhere so far
  std::unordered_set<const Object*> checked_;     // values checked once (a DAG)
  std::unordered_map<const Object*, std::vector<const graph::VarNode*>> free_vars_;
  std::unordered_set<const Object*> buffers_;
  std::vector<const BufferNode*> views_;
};

}  // namespace

std::vector<Diagnostic> well_formed(const IRModule& module) {
  std::vector<Diagnostic> out;
  Checker checker(module, out);
  for (const auto& item : module->functions->items) checker.function(item.first, item.second.cast<BaseFunc>());
  return out;
}

IRModule check_module(const IRModule& module) {
  std::vector<Diagnostic> diagnostics = well_formed(module);
  IRModule typed = module;
  if (diagnostics.empty()) typed = infer_types(module, &diagnostics);
  if (!diagnostics.empty()) {
    throw Error(std::to_string(diagnostics.size()) + " problem" + (diagnostics.size() == 1 ? "" : "s") + ":" +
                diagnostic_lines(diagnostics));
  }
  return typed;
}

}  // namespace loom::graph
