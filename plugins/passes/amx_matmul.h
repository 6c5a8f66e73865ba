// AMXMatmul: on a CPU with AMX (the function's target reports amx-tile,
// amx-bf16 and amx-int8), a matmul or dense of bfloat16 summed in float32,
// or of 8-bit integers summed in int32, becomes a call of the runtime's
// AMX kernel: runtime.amx.matmul_packed, a constant right operand packed
// into the tiles' layout at compile time, or runtime.amx.matmul, which
// packs it per call (docs/low-precision.md, "AMX").
#ifndef LOOM_PLUGINS_PASSES_AMX_MATMUL_H_
#define LOOM_PLUGINS_PASSES_AMX_MATMUL_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass AMXMatmul();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_AMX_MATMUL_H_
