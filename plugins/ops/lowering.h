// Helpers shared by the operator library's type rules and lowerings
// (docs/operators.md).
#ifndef LOOM_PLUGINS_OPS_LOWERING_H_
#define LOOM_PLUGINS_OPS_LOWERING_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/graph/expr.h"
#include "loom/graph/function.h"
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

// Registers an operator with its type rule and its lowering (the property
// "FLower": (call) -> tir.PrimFunc, for a typed call).
void define(const std::string& name, int arity, std::vector<SchemaField> attrs, ir::PatternKind pattern,
            const std::string& doc, std::function<ir::Type(const graph::CallNode&)> infer,
            std::function<tir::PrimFunc(const graph::CallNode&)> lower);

// The call's attributes checked against its operator's schema, defaults
// filled in (a call carries only the attributes it was written with).
Map attrs_of(const graph::CallNode& call);

// The inferred type of a typed call (a tensor type for every operator of
// the library).
const ir::TensorTypeNode& result_type(const graph::CallNode& call);

// The tensor type of argument `i` of `call`; Error naming the argument when
// it is not a tensor of known rank.
const ir::TensorTypeNode& tensor_arg(const graph::CallNode& call, size_t i);

// NumPy broadcasting of two shapes (aligned on the right; equal dimensions
// or a 1 broadcast).  Error naming both shapes and the dimension otherwise.
std::vector<Any> broadcast_shapes(const Array& a, const Array& b);

std::string shape_text(const Array& shape);

using tir::is_float;
// The constant value of a dimension, if it is one.
std::optional<int64_t> constant_dim(const Any& d);
// Whether two dimensions are the same: equal constants, or the same
// expression over the same variables (two reshapes' %n * 4).
bool same_dim(const Any& a, const Any& b);
// `axis` normalised against `rank` (negative counts from the end); Error
// naming the axis and the rank when out of range.
int64_t normalize_axis(int64_t axis, size_t rank);

// Registration of the operator families (one file each).
void register_elementwise_ops();
void register_reduction_ops();
void register_linalg_ops();
void register_shape_ops();
void register_nn_ops();
void register_conv_ops();

}  // namespace loom::ops

#endif  // LOOM_PLUGINS_OPS_LOWERING_H_
