// AutoSchedule: a schedule for every prim function, from its shape alone
// (docs/passes.md, docs/target-llvm.md "The default schedule").
#ifndef LOOM_PLUGINS_LOOP_PASSES_AUTO_SCHEDULE_H_
#define LOOM_PLUGINS_LOOP_PASSES_AUTO_SCHEDULE_H_

#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass AutoSchedule();

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_AUTO_SCHEDULE_H_
