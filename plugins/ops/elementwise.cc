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

// ---- unary ----
void unary(const std::string& name, bool float_only, const std::string& doc,
           std::function<PrimExpr(const PrimExpr&)> f) {
  define_operator(
      name, 1, {}, PatternKind::kElementwise, doc,
      [name, float_only](const graph::CallNode& call) -> ir::Type {
        const auto& x = tensor_arg(call, 0);
        if (float_only && !is_float(x.dtype)) {
          LOOM_THROW(TypeError) << "needs a float tensor, got " << x.dtype.to_string();
        }
        if (x.dtype == DataType::Bool()) LOOM_THROW(TypeError) << "needs a numeric tensor, got bool";
        return ir::TensorType(x.shape, x.dtype);
      },
      [f](const graph::CallNode& call) {
        PrimBuilder b;
        tir::Buffer x = b.param(tensor_arg(call, 0), "X");
        tir::Buffer y = b.param(result_type(call), "Y");
        return b.finish(compute(y, [&](const Indices& i) { return f(tir::BufferLoad(x, i)); }));
      });
}

// ---- binary with broadcasting ----
enum class Operands { kAny, kFloat };

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
        if (operands == Operands::kFloat && !is_float(a.dtype)) {
          LOOM_THROW(TypeError) << "needs float tensors, got " << a.dtype.to_string();
        }
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
  unary("relu", false, "max(x, 0)", [zero](const PrimExpr& x) { return tir::Max(x, zero(x)); });
  unary("neg", false, "-x", [zero](const PrimExpr& x) { return tir::Sub(zero(x), x); });
  unary("abs", false, "|x|", [](const PrimExpr& x) { return intrinsic("abs", x); });
  for (const char* f : {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf"}) {
    unary(f, true, std::string(f) + "(x), elementwise", [f](const PrimExpr& x) { return intrinsic(f, x); });
  }
  unary("gelu", true, "x * (1 + erf(x / sqrt(2))) / 2 (the exact form)", [](const PrimExpr& x) {
    DataType t = x.dtype();
    PrimExpr erf = intrinsic("erf", tir::Mul(x, make_const(t, M_SQRT1_2)));
    return tir::Mul(tir::Mul(make_const(t, 0.5), x), tir::Add(make_const(t, 1), erf));
  });
  unary("silu", true, "x * sigmoid(x)", [](const PrimExpr& x) { return tir::Mul(x, intrinsic("sigmoid", x)); });

  binary("add", Operands::kAny, false, "a + b, broadcasting", [](auto a, auto b) { return tir::Add(a, b); });
  binary("subtract", Operands::kAny, false, "a - b, broadcasting", [](auto a, auto b) { return tir::Sub(a, b); });
  binary("multiply", Operands::kAny, false, "a * b, broadcasting", [](auto a, auto b) { return tir::Mul(a, b); });
  binary("divide", Operands::kFloat, false, "a / b (floats), broadcasting", [](auto a, auto b) { return tir::Div(a, b); });
  binary("power", Operands::kFloat, false, "a ** b (floats), broadcasting",
         [](auto a, auto b) { return tir::Call(a.dtype(), "pow", {a, b}); });
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
        if (c.dtype != DataType::Bool()) LOOM_THROW(TypeError) << "the condition must be bool, got " << c.dtype.to_string();
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
          return tir::Select(tir::BufferLoad(c, broadcast_indices(c, out, i)), tir::BufferLoad(x, broadcast_indices(x, out, i)),
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
