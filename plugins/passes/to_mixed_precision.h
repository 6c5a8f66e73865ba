// ToMixedPrecision: a float32 model's conv2d, matmul and dense take their
// operands in bfloat16 (or float16) and sum in float32 (out_dtype); the
// casts of constant weights fold at compile time, everything else
// (softmax, normalisations, reductions, elementwise) stays float32
// (docs/low-precision.md).
#ifndef LOOM_PLUGINS_PASSES_TO_MIXED_PRECISION_H_
#define LOOM_PLUGINS_PASSES_TO_MIXED_PRECISION_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass ToMixedPrecision();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_TO_MIXED_PRECISION_H_
