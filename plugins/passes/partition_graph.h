// PartitionGraph (docs/partitioning.md): one of the three passes that partition a
// graph for the codegens the config names.
#ifndef LOOM_PLUGINS_PASSES_PARTITION_GRAPH_H_
#define LOOM_PLUGINS_PASSES_PARTITION_GRAPH_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass PartitionGraph();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_PARTITION_GRAPH_H_
