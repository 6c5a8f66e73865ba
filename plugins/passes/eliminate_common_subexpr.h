// EliminateCommonSubexpr: a pure let-bound value computed again later in
// the same scope (same callee, attributes, types and arguments) reuses the
// first binding (docs/passes.md).
#ifndef LOOM_PLUGINS_PASSES_ELIMINATE_COMMON_SUBEXPR_H_
#define LOOM_PLUGINS_PASSES_ELIMINATE_COMMON_SUBEXPR_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass EliminateCommonSubexpr();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_ELIMINATE_COMMON_SUBEXPR_H_
