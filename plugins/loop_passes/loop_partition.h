// LoopPartition: loops split where a condition is decided, so vector loops have no tails (docs/passes.md).
#ifndef LOOM_PLUGINS_LOOP_PASSES_LOOP_PARTITION_H_
#define LOOM_PLUGINS_LOOP_PASSES_LOOP_PARTITION_H_

#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass LoopPartition();

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_LOOP_PARTITION_H_
