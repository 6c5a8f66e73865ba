// Building prim IR (installed with the SDK): the prim function an
// operator lowers to or a pass assembles, loop nests over a shape,
// element-wise computations and reductions into a buffer, constants, and
// sequences.  The operator library's lowerings, FuseTIR, the schedule and
// the loop passes build with these instead of writing their own loops.
//
//   PrimBuilder b;
//   Buffer x = b.param(input_type, "X"), y = b.param(output_type, "Y");
//   Stmt body = compute(y, [&](const std::vector<PrimExpr>& i) {
//     return Max(BufferLoad(x, i), make_const(x->dtype, 0));
//   });
//   PrimFunc relu = b.finish(body);   // (X, Y, then a scalar per symbolic dimension)
#ifndef LOOM_TIR_BUILDER_H_
#define LOOM_TIR_BUILDER_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "loom/ir/type.h"
#include "loom/tir/function.h"

namespace loom::tir {

using Indices = std::vector<PrimExpr>;

// A prim function over graph-level tensor types, in the call_dps
// convention: its buffer parameters in the order they were made, then one
// int64 scalar per symbolic dimension (the same graph variable gives the
// same scalar), bound at run time from the buffers' shapes
// (loom/tir/util.h, bind_from_shapes).
class PrimBuilder {
 public:
  // A parameter buffer for a tensor type of known rank whose dimensions
  // are constants, variables or integer arithmetic over variables (n * 4,
  // the same arithmetic over the variables' scalars; a dimension over
  // several variables, m + n, or not linear in its one, min(n, 1), a
  // scalar of its own, which later dimensions written the same way
  // share); Error naming the dimension otherwise.
  Buffer param(const ir::TensorTypeNode& type, const std::string& name);
  // A buffer of such a type that is not a parameter (an intermediate to
  // allocate), its dimensions mapped the same way.  Buffer names are made
  // unique within the function (`c`, `c_1`): schedules name buffers, and
  // two graph constants both named `c` must stay two buffers to them.
  Buffer buffer(const ir::TensorTypeNode& type, const std::string& name, const std::string& scope = "global");
  // The prim form of a graph-level dimension.
  PrimExpr dim(const Any& graph_dim);
  // The scalar parameters made so far, in order.
  const std::vector<Any>& scalars() const { return scalars_; }

  // The function: the parameter buffers, then the scalars.
  PrimFunc finish(Stmt body, Map attrs = Map::empty());

 private:
  // A parameter's dimension with a scalar of its own, if `graph_dim` is one.
  const Var* composite(const Any& graph_dim) const;

  std::vector<Any> params_;
  std::vector<Any> scalars_;
  std::map<const Object*, Var> vars_;
  std::vector<std::pair<PrimExpr, Var>> composites_;  // a parameter's dimension with a scalar of its own
  std::set<std::string> names_;                       // buffer names given so far
};

// The shape of a buffer as expressions.
Indices buffer_shape(const Buffer& b);

// Serial loops from 0 over `extents`, outermost first, with fresh int64
// variables named PREFIX0, PREFIX1, ...; `body(indices)` gives the
// statement at each index.
Stmt loop_nest(const Indices& extents, const std::function<Stmt(const Indices&)>& body,
               const std::string& prefix = "i");

// Serial loops from 0 over `extents` with the given variables, outermost
// first, around `body`.
Stmt loop_nest(const std::vector<Var>& vars, const Indices& extents, Stmt body);

// out[i] = value(i) over out's whole shape.
Stmt compute(const Buffer& out, const std::function<PrimExpr(const Indices&)>& value);

// A reduction into `out`: for every output index i, out[i] = init, then
// out[i] = combine(out[i], value(i, r)) over every r of `extents` (loops
// named r0, r1, ...), then out[i] = finalize(out[i]) if given.  It
// accumulates in the output's dtype.
Stmt reduction(const Buffer& out, const Indices& extents, const PrimExpr& init,
               const std::function<PrimExpr(const PrimExpr&, const PrimExpr&)>& combine,
               const std::function<PrimExpr(const Indices&, const Indices&)>& value,
               const std::function<PrimExpr(const PrimExpr&)>& finalize = nullptr);

// The indices into `in` for the indices `out_indices` of `out` under NumPy
// broadcasting (aligned on the right): a dimension of extent 1 read at
// index 0 where `out`'s is not 1 too (where both are 1, at the output's
// index, so a reader and the producer of `in` index it alike and the
// schedule can fuse them).
Indices broadcast_indices(const Buffer& in, const Buffer& out, const Indices& out_indices);

// A constant of `t`: a FloatImm for float types, an IntImm otherwise,
// broadcast when `t` has lanes.
PrimExpr make_const(DataType t, double value);

// `loop` with another kind and body (variable, range, thread and
// annotations kept).
For with_kind_and_body(const ForNode& loop, ForKind kind, Stmt body);

// The statement that does nothing (`evaluate(0)`), and the test for it
// (which an empty sequence, `{ }` in the text, passes too).
Stmt no_op();
bool is_no_op(const Stmt& s);

// A sequence: nested sequences flattened (at any depth), no-ops dropped,
// one statement as itself, none as no_op().
Stmt seq(std::vector<Stmt> stmts);

// The statements of `s` in order with nested sequences flattened (at any
// depth, iteratively) and no-ops dropped; `s` itself when it is not a
// sequence.
std::vector<Stmt> flatten_seq(const Stmt& s);

}  // namespace loom::tir

#endif  // LOOM_TIR_BUILDER_H_
