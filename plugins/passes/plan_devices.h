// PlanDevices: gives every tensor of a graph function a device and makes
// each crossing between devices an explicit device_copy (docs/devices.md,
// "Device planning"; docs/passes.md).
#ifndef LOOM_PLUGINS_PASSES_PLAN_DEVICES_H_
#define LOOM_PLUGINS_PASSES_PLAN_DEVICES_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass PlanDevices();

// The property PlanDevices establishes, which device codegens need
// (registered by the plugin; capability "property:devices_planned").
inline constexpr const char* kDevicesPlanned = "devices_planned";
void register_devices_planned();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_PLAN_DEVICES_H_
