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
#include "loom/tir/function.h"

namespace loom::ops {

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

// Builds the prim function that an operator call lowers to: buffers for
// the inputs and the output of the call's types, whose symbolic dimensions
// become scalar parameters bound from the buffers' shapes (the call_dps
// convention).
class PrimBuilder {
 public:
  // A buffer for a tensor type; symbolic dimensions map to prim variables
  // (the same graph variable gives the same prim variable).
  tir::Buffer buffer(const ir::TensorTypeNode& type, const std::string& name);
  // The prim form of a graph-level dimension.
  tir::PrimExpr dim(const Any& graph_dim);

  // Nested serial loops over `shape`; `body(indices)` gives the statement
  // at each index.
  tir::Stmt loops(const std::vector<tir::PrimExpr>& shape,
                  const std::function<tir::Stmt(const std::vector<tir::PrimExpr>&)>& body,
                  const std::string& prefix = "i");
  // out[indices] = value(indices) over out's whole shape.
  tir::Stmt compute(const tir::Buffer& out, const std::function<tir::PrimExpr(const std::vector<tir::PrimExpr>&)>& value);

  // A reduction into `out`: for every output index, out[i] = init, then
  // out[i] = combine(out[i], value(i, r)) over every r of `extents` (loops
  // named r0, r1, ...), then out[i] = finalize(out[i]) if given.  It
  // accumulates in the output's dtype.
  tir::Stmt reduce(const tir::Buffer& out, const std::vector<tir::PrimExpr>& extents, const tir::PrimExpr& init,
                   const std::function<tir::PrimExpr(const tir::PrimExpr&, const tir::PrimExpr&)>& combine,
                   const std::function<tir::PrimExpr(const std::vector<tir::PrimExpr>&,
                                                     const std::vector<tir::PrimExpr>&)>& value,
                   const std::function<tir::PrimExpr(const tir::PrimExpr&)>& finalize = nullptr);

  // The indices into `in` for output indices `out_indices` under NumPy
  // broadcasting (dimensions of extent 1 read index 0).
  std::vector<tir::PrimExpr> broadcast_indices(const tir::Buffer& in, const std::vector<tir::PrimExpr>& out_indices);

  // The function: buffers in the order they were made, then the scalars.
  tir::PrimFunc finish(tir::Stmt body);

 private:
  std::vector<Any> buffers_;
  std::vector<Any> scalars_;
  std::map<const Object*, tir::Var> vars_;
};

std::vector<tir::PrimExpr> buffer_shape(const tir::Buffer& b);

bool is_float(DataType t);
// A constant of dtype `t` (FloatImm for floats, IntImm otherwise).
tir::PrimExpr scalar(DataType t, double v);
// The constant value of a dimension, if it is one.
std::optional<int64_t> constant_dim(const Any& d);
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
