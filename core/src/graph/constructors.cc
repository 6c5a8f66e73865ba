// The graph IR's constructors in the global function registry (see
// loom/ir/constructors.h), and the whole-module checks the builders call
// ("ir.infer_type", "ir.well_formed").
#include <string>
#include <vector>

#include "loom/graph/function.h"
#include "loom/graph/type_infer.h"
#include "loom/graph/well_formed.h"
#include "loom/ir/constructors.h"

namespace loom::graph {
namespace {

using namespace loom::ir;                    // NOLINT: types and the module
using namespace loom::ir::constructor_args;  // NOLINT: def, need, list, or_empty

void register_checks() {
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

void register_graph() {
  def(
      "graph.Var", [](std::string name, Type annotation) { return Var(std::move(name), annotation); },
      "graph.Var(name, annotation or none)");
  def(
      "graph.Constant", [](runtime::NDArray data) { return Constant(need(data, "graph.Constant", "data")); },
      "graph.Constant(data: NDArray)");
  def(
      "graph.Call",
      [](Expr callee, Array args, Map attrs, Array type_args) {
        return Call(need(callee, "graph.Call", "callee"), list<Expr>(args, "graph.Call", "args"), or_empty(attrs),
                    list<Type>(type_args, "graph.Call", "type_args"));
      },
      "graph.Call(callee, args, attrs, type_args)");
  def(
      "graph.Tuple", [](Array fields) { return Tuple(list<Expr>(fields, "graph.Tuple", "fields")); },
      "graph.Tuple(fields)");
  def(
      "graph.TupleGetItem",
      [](Expr tuple, int64_t index) {
        if (index < 0) LOOM_THROW(TypeError) << "graph.TupleGetItem: index must be >= 0, got " << index;
        return TupleGetItem(need(tuple, "graph.TupleGetItem", "tuple"), index);
      },
      "graph.TupleGetItem(tuple, index)");
  def(
      "graph.Let",
      [](Var var, Expr value, Expr body) {
        return Let(need(var, "graph.Let", "var"), need(value, "graph.Let", "value"), need(body, "graph.Let", "body"));
      },
      "graph.Let(var, value, body)");
  def(
      "graph.If",
      [](Expr c, Expr t, Expr e) {
        return If(need(c, "graph.If", "cond"), need(t, "graph.If", "then_branch"), need(e, "graph.If", "else_branch"));
      },
      "graph.If(cond, then_branch, else_branch)");
  def(
      "graph.Function",
      [](Array params, Expr body, Type ret_type, Map attrs) {
        return Function(list<Var>(params, "graph.Function", "params"), need(body, "graph.Function", "body"), ret_type,
                        or_empty(attrs));
      },
      "graph.Function(params, body, ret_type or none, attrs)");
}

const bool registered = [] {
  register_checks();
  register_graph();
  return true;
}();

}  // namespace
}  // namespace loom::graph
