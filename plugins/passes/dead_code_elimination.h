// DeadCodeElimination: drops pure let bindings nobody uses and prim or
// extern functions no graph function calls (docs/passes.md).
#ifndef LOOM_PLUGINS_PASSES_DEAD_CODE_ELIMINATION_H_
#define LOOM_PLUGINS_PASSES_DEAD_CODE_ELIMINATION_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass DeadCodeElimination();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_DEAD_CODE_ELIMINATION_H_
