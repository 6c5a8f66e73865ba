// Quantization: quantize and dequantize, ONNX's QuantizeLinear and
// DequantizeLinear with the scale and the zero point broadcast against x
// (docs/low-precision.md).
#include <cmath>
#include <functional>

#include "lowering.h"

namespace loom::ops {

namespace {
using ir::PatternKind;
using tir::PrimExpr;

// The quantized formats: their dtypes and ranges.  int32 is a format of
// dequantize only (biases); quantize's float arithmetic would not be exact
// in it.
bool quantized_format(DataType t, bool with_int32) {
  return t.lanes == 1 && ((t.code == DataType::kInt && (t.bits == 8 || t.bits == 16 || (with_int32 && t.bits == 32))) ||
                          (t.code == DataType::kUInt && (t.bits == 8 || t.bits == 16)));
}

std::pair<double, double> format_range(DataType t) {
  if (t.code == DataType::kUInt) return {0.0, std::ldexp(1.0, t.bits) - 1};
  return {-std::ldexp(1.0, t.bits - 1), std::ldexp(1.0, t.bits - 1) - 1};
}

void check_format(const char* what, DataType t, bool with_int32) {
  if (!quantized_format(t, with_int32)) {
    LOOM_THROW(TypeError) << what << " must be int8, uint8, int16, uint16" << (with_int32 ? " or int32" : "")
                          << ", got " << t.to_string();
  }
}

ir::Type broadcast_result(const graph::CallNode& call, DataType dtype) {
  Array shape(broadcast_shapes(tensor_arg(call, 0).shape, tensor_arg(call, 1).shape));
  return ir::TensorType(Array(broadcast_shapes(shape, tensor_arg(call, 2).shape)), dtype);
}

// The lowering of f(x, scale, zero point) element by element, the three
// loaded where they broadcast to; value(x, s, z, result dtype).
tir::PrimFunc lower_elementwise3(
    const graph::CallNode& call,
    const std::function<PrimExpr(const PrimExpr&, const PrimExpr&, const PrimExpr&, DataType)>& value) {
  PrimBuilder b;
  tir::Buffer x = b.param(tensor_arg(call, 0), "X");
  tir::Buffer s = b.param(tensor_arg(call, 1), "Scale");
  tir::Buffer z = b.param(tensor_arg(call, 2), "ZeroPoint");
  tir::Buffer y = b.param(result_type(call), "Y");
  return b.finish(compute(y, [&](const Indices& i) {
    return value(tir::BufferLoad(x, broadcast_indices(x, y, i)), tir::BufferLoad(s, broadcast_indices(s, y, i)),
                 tir::BufferLoad(z, broadcast_indices(z, y, i)), y->dtype);
  }));
}
}  // namespace

void register_quant_ops() {
  define_operator(
      "quantize", 3, {}, PatternKind::kBroadcast,
      "saturate(round(x / scale) + zero_point) in the zero point's dtype (round half to even; scale and zero point "
      "broadcast against x)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto &x = tensor_arg(call, 0), &s = tensor_arg(call, 1), &z = tensor_arg(call, 2);
        if (!is_float(x.dtype) || s.dtype != x.dtype) {
          LOOM_THROW(TypeError) << "needs x and scale of one float dtype, got " << x.dtype.to_string() << " and "
                                << s.dtype.to_string();
        }
        check_format("the zero point", z.dtype, false);
        return broadcast_result(call, z.dtype);
      },
      [](const graph::CallNode& call) {
        return lower_elementwise3(call, [](const PrimExpr& x, const PrimExpr& s, const PrimExpr& z, DataType t) {
          DataType f = x.dtype();
          auto [lo, hi] = format_range(t);
          PrimExpr q = tir::Add(tir::Call(f, "round", {tir::Div(x, s)}), tir::Cast(f, z));
          return PrimExpr(tir::Cast(t, tir::Min(tir::Max(q, make_const(f, lo)), make_const(f, hi))));
        });
      });

  define_operator(
      "dequantize", 3, {}, PatternKind::kBroadcast,
      "(x - zero_point) * scale in the scale's dtype (the difference in int32; scale and zero point broadcast "
      "against x)",
      [](const graph::CallNode& call) -> ir::Type {
        const auto &x = tensor_arg(call, 0), &s = tensor_arg(call, 1), &z = tensor_arg(call, 2);
        check_format("x", x.dtype, true);
        if (z.dtype != x.dtype) {
          LOOM_THROW(TypeError) << "the zero point must have x's dtype " << x.dtype.to_string() << ", got "
                                << z.dtype.to_string();
        }
        if (!is_float(s.dtype)) LOOM_THROW(TypeError) << "the scale must be a float, got " << s.dtype.to_string();
        return broadcast_result(call, s.dtype);
      },
      [](const graph::CallNode& call) {
        return lower_elementwise3(call, [](const PrimExpr& x, const PrimExpr& s, const PrimExpr& z, DataType t) {
          DataType i32 = DataType::Int(32);
          return PrimExpr(tir::Mul(tir::Cast(t, tir::Sub(widen(x, i32), widen(z, i32))), s));
        });
      });
}

}  // namespace loom::ops
