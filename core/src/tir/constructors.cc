// The prim IR's constructors in the global function registry (see
// loom/ir/constructors.h), and ir.TensorType's: its shape is a list of
// prim expressions.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "loom/ir/constructors.h"
#include "loom/tir/function.h"

namespace loom::tir {
namespace {

using namespace loom::ir::constructor_args;  // NOLINT: def, need, list, or_empty
using ir::Type;

void register_tensor_type() {
  using ir::TensorType;
  def(
      "ir.TensorType",
      [](Array shape, DataType dtype) {
        if (shape.defined()) list<PrimExpr>(shape, "ir.TensorType", "shape");
        return TensorType(shape, dtype);
      },
      "ir.TensorType(shape: [PrimExpr] or none for unknown rank, dtype)");
}

void register_tir_exprs() {
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
  register_tensor_type();
  register_tir_exprs();
  register_tir_stmts();
  return true;
}();

}  // namespace
}  // namespace loom::tir
