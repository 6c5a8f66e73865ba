// LowerIntrinsics: intrinsics the target lacks expanded into those it has (docs/passes.md).
#ifndef LOOM_PLUGINS_LOOP_PASSES_LOWER_INTRINSICS_H_
#define LOOM_PLUGINS_LOOP_PASSES_LOWER_INTRINSICS_H_

#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass LowerIntrinsics();

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_LOWER_INTRINSICS_H_
