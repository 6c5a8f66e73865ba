// FuseTIR: each primitive graph function (from FuseOps), once its operators
// are lowered, becomes one prim function running the lowered kernels in
// sequence with their intermediate tensors as local allocations; its
// callers call it through call_dps (docs/passes.md).
#ifndef LOOM_PLUGINS_PASSES_FUSE_TIR_H_
#define LOOM_PLUGINS_PASSES_FUSE_TIR_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass FuseTIR();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_FUSE_TIR_H_
