// ThreadSync: barriers between the threads of a block where a shared
// buffer is written and then read or written again (docs/devices.md).
#ifndef LOOM_PLUGINS_LOOP_PASSES_THREAD_SYNC_H_
#define LOOM_PLUGINS_LOOP_PASSES_THREAD_SYNC_H_

#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass ThreadSync();

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_THREAD_SYNC_H_
