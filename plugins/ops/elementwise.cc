// Elementwise operators: unary math, binary arithmetic and comparisons with
// NumPy broadcasting, where, clip and cast (docs/operators.md).
#include <cmath>

#include "loom/ir/op.h"
#include "loom/ir/text.h"
#include "lowering.h"

namespace loom::ops {

namespace {
using ir::PatternKind;
using tir::PrimExpr;

PrimExpr intrinsic(const std::string& name, const PrimExpr& x) { return tir::Call(x.dtype(), name, {x}); }

// The operand dtypes an operator takes.
enum class Operands { kAny, kNumeric, kFloat, kInteger, kBool, kIntegerOrBool };

// "needs a float tensor" (unary) or "needs float tensors" (binary).
void check_operand(Operands operands, DataType t, bool plural) {
  bool integer = t.code == DataType::kInt || t.code == DataType::kUInt;
  bool ok = operands == Operands::kAny || (operands == Operands::kNumeric && t != DataType::Bool()) ||
            (operands == Operands::kFloat && is_float(t)) || (operands == Operands::kInteger && integer) ||
            (operands == Operands::kBool && t == DataType::Bool()) ||
            (operands == Operands::kIntegerOrBool && (integer || t == DataType::Bool()));
  if (ok) return;
  const char* wanted = operands == Operands::kNumeric   ? "numeric"
                       : operands == Operands::kFloat   ? "float"
                       : operands == Operands::kInteger ? "integer"
                       : operands == Operands::kBool    ? "bool"
                                                        : "integer or bool";
  const char* article = wanted[0] == 'i' ? "an " : "a ";
  LOOM_THROW(TypeError) << "needs " << (plural ? "" : article) << wanted << (plural ? " tensors" : " tensor")
                        << ", got " << t.to_string();
}

// ---- unary ----
void unary(const std::string& name, Operands operands, const std::string& doc,
           std::function<PrimExpr(const PrimExpr&)> f, bool to_bool = false) {
  define_operator(
      name, 1, {}, PatternKind::kElementwise, doc,
      [operands, to_bool](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        check_operand(operands, x.dtype, false);
        return ir::TensorType(x.shape, to_bool ? DataType::Bool() : x.dtype);
      },
      [f](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        return b.finish(compute(y, [&](const Indices& i) { return f(tir::BufferLoad(x, i)); }));
      });
}

// ---- binary with broadcasting ----
void binary(const std::string& name, Operands operands, bool to_bool, const std::string& doc,
            std::function<PrimExpr(const PrimExpr&, const PrimExpr&)> f) {
  define_operator(
      name, 2, {}, PatternKind::kBroadcast, doc,
      [operands, to_bool](const graph::CallNode& call) -> ir::Type {
        const auto &a = tensor_arg(call, 0), &b = tensor_arg(call, 1);
        if (a.dtype != b.dtype) {
          LOOM_THROW(TypeError) << "operands have dtypes " << a.dtype.to_string() << " and " << b.dtype.to_string()
                                << "; cast one of them";
        }
        check_operand(operands, a.dtype, true);
        return ir::TensorType(Array(broadcast_shapes(a.shape, b.shape)), to_bool ? DataType::Bool() : a.dtype);
      },
      [f](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "A");
        tir::Buffer y = b.param(tensor_arg(call, 1), "B");
        tir::Buffer out = b.param(result_type(call), "C");
        return b.finish(compute(out, [&](const Indices& i) {
          return f(tir::BufferLoad(x, broadcast_indices(x, out, i)), tir::BufferLoad(y, broadcast_indices(y, out, i)));
        }));
      });
}

double attr_float(const graph::CallNode& call, const std::string& key) { return attrs_of(call).at(key).as_float(); }
}  // namespace

void register_elementwise_ops() {
  auto zero = [](const PrimExpr& x) { return make_const(x.dtype(), 0); };
  unary("relu", Operands::kNumeric, "max(x, 0)", [zero](const PrimExpr& x) { return tir::Max(x, zero(x)); });
  unary("neg", Operands::kNumeric, "-x", [zero](const PrimExpr& x) { return tir::Sub(zero(x), x); });
  unary("abs", Operands::kNumeric, "|x|", [](const PrimExpr& x) { return intrinsic("abs", x); });
  for (const char* f :
       {"exp",  "log",  "sqrt", "rsqrt", "tanh",  "sigmoid", "erf",   "sin",   "cos",  "tan",   "asin",
        "acos", "atan", "sinh", "cosh",  "asinh", "acosh",   "atanh", "floor", "ceil", "round", "trunc"}) {
    std::string doc = std::string(f) + "(x), elementwise";
    if (std::string(f) == "round") doc = "round(x) to the nearest integer, ties to even, elementwise";
    unary(f, Operands::kFloat, doc, [f](const PrimExpr& x) { return intrinsic(f, x); });
  }
  unary("sign", Operands::kNumeric, "-1, 0 or 1 by the sign of x (NaN stays NaN)", [zero](const PrimExpr& x) {
    DataType t = x.dtype();
    return tir::Select(tir::GT(x, zero(x)), make_const(t, 1), tir::Select(tir::LT(x, zero(x)), make_const(t, -1), x));
  });
  unary(
      "isnan", Operands::kFloat, "x is NaN -> bool",
      [](const PrimExpr& x) { return tir::Call(DataType::Bool(), "isnan", {x}); }, true);
  unary(
      "isinf", Operands::kFloat, "x is +inf or -inf -> bool",
      [](const PrimExpr& x) { return tir::Call(DataType::Bool(), "isinf", {x}); }, true);
  unary("logical_not", Operands::kBool, "not x (bool)", [](const PrimExpr& x) { return tir::Not(x); });
  unary("bitwise_not", Operands::kInteger, "~x (integers)",
        [](const PrimExpr& x) { return intrinsic("bitwise_not", x); });
  unary("gelu", Operands::kFloat, "x * (1 + erf(x / sqrt(2))) / 2 (the exact form)", [](const PrimExpr& x) {
    DataType t = x.dtype();
    PrimExpr erf = intrinsic("erf", tir::Mul(x, make_const(t, M_SQRT1_2)));
    return tir::Mul(tir::Mul(make_const(t, 0.5), x), tir::Add(make_const(t, 1), erf));
  });
  unary("silu", Operands::kFloat, "x * sigmoid(x)",
        [](const PrimExpr& x) { return tir::Mul(x, intrinsic("sigmoid", x)); });

  binary("add", Operands::kAny, false, "a + b, broadcasting", [](auto a, auto b) { return tir::Add(a, b); });
  binary("subtract", Operands::kAny, false, "a - b, broadcasting", [](auto a, auto b) { return tir::Sub(a, b); });
  binary("multiply", Operands::kAny, false, "a * b, broadcasting", [](auto a, auto b) { return tir::Mul(a, b); });
  binary("divide", Operands::kNumeric, false,
         "a / b, broadcasting; integers truncate toward zero (as C and ONNX), and an integer divided by 0 gives 0",
         [](auto a, auto b) { return tir::Div(a, b); });
  binary("floor_divide", Operands::kNumeric, false,
         "floor(a / b), broadcasting (as NumPy's //); an integer divided by 0 gives 0",
         [](auto a, auto b) { return tir::FloorDiv(a, b); });
  binary("floor_mod", Operands::kNumeric, false,
         "a - floor(a / b) * b, broadcasting: the remainder has the sign of b (as NumPy's %, ONNX Mod with fmod=0); "
         "an integer modulo 0 gives 0",
         [](auto a, auto b) { return tir::FloorMod(a, b); });
  binary("trunc_mod", Operands::kNumeric, false,
         "a - trunc(a / b) * b, broadcasting: the remainder has the sign of a (as C's fmod and %, ONNX Mod with "
         "fmod=1); an integer modulo 0 gives a",
         [](PrimExpr a, PrimExpr b) -> PrimExpr {
           if (is_float(a.dtype())) return tir::Call(a.dtype(), "fmod", {a, b});
           return tir::Sub(a, tir::Mul(tir::Div(a, b), b));
         });
  binary("logical_and", Operands::kBool, false, "a and b (bool), broadcasting",
         [](auto a, auto b) { return tir::And(a, b); });
  binary("logical_or", Operands::kBool, false, "a or b (bool), broadcasting",
         [](auto a, auto b) { return tir::Or(a, b); });
  binary("logical_xor", Operands::kBool, false, "a xor b (bool), broadcasting",
         [](auto a, auto b) { return tir::NE(a, b); });
  for (const char* f : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    binary(f, Operands::kInteger, false, std::string(f) + " of integers, broadcasting", [f](PrimExpr a, PrimExpr b) {
      return tir::Call(a.dtype(), f, {a, b});
    });
  }
  binary("left_shift", Operands::kInteger, false,
         "a << b (integers), broadcasting; a shift by the width or more gives 0", [](PrimExpr a, PrimExpr b) {
           return tir::Call(a.dtype(), "shift_left", {a, b});
         });
  binary("right_shift", Operands::kInteger, false,
         "a >> b (integers: logical for unsigned, arithmetic for signed), broadcasting", [](PrimExpr a, PrimExpr b) {
           return tir::Call(a.dtype(), "shift_right", {a, b});
         });
  binary("power", Operands::kFloat, false, "a ** b (floats), broadcasting", [](auto a, auto b) {
    return tir::Call(a.dtype(), "pow", {a, b});
  });
  binary("maximum", Operands::kAny, false, "max(a, b), broadcasting; NaN propagates",
         [](auto a, auto b) { return tir::Max(a, b); });
  binary("minimum", Operands::kAny, false, "min(a, b), broadcasting; NaN propagates",
         [](auto a, auto b) { return tir::Min(a, b); });
  binary("equal", Operands::kAny, true, "a == b -> bool", [](auto a, auto b) { return tir::EQ(a, b); });
  binary("not_equal", Operands::kAny, true, "a != b -> bool", [](auto a, auto b) { return tir::NE(a, b); });
  binary("less", Operands::kAny, true, "a < b -> bool", [](auto a, auto b) { return tir::LT(a, b); });
  binary("less_equal", Operands::kAny, true, "a <= b -> bool", [](auto a, auto b) { return tir::LE(a, b); });
  binary("greater", Operands::kAny, true, "a > b -> bool", [](auto a, auto b) { return tir::GT(a, b); });
  binary("greater_equal", Operands::kAny, true, "a >= b -> bool", [](auto a, auto b) { return tir::GE(a, b); });

  define_operator(
      "where", 3, {}, PatternKind::kBroadcast, "cond ? x : y, broadcasting all three",
      [](const graph::CallNode& call) -> ir::Type {
        const auto &c = tensor_arg(call, 0), &x = tensor_arg(call, 1), &y = tensor_arg(call, 2);
        if (c.dtype != DataType::Bool())
          LOOM_THROW(TypeError) << "the condition must be bool, got " << c.dtype.to_string();
        if (x.dtype != y.dtype) {
          LOOM_THROW(TypeError) << "the values have dtypes " << x.dtype.to_string() << " and " << y.dtype.to_string();
        }
        Array xy(broadcast_shapes(x.shape, y.shape));
        return ir::TensorType(Array(broadcast_shapes(c.shape, xy)), x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer c = b.param(tensor_arg(call, 0), "Cond");
        tir::Buffer x = b.param(tensor_arg(call, 1), "X");
        tir::Buffer y = b.param(tensor_arg(call, 2), "Y");
        tir::Buffer out = b.param(result_type(call), "Out");
        return b.finish(compute(out, [&](const Indices& i) {
          return tir::Select(tir::BufferLoad(c, broadcast_indices(c, out, i)),
                             tir::BufferLoad(x, broadcast_indices(x, out, i)),
                             tir::BufferLoad(y, broadcast_indices(y, out, i)));
        }));
      });

  define_operator(
      "clip", 1, {{"a_min", "float", Any(), "lower bound"}, {"a_max", "float", Any(), "upper bound"}},
      PatternKind::kElementwise, "min(max(x, a_min), a_max)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        if (attr_float(call, "a_min") > attr_float(call, "a_max")) {
          LOOM_THROW(TypeError) << "a_min " << attr_float(call, "a_min") << " is greater than a_max "
                                << attr_float(call, "a_max");
        }
        if (x.dtype == DataType::Bool()) LOOM_THROW(TypeError) << "needs a numeric tensor, got bool";
        return ir::TensorType(x.shape, x.dtype);
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        DataType t = x->dtype;
        double lo = attr_float(call, "a_min"), hi = attr_float(call, "a_max");
        return b.finish(compute(y, [&](const Indices& i) {
          return tir::Min(tir::Max(tir::BufferLoad(x, i), make_const(t, lo)), make_const(t, hi));
        }));
      });

  define_operator(
      "cast", 1, {{"dtype", "dtype", Any(), "the result's data type"}}, PatternKind::kElementwise,
      "x converted to dtype (floats to integers truncate)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        return ir::TensorType(x.shape, attrs_of(call).at("dtype").as_dtype());
      },
      [](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        DataType to = y->dtype;
        return b.finish(compute(y, [&](const Indices& i) { return tir::Cast(to, tir::BufferLoad(x, i)); }));
      });
}

}  // namespace loom::ops
