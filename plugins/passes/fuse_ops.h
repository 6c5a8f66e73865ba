// FuseOps: groups operator calls by their pattern kinds into primitive
// graph functions (attribute primitive = 1), which FuseTIR later turns
// into one prim function each (docs/passes.md).
#ifndef LOOM_PLUGINS_PASSES_FUSE_OPS_H_
#define LOOM_PLUGINS_PASSES_FUSE_OPS_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass FuseOps();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_FUSE_OPS_H_
