// UnrollLoop: unrolled loops to straight-line copies (docs/passes.md).
#ifndef LOOM_PLUGINS_LOOP_PASSES_UNROLL_LOOP_H_
#define LOOM_PLUGINS_LOOP_PASSES_UNROLL_LOOP_H_

#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass UnrollLoop();

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_UNROLL_LOOP_H_
