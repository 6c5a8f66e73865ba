// Vectorizable float32 exp and log in LLVM IR (docs/target-llvm.md,
// "Intrinsics"): range reduction and a minimax polynomial (the Cephes
// coefficients), built from plain arithmetic so that a vector argument
// gives vector code instead of one libm call per lane.  Both follow libm
// at the edges: exp overflows to +inf and underflows through the
// subnormals to 0; log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN in
// gives NaN out.  Accuracy: within 2 ulp of libm on the normal range.
#ifndef LOOM_PLUGINS_LLVM_MATH_H_
#define LOOM_PLUGINS_LLVM_MATH_H_

#include <llvm/IR/IRBuilder.h>

namespace loom::llvm_backend {

llvm::Value* emit_exp_f32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* emit_log_f32(llvm::IRBuilder<>& b, llvm::Value* x);
// sigmoid 1 / (1 + exp(-x)) and tanh 1 - 2 / (exp(2x) + 1) with exp over
// a bounded range (no overflow or subnormal handling to do: beyond it the
// result is 0, 1 or +-1 to float32's resolution); NaN in gives NaN out.
llvm::Value* emit_sigmoid_f32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* emit_tanh_f32(llvm::IRBuilder<>& b, llvm::Value* x);
// erf by the core's expansion (Abramowitz-Stegun 7.1.26, absolute error
// under 1.5e-7) with exp(-x^2) over the bounded range (from |x| = 9.3 on
// it is under float32's resolution against 1) and x's sign copied onto
// the odd function's value; NaN in gives NaN out, +-inf gives +-1.
llvm::Value* emit_erf_f32(llvm::IRBuilder<>& b, llvm::Value* x);

}  // namespace loom::llvm_backend

#endif  // LOOM_PLUGINS_LLVM_MATH_H_
