// SplitHostDevice: each prim function with thread-bound loops becomes a
// host function that launches device kernels (docs/devices.md).
#ifndef LOOM_PLUGINS_LOOP_PASSES_SPLIT_HOST_DEVICE_H_
#define LOOM_PLUGINS_LOOP_PASSES_SPLIT_HOST_DEVICE_H_

#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass SplitHostDevice();

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_SPLIT_HOST_DEVICE_H_
