// Small prim IR utilities: constants, loop nests, a prim function with a
// new body.
#ifndef LOOM_TIR_UTIL_H_
#define LOOM_TIR_UTIL_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/tir/function.h"

namespace loom::tir {

std::optional<int64_t> const_int(const PrimExpr& e);
bool is_int(DataType t);
bool is_float(DataType t);       // float or bfloat
bool is_unsigned(DataType t);    // uint or bool
DataType scalar_of(DataType t);  // one lane of t

// `loop` as a serial loop whose annotations say why a pass left it:
// `key: "reason"` (VectorizeLoop's and UnrollLoop's refusals).
Stmt serial_with_note(const ForNode& loop, const std::string& key, const std::string& reason);

// The perfect nest from `top` down: `top`, then each loop that is the
// whole body of the one before.
std::vector<const ForNode*> perfect_nest(const ForNode* top);

// Where the shapes of `buffers` (a prim function's buffer parameters)
// give the value of the scalar `var` at run time: the first dimension that
// is `var` itself, else the first that is scale * var + offset with
// constants (scale != 0; a reshape's n * 4), so var = (extent - offset) /
// scale.  nullopt when no dimension does.  The code generators, the
// interpreter and FuseTIR bind a prim function's scalars this way.
struct ShapeBinding {
  size_t buffer = 0, dim = 0;
  int64_t scale = 1, offset = 0;
};
std::optional<ShapeBinding> bind_from_shapes(const std::vector<Buffer>& buffers, const VarNode* var);
// e as scale * v + offset with integer constants, when it is one.
std::optional<std::pair<int64_t, int64_t>> linear_in(const PrimExpr& e, const VarNode* v);
// The value of the bound variable given the dimension's value.
PrimExpr solve_binding(const ShapeBinding& b, const PrimExpr& extent);
// The variables `node` uses for which `keep` holds, each once, in order
// of first use (a parallel loop's captured values: those bound outside it).
std::vector<const VarNode*> used_vars(const Any& node, const std::function<bool(const VarNode*)>& keep);
// The scalars a compiled prim function binds on entry: its scalar
// parameters, then the variables that only its buffers' shapes name
// (`Buffer[(%n: int64, 8)]`), in order.
std::vector<const VarNode*> entry_scalars(const PrimFunc& func);

// Whether a loop in `body` is bound to a thread axis (a device kernel's).
bool has_thread_binding(const Stmt& body);
// Where the buffers of `f` are: its attribute "device_type" (a DLPack
// device type; SplitHostDevice sets it on a host function that launches
// kernels), else the CPU (1).
int device_type_of(const PrimFuncNode& f);
// A prim function with a new body (parameters, result and attributes kept).
PrimFunc with_body(const PrimFuncNode& f, const Stmt& body);

// One step of a reduction: the store `B[i] = op(B[i], term)` with op one
// of +, max, min, the term not reading B (what rfactor and the default
// device schedule's cross-thread reduction take apart).
enum class ReduceOp { kAdd, kMax, kMin };
struct ReductionUpdate {
  ReduceOp op = ReduceOp::kAdd;
  PrimExpr term;
};
// The update `store` is, or nullopt (another form, or not of numbers).
std::optional<ReductionUpdate> match_reduction_update(const BufferStoreNode* store);
// op(a, b).
PrimExpr reduce_combine(ReduceOp op, const PrimExpr& a, const PrimExpr& b);
// Where partial results of op over t start: 0, the lowest value (-inf
// for floats) for max, the highest for min; nullopt for min of uint64.
std::optional<PrimExpr> reduce_identity(ReduceOp op, DataType t);

// The floating-point operations one call of `f` performs: each float add,
// subtract, multiply, divide, min, max and intrinsic (exp, sqrt, ...)
// counts once per lane (a multiply-add twice), a select's condition and
// both values count (vector code evaluates both), an if counts its longer
// branch, and a loop multiplies its body by its extent.  A launch of a
// device kernel (tir.launch, the host half SplitHostDevice leaves) counts
// `kernel_ops` of the kernel's name.  nullopt where a count depends on
// the call: a loop whose extent is not a constant (symbolic shapes), or a
// kernel `kernel_ops` does not know.  What profiles report as a kernel
// call's flops (docs/rpc.md, "Profiles and traces").
std::optional<int64_t> float_ops(const PrimFunc& f,
                                 const std::function<std::optional<int64_t>(const std::string&)>& kernel_ops = nullptr);

}  // namespace loom::tir

#endif  // LOOM_TIR_UTIL_H_
