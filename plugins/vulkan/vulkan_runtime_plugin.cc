// The vulkan plugin's runtime half (docs/target-vulkan.md, "Two plugins"):
// device:vulkan (the DeviceAPI over the Vulkan loader), the runtime module
// `vulkan` and its loader, so an exported library with Vulkan kernels runs
// with libloom_runtime and this plugin alone; and the entries the compiler
// half (plugin vulkan) builds modules and asks about devices with.
#include <loom/object/containers.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/device_api.h>
#include <loom/runtime/module.h>

#include "vulkan_runtime.h"

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("vulkan_runtime") LOOM_PLUGIN_VERSION("0.2.0")
                         LOOM_PLUGIN_DESCRIPTION("Vulkan's runtime half: device:vulkan over the Vulkan loader, "
                                                 "the runtime module vulkan and its loader"));

LOOM_PLUGIN_INIT(ctx) {
  loom::runtime::DeviceAPIRegistry::register_api("vulkan", loom::vulkan::make_device_api());
  loom::vulkan::register_module_kind();
  // Compiled kernels as the compiler half hands them over: runtime.Kernel
  // objects with their GLSL as source and SPIR-V as binary.
  ctx.register_function(
      "vulkan.make_module",
      [](loom::Array kernels, int64_t device) {
        return loom::vulkan::make_module(std::move(kernels), static_cast<int>(device));
      },
      "a module of compiled Vulkan kernels for a device: ([runtime.Kernel...], device)");
  ctx.register_function(
      "vulkan.describe_device", [](int64_t device) { return loom::vulkan::describe_device(static_cast<int>(device)); },
      "NAME (Vulkan X.Y) of a device; an Error naming the package to install when there is none");
  ctx.register_function(
      "vulkan.device_features",
      [](int64_t device) {
        loom::vulkan::Features f = loom::vulkan::device_features(static_cast<int>(device));
        return loom::Array({loom::Any(f.fp64), loom::Any(f.fp16), loom::Any(f.int8)});
      },
      "[fp64, fp16, int8]: the data types a device runs");
  ctx.register_function(
      "vulkan.validation_messages", []() { return loom::vulkan::take_validation_messages(); },
      "the messages the validation layers gave since the last call, one per line");
}
