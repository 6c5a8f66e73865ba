// The IR's constructors in the global function registry, under each node's
// type key ("tir.Add", "graph.Call", "ir.TensorType", ...), plus the
// operator registry's queries ("ir.op_info", ...).  This is how a frontend
// (the Python package, docs/python.md "Builders") builds nodes: through the
// C++ constructors, so derived fields (a binary op's dtype, a buffer's data
// variable) and checks (operand dtypes, lane counts) are the same as in C++.
// Arguments are checked here: a missing (none) node where one is required
// or a wrong element in a list is a TypeError naming the constructor and
// the argument, never a null dereference further on.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "loom/graph/function.h"
#include "loom/ir/analysis.h"
#include "loom/ir/module.h"
#include "loom/ir/op.h"
#include "loom/support/registration.h"
#include "loom/tir/function.h"

namespace loom::ir {
namespace {

template <class F>
void def(const std::string& name, F body, std::string doc) {
  FunctionRegistry::register_function(name, Function::typed(std::move(body), name), std::move(doc));
}

// `value`, which must be defined.
template <class T>
T need(T value, const std::string& ctor, const char* arg) {
  if (!value.defined()) LOOM_THROW(TypeError) << ctor << ": " << arg << " is required, got none";
  return value;
}

// The items of `items` as T, each defined.
template <class T>
std::vector<T> list(const Array& items, const std::string& ctor, const char* arg) {
  std::vector<T> out;
  for (size_t i = 0; i < items.size(); ++i) {
    T item;
    try {
      item = items[i].cast<T>();
    } catch (const Error& e) {
      LOOM_THROW(TypeError) << ctor << ": " << arg << "[" << i << "]: " << e.what();
    }
    if (!item.defined()) {
      LOOM_THROW(TypeError) << ctor << ": " << arg << "[" << i << "] must be a " << T::ContainerType::_type_key
                            << ", got none";
    }
    out.push_back(std::move(item));
  }
  return out;
}

Map or_empty(Map m) { return m.defined() ? m : Map::empty(); }

void register_types() {
  def(
      "ir.GlobalVar", [](std::string name) { return GlobalVar(std::move(name)); }, "ir.GlobalVar(name)");
  def(
      "ir.Op", [](std::string name) { return Op::get(name); },
      "ir.Op(name): the registered operator (loads the plugin that provides it)");
  def(
      "ir.PrimType", [](DataType dtype) { return PrimType(dtype); }, "ir.PrimType(dtype)");
  def(
      "ir.TensorType",
      [](Array shape, DataType dtype) {
        if (shape.defined()) list<tir::PrimExpr>(shape, "ir.TensorType", "shape");
        return TensorType(shape, dtype);
      },
      "ir.TensorType(shape: [PrimExpr] or none for unknown rank, dtype)");
  def(
      "ir.TupleType", [](Array fields) { return TupleType(list<Type>(fields, "ir.TupleType", "fields")); },
      "ir.TupleType(fields)");
  def(
      "ir.FuncType", [](Array params, Type ret) { return FuncType(list<Type>(params, "ir.FuncType", "params"), ret); },
      "ir.FuncType(params, ret or none)");
  def(
      "ir.OpaqueType", [](std::string name) { return OpaqueType(std::move(name)); }, "ir.OpaqueType(name)");
}

void register_module() {
  def(
      "ir.ExternFunc",
      [](std::string kind, std::string payload, FuncType signature, std::string convention, Map attrs,
         std::string encoding) {
        if (encoding != "text" && encoding != "base64") {
          LOOM_THROW(Error) << "ir.ExternFunc: encoding is 'text' or 'base64', not '" << encoding << "'";
        }
        ExternFunc f(std::move(kind), std::move(payload), need(signature, "ir.ExternFunc", "signature"),
                     std::move(convention), or_empty(attrs));
        const_cast<ExternFuncNode*>(f.get())->encoding = encoding;  // a new node: not shared yet
        return f;
      },
      "ir.ExternFunc(kind, payload, signature: FuncType, convention 'dps' or 'packed', attrs, encoding 'text' or "
      "'base64')");
  def(
      "ir.IRModule",
      [](Map functions, Map attrs, Map global_infos) {
        std::map<std::string, Any> checked;
        if (functions.defined()) {
          for (const auto& [name, f] : functions.get()->items) {
            try {
              checked[name] = need(f.cast<BaseFunc>(), "ir.IRModule", "a function");
            } catch (const Error& e) {
              LOOM_THROW(TypeError) << "ir.IRModule: function '" << name << "': " << e.what();
            }
          }
        }
        return IRModule(checked, or_empty(attrs), or_empty(global_infos));
      },
      "ir.IRModule(functions: {name: function}, attrs, global_infos)");
  def(
      "ir.IRModule.with_function",
      [](IRModule mod, std::string name, BaseFunc f) {
        return need(mod, "ir.IRModule.with_function", "module")
            .with_function(name, need(f, "ir.IRModule.with_function", "function"));
      },
      "the module with `name` bound to `function`");
  def(
      "ir.IRModule.with_attr",
      [](IRModule mod, std::string key, Any value) {
        return need(mod, "ir.IRModule.with_attr", "module").with_attr(key, value);
      },
      "the module with attribute `key` set");
  def(
      "ir.infer_type",
      [](Expr e, IRModule mod) {
        return infer_expr_type(need(e, "ir.infer_type", "expr"), mod.defined() ? mod : IRModule::empty());
      },
      "the type of a graph expression (its checked_type, filled with those of its sub-expressions)");
  def(
      "ir.well_formed",
      [](IRModule mod) {
        std::vector<Any> out;
        for (const Diagnostic& d : well_formed(need(mod, "ir.well_formed", "module"))) out.push_back(d.to_string());
        return Array(out);
      },
      "every well-formedness problem of a module, as text (empty: well formed)");
}

// The operator registry, for builders that check a call before making it.
void register_op_queries() {
  def(
      "ir.op_list", [] { return to_array(with_available(OpRegistry::list(), "op")); },
      "the operators registered or provided by a discovered plugin (loads nothing)");
  def(
      "ir.op_info",
      [](std::string name) {
        OpEntry e = OpRegistry::get(name);
        std::vector<Any> attrs;
        for (const OpAttrField& f : e.def.attrs) {
          attrs.push_back(Map{{"name", f.name}, {"type", f.type}, {"default", f.default_value}, {"doc", f.doc}});
        }
        return Map{{"name", e.name},        {"num_inputs", static_cast<int64_t>(e.def.num_inputs)},
                   {"attrs", Array(attrs)}, {"pattern", std::string(pattern_kind_name(e.def.pattern))},
                   {"doc", e.def.doc},      {"owner", e.owner}};
      },
      "an operator's arity (-1: any), attribute schema (name, type, default: none if required, doc), "
      "pattern, doc and owner");
  def(
      "ir.op_check_attrs", [](std::string name, Map attrs) { return OpRegistry::check_attrs(name, or_empty(attrs)); },
      "the attributes checked against the operator's schema, defaults filled in (TypeError otherwise)");
}

void register_graph() {
  def(
      "graph.Var", [](std::string name, Type annotation) { return graph::Var(std::move(name), annotation); },
      "graph.Var(name, annotation or none)");
  def(
      "graph.Constant", [](runtime::NDArray data) { return graph::Constant(need(data, "graph.Constant", "data")); },
      "graph.Constant(data: NDArray)");
  def(
      "graph.Call",
      [](Expr callee, Array args, Map attrs, Array type_args) {
        return graph::Call(need(callee, "graph.Call", "callee"), list<Expr>(args, "graph.Call", "args"),
                           or_empty(attrs), list<Type>(type_args, "graph.Call", "type_args"));
      },
      "graph.Call(callee, args, attrs, type_args)");
  def(
      "graph.Tuple", [](Array fields) { return graph::Tuple(list<Expr>(fields, "graph.Tuple", "fields")); },
      "graph.Tuple(fields)");
  def(
      "graph.TupleGetItem",
      [](Expr tuple, int64_t index) {
        if (index < 0) LOOM_THROW(TypeError) << "graph.TupleGetItem: index must be >= 0, got " << index;
        return graph::TupleGetItem(need(tuple, "graph.TupleGetItem", "tuple"), index);
      },
      "graph.TupleGetItem(tuple, index)");
  def(
      "graph.Let",
      [](graph::Var var, Expr value, Expr body) {
        return graph::Let(need(var, "graph.Let", "var"), need(value, "graph.Let", "value"),
                          need(body, "graph.Let", "body"));
      },
      "graph.Let(var, value, body)");
  def(
      "graph.If",
      [](Expr c, Expr t, Expr e) {
        return graph::If(need(c, "graph.If", "cond"), need(t, "graph.If", "then_branch"),
                         need(e, "graph.If", "else_branch"));
      },
      "graph.If(cond, then_branch, else_branch)");
  def(
      "graph.Function",
      [](Array params, Expr body, Type ret_type, Map attrs) {
        return graph::Function(list<graph::Var>(params, "graph.Function", "params"),
                               need(body, "graph.Function", "body"), ret_type, or_empty(attrs));
      },
      "graph.Function(params, body, ret_type or none, attrs)");
}

void register_tir_exprs() {
  using namespace tir;  // NOLINT
  def(
      "tir.IntImm", [](DataType dtype, int64_t value) { return IntImm(dtype, value); }, "tir.IntImm(dtype, value)");
  def(
      "tir.FloatImm", [](DataType dtype, double value) { return FloatImm(dtype, value); },
      "tir.FloatImm(dtype, value)");
  def(
      "tir.StringImm", [](std::string value) { return StringImm(std::move(value)); }, "tir.StringImm(value)");
  def(
      "tir.Var", [](std::string name, DataType dtype) { return Var(std::move(name), dtype); }, "tir.Var(name, dtype)");
  using Binary = std::function<PrimExpr(PrimExpr, PrimExpr)>;
  const std::vector<std::pair<const char*, Binary>> binaries = {
      {"tir.Add", [](PrimExpr a, PrimExpr b) { return Add(a, b); }},
      {"tir.Sub", [](PrimExpr a, PrimExpr b) { return Sub(a, b); }},
      {"tir.Mul", [](PrimExpr a, PrimExpr b) { return Mul(a, b); }},
      {"tir.Div", [](PrimExpr a, PrimExpr b) { return Div(a, b); }},
      {"tir.FloorDiv", [](PrimExpr a, PrimExpr b) { return FloorDiv(a, b); }},
      {"tir.FloorMod", [](PrimExpr a, PrimExpr b) { return FloorMod(a, b); }},
      {"tir.Min", [](PrimExpr a, PrimExpr b) { return Min(a, b); }},
      {"tir.Max", [](PrimExpr a, PrimExpr b) { return Max(a, b); }},
      {"tir.EQ", [](PrimExpr a, PrimExpr b) { return EQ(a, b); }},
      {"tir.NE", [](PrimExpr a, PrimExpr b) { return NE(a, b); }},
      {"tir.LT", [](PrimExpr a, PrimExpr b) { return LT(a, b); }},
      {"tir.LE", [](PrimExpr a, PrimExpr b) { return LE(a, b); }},
      {"tir.GT", [](PrimExpr a, PrimExpr b) { return GT(a, b); }},
      {"tir.GE", [](PrimExpr a, PrimExpr b) { return GE(a, b); }},
      {"tir.And", [](PrimExpr a, PrimExpr b) { return And(a, b); }},
      {"tir.Or", [](PrimExpr a, PrimExpr b) { return Or(a, b); }},
  };
  for (const auto& [key, make] : binaries) {
    std::string name = key;
    def(
        name, [make = make](PrimExpr a, PrimExpr b) { return make(a, b); }, name + "(a, b): both of one dtype");
  }
  def(
      "tir.Not", [](PrimExpr a) { return Not(need(a, "tir.Not", "a")); }, "tir.Not(a)");
  def(
      "tir.Select",
      [](PrimExpr c, PrimExpr t, PrimExpr f) {
        return Select(need(c, "tir.Select", "condition"), need(t, "tir.Select", "true_value"),
                      need(f, "tir.Select", "false_value"));
      },
      "tir.Select(condition, true_value, false_value)");
  def(
      "tir.Cast", [](DataType dtype, PrimExpr value) { return Cast(dtype, need(value, "tir.Cast", "value")); },
      "tir.Cast(dtype, value)");
  def(
      "tir.Call",
      [](DataType dtype, std::string op, Array args) {
        return Call(dtype, std::move(op), list<PrimExpr>(args, "tir.Call", "args"));
      },
      "tir.Call(dtype, op, args): an intrinsic call (loom/tir/intrinsic.h)");
  def(
      "tir.Buffer",
      [](std::string name, DataType dtype, Array shape, std::string scope) {
        return Buffer(std::move(name), dtype, list<PrimExpr>(shape, "tir.Buffer", "shape"), std::move(scope));
      },
      "tir.Buffer(name, dtype, shape, scope)");
  def(
      "tir.BufferLoad",
      [](Buffer buffer, Array indices) {
        return BufferLoad(need(buffer, "tir.BufferLoad", "buffer"),
                          list<PrimExpr>(indices, "tir.BufferLoad", "indices"));
      },
      "tir.BufferLoad(buffer, indices)");
  def(
      "tir.Ramp",
      [](PrimExpr base, PrimExpr stride, int64_t lanes) {
        return Ramp(need(base, "tir.Ramp", "base"), need(stride, "tir.Ramp", "stride"), lanes);
      },
      "tir.Ramp(base, stride, lanes)");
  def(
      "tir.Broadcast",
      [](PrimExpr value, int64_t lanes) { return Broadcast(need(value, "tir.Broadcast", "value"), lanes); },
      "tir.Broadcast(value, lanes)");
  def(
      "tir.Let",
      [](Var var, PrimExpr value, PrimExpr body) {
        return Let(need(var, "tir.Let", "var"), need(value, "tir.Let", "value"), need(body, "tir.Let", "body"));
      },
      "tir.Let(var, value, body)");
}

void register_tir_stmts() {
  using namespace tir;  // NOLINT
  def(
      "tir.For",
      [](Var loop_var, PrimExpr min, PrimExpr extent, std::string kind, Stmt body, std::string thread,
         Map annotations) {
        ForKind for_kind;
        try {
          for_kind = parse_for_kind(kind);
        } catch (const Error& e) {
          LOOM_THROW(TypeError) << "tir.For: " << e.what();
        }
        return For(need(loop_var, "tir.For", "loop_var"), need(min, "tir.For", "min"),
                   need(extent, "tir.For", "extent"), for_kind, need(body, "tir.For", "body"), std::move(thread),
                   or_empty(annotations));
      },
      "tir.For(loop_var, min, extent, kind: serial|parallel|vectorized|unrolled|thread_binding, body, thread, "
      "annotations)");
  def(
      "tir.BufferStore",
      [](Buffer buffer, PrimExpr value, Array indices) {
        return BufferStore(need(buffer, "tir.BufferStore", "buffer"), need(value, "tir.BufferStore", "value"),
                           list<PrimExpr>(indices, "tir.BufferStore", "indices"));
      },
      "tir.BufferStore(buffer, value, indices)");
  def(
      "tir.Allocate",
      [](Buffer buffer, Stmt body) {
        return Allocate(need(buffer, "tir.Allocate", "buffer"), need(body, "tir.Allocate", "body"));
      },
      "tir.Allocate(buffer, body)");
  def(
      "tir.LetStmt",
      [](Var var, PrimExpr value, Stmt body) {
        return LetStmt(need(var, "tir.LetStmt", "var"), need(value, "tir.LetStmt", "value"),
                       need(body, "tir.LetStmt", "body"));
      },
      "tir.LetStmt(var, value, body)");
  def(
      "tir.IfThenElse",
      [](PrimExpr c, Stmt t, Stmt e) {
        return IfThenElse(need(c, "tir.IfThenElse", "condition"), need(t, "tir.IfThenElse", "then_case"), e);
      },
      "tir.IfThenElse(condition, then_case, else_case or none)");
  def(
      "tir.SeqStmt", [](Array seq) { return SeqStmt(list<Stmt>(seq, "tir.SeqStmt", "seq")); }, "tir.SeqStmt(seq)");
  def(
      "tir.Evaluate", [](PrimExpr value) { return Evaluate(need(value, "tir.Evaluate", "value")); },
      "tir.Evaluate(value)");
  def(
      "tir.AttrStmt",
      [](std::string key, PrimExpr value, Stmt body) {
        return AttrStmt(std::move(key), need(value, "tir.AttrStmt", "value"), need(body, "tir.AttrStmt", "body"));
      },
      "tir.AttrStmt(key, value, body)");
  def(
      "tir.PrimFunc",
      [](Array params, Stmt body, Type ret, Map attrs) {
        std::vector<Any> checked;
        for (size_t i = 0; i < params.size(); ++i) {
          const Any& p = params[i];
          bool ok = p.is_object_like() && (p.as_object_ref().as<VarNode>() || p.as_object_ref().as<BufferNode>());
          if (!ok)
            LOOM_THROW(TypeError) << "tir.PrimFunc: params[" << i << "] must be a tir.Var or a tir.Buffer, got "
                                  << p.describe();
          checked.push_back(p);
        }
        return PrimFunc(checked, need(body, "tir.PrimFunc", "body"), ret, or_empty(attrs));
      },
      "tir.PrimFunc(params: tir.Var or tir.Buffer each, body, ret or none, attrs)");
}

const bool registered = [] {
  register_types();
  register_module();
  register_op_queries();
  register_graph();
  register_tir_exprs();
  register_tir_stmts();
  return true;
}();

}  // namespace
}  // namespace loom::ir
