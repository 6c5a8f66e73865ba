// FoldBatchNorm: inference batch_norm with constant statistics becomes a
// per-channel scale and shift computed at compile time, and after a
// convolution with constant weights (and an optional constant bias) used
// nowhere else, the scale goes into the weights and the shift into the
// bias: the kernel computes no square root or division per element, and a
// model imported with its batch norms (torch.fx) runs as one exported with
// them folded (docs/passes.md).
#ifndef LOOM_PLUGINS_PASSES_FOLD_BATCH_NORM_H_
#define LOOM_PLUGINS_PASSES_FOLD_BATCH_NORM_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass FoldBatchNorm();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_FOLD_BATCH_NORM_H_
