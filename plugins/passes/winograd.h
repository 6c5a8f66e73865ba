// Winograd: stride-1 3x3 convolutions channels-last with constant weights
// become Winograd's F(2x2, 3x3): winograd_input, a batched matmul with the
// weights transformed once at compile time, winograd_output (2.25x fewer
// multiply-adds; docs/passes.md, "Winograd").  Float32 convolutions, and
// integer ones summed in int32 where the values' ranges keep every step
// exact (weights transformed by 2G, the result shifted right by 2).
#ifndef LOOM_PLUGINS_PASSES_WINOGRAD_H_
#define LOOM_PLUGINS_PASSES_WINOGRAD_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass Winograd();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_WINOGRAD_H_
