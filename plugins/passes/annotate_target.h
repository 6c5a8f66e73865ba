// AnnotateTarget (docs/partitioning.md): one of the three passes that partition a
// graph for the codegens the config names.
#ifndef LOOM_PLUGINS_PASSES_ANNOTATE_TARGET_H_
#define LOOM_PLUGINS_PASSES_ANNOTATE_TARGET_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass AnnotateTarget();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_ANNOTATE_TARGET_H_
