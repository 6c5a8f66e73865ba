// prim_pass: the shape of every loop pass -- a module pass that rewrites
// the body of each prim function and leaves the other functions alone.
#ifndef LOOM_TRANSFORM_PRIM_PASS_H_
#define LOOM_TRANSFORM_PRIM_PASS_H_

#include <functional>

#include "loom/tir/function.h"
#include "loom/transform/pass.h"

namespace loom::transform {

// `body_of(f, module, ctx)` returns the function's new body (the same
// object when unchanged).  An Error from it is re-thrown prefixed with
// "@name: ".
using PrimBodyFn = std::function<tir::Stmt(const tir::PrimFuncNode&, const ir::IRModule&, const PassContext&)>;
Pass prim_pass(PassInfo info, PrimBodyFn body_of);

}  // namespace loom::transform

#endif  // LOOM_TRANSFORM_PRIM_PASS_H_
