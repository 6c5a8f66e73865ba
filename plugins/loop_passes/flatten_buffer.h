// FlattenBuffer: multi-dimensional buffer accesses to one dimension (docs/passes.md).
#ifndef LOOM_PLUGINS_LOOP_PASSES_FLATTEN_BUFFER_H_
#define LOOM_PLUGINS_LOOP_PASSES_FLATTEN_BUFFER_H_

#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass FlattenBuffer();

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_FLATTEN_BUFFER_H_
