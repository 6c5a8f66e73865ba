// DefaultDeviceSchedule: every loop nest of every prim function bound to a
// parallel device's threads, with no hand scheduling (docs/devices.md).
#ifndef LOOM_PLUGINS_LOOP_PASSES_DEFAULT_DEVICE_SCHEDULE_H_
#define LOOM_PLUGINS_LOOP_PASSES_DEFAULT_DEVICE_SCHEDULE_H_

#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass DefaultDeviceSchedule();

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_DEFAULT_DEVICE_SCHEDULE_H_
