// Simplify: arithmetic simplification with bounds (docs/passes.md).
#ifndef LOOM_PLUGINS_LOOP_PASSES_SIMPLIFY_H_
#define LOOM_PLUGINS_LOOP_PASSES_SIMPLIFY_H_

#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass Simplify();

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_SIMPLIFY_H_
