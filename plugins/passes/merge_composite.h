// MergeComposite (docs/partitioning.md): one of the three passes that partition a
// graph for the codegens the config names.
#ifndef LOOM_PLUGINS_PASSES_MERGE_COMPOSITE_H_
#define LOOM_PLUGINS_PASSES_MERGE_COMPOSITE_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass MergeComposite();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_MERGE_COMPOSITE_H_
