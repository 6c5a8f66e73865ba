// The operator library's families (docs/operators.md) and the names its
// type rules and lowerings use.
#ifndef LOOM_PLUGINS_OPS_LOWERING_H_
#define LOOM_PLUGINS_OPS_LOWERING_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/graph/expr.h"
#include "loom/graph/function.h"
#include "loom/graph/operator.h"
#include "loom/ir/op.h"
#include "loom/tir/builder.h"
#include "loom/tir/function.h"
#include "loom/tir/util.h"

namespace loom::ops {

// The core's prim IR builder (loom/tir/builder.h) builds every lowering.
using tir::broadcast_indices;
using tir::buffer_shape;
using tir::compute;
using tir::Indices;
using tir::loop_nest;
using tir::make_const;
using tir::PrimBuilder;
using tir::reduction;

// The operator-definition helpers every lowering and type rule uses are
// the SDK's (loom/graph/operator.h), as a vendor's operators use them.
using graph::attrs_of;
using graph::broadcast_shapes;
using graph::constant_dim;
using graph::define_operator;
using graph::normalize_axis;
using graph::padding_of;
using graph::result_type;
using graph::same_dim;
using graph::shape_text;
using graph::tensor_arg;
using tir::is_float;

// Loops along one axis, shared by the lowerings that walk a row (softmax,
// layer_norm, argmax, cumsum, topk).
//   scratch: a one-element local buffer for an accumulator;
//   over: a serial loop of `extent` named `name` around body(variable);
//   per_row: loops over every index of `shape` but `axis`; body(at, outer)
//     gets the outer indices and `at(a)`, which puts a position along the
//     axis back among them.
inline tir::Buffer scratch(const std::string& name, DataType t) {
  return tir::Buffer(name, t, {tir::PrimExpr(int64_t{1})}, "local");
}

inline tir::Stmt over(const tir::PrimExpr& extent, const std::function<tir::Stmt(const tir::PrimExpr&)>& body,
                      const std::string& name) {
  tir::Var a(name, DataType::Int(64));
  return tir::For(a, tir::PrimExpr(int64_t{0}), extent, tir::ForKind::kSerial, body(a));
}

using RowIndex = std::function<Indices(const tir::PrimExpr&)>;
inline tir::Stmt per_row(const Indices& shape, int64_t axis,
                         const std::function<tir::Stmt(const RowIndex& at, const Indices& outer)>& body) {
  Indices outer_shape = shape;
  outer_shape.erase(outer_shape.begin() + axis);
  return loop_nest(outer_shape, [&](const Indices& outer) {
    RowIndex at = [outer, axis](const tir::PrimExpr& a) {
      Indices i = outer;
      i.insert(i.begin() + axis, a);
      return i;
    };
    return body(at, outer);
  });
}

// The products (conv2d, matmul, dense) take `out_dtype`: empty, the
// operands' one dtype; an integer dtype, any two integer operands; a
// float dtype, float operands no wider (bfloat16 products summed in
// float32).  Each element is widened to it before the multiply and the
// sum accumulated in it (docs/low-precision.md).  product_dtype is their result dtype (a
// TypeError for operands it does not take); widen casts a loaded element
// to it.
extern const SchemaField kOutDtypeAttr;
DataType product_dtype(const graph::CallNode& call, DataType a, DataType b);
inline tir::PrimExpr widen(const tir::PrimExpr& v, DataType t) {
  return v.dtype() == t ? v : tir::PrimExpr(tir::Cast(t, v));
}

// Registration of the operator families (one file each).
void register_elementwise_ops();
void register_reduction_ops();
void register_linalg_ops();
void register_shape_ops();
void register_nn_ops();
void register_conv_ops();
void register_index_ops();
void register_resize_ops();
void register_quant_ops();
void register_op_examples();

}  // namespace loom::ops

#endif  // LOOM_PLUGINS_OPS_LOWERING_H_
