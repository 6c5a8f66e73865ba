// DeadCodeElimination: drops pure let bindings nobody uses and the
// functions the entries (the graph functions that are not primitive) do
// not reach through graph function bodies (docs/passes.md).
#ifndef LOOM_PLUGINS_PASSES_DEAD_CODE_ELIMINATION_H_
#define LOOM_PLUGINS_PASSES_DEAD_CODE_ELIMINATION_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass DeadCodeElimination();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_DEAD_CODE_ELIMINATION_H_
