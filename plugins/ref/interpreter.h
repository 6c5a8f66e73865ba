// The reference interpreter: runs a prim function on NDArrays by walking
// its statements, slowly and simply, as a numerical oracle for operators,
// passes and codegens (docs/target-ref.md).
//
// Semantics it pins down: loops of every kind run serially in order;
// arithmetic follows the expression's dtype (float32 results are rounded
// to float32 after every operation; integers wrap at their width; floor
// division and modulo round toward negative infinity; Div truncates on
// integers); vector expressions run lane by lane.  Every buffer access is
// bounds-checked against the memory behind it, so an out-of-range index a
// pass introduced is an error that names the function, the buffer and the
// index instead of a silent wrong answer.
#ifndef LOOM_PLUGINS_REF_INTERPRETER_H_
#define LOOM_PLUGINS_REF_INTERPRETER_H_

#include <string>
#include <vector>

#include "loom/object/any.h"
#include "loom/tir/function.h"

namespace loom::ref {

// Runs `func` (named `name` in messages) on `args`: either one NDArray per
// buffer parameter (scalar parameters are bound from the buffers' shapes,
// the call_dps convention), or one value per parameter (NDArrays for
// buffers, ints or floats for scalars).  Returns the function's result, if
// it has one.  Throws Error naming the function for a wrong argument or a
// runtime fault (out-of-bounds access, division by zero, an unknown
// intrinsic).
Any run_prim_func(const tir::PrimFunc& func, const std::string& name, const Any* args, int32_t count);

// The intrinsics run_prim_func knows (for docs and tests).
std::vector<std::string> known_intrinsics();

}  // namespace loom::ref

#endif  // LOOM_PLUGINS_REF_INTERPRETER_H_
