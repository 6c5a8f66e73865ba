// LegalizeOps: every call of an operator that has a lowering ("FLower")
// becomes call_dps of the prim function the lowering generates
// (docs/passes.md).
#ifndef LOOM_PLUGINS_PASSES_LEGALIZE_OPS_H_
#define LOOM_PLUGINS_PASSES_LEGALIZE_OPS_H_

#include "loom/transform/pass.h"

namespace loom::passes {

transform::Pass LegalizeOps();

}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_LEGALIZE_OPS_H_
