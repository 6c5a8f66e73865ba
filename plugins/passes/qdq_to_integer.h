// QDQToInteger: a conv2d, matmul or dense whose two operands are
// dequantize calls of integer tensors becomes the integer operator with
// int32 accumulation (out_dtype) followed by one multiply by the product
// of the scales, which the next quantize and whatever lies between fuse
// into as its epilogue: a quantized model (the QDQ form) runs integer
// kernels, no float convolution (docs/low-precision.md).
#ifndef LOOM_PLUGINS_PASSES_QDQ_TO_INTEGER_H_
#define LOOM_PLUGINS_PASSES_QDQ_TO_INTEGER_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass QDQToInteger();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_QDQ_TO_INTEGER_H_
