// VectorizeLoop: vectorized loops to vector operations (docs/passes.md).
#ifndef LOOM_PLUGINS_LOOP_PASSES_VECTORIZE_LOOP_H_
#define LOOM_PLUGINS_LOOP_PASSES_VECTORIZE_LOOP_H_

#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass VectorizeLoop();

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_VECTORIZE_LOOP_H_
