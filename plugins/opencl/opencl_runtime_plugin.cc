// The opencl plugin's runtime half (docs/target-opencl.md, "Two plugins"):
// device:opencl (the DeviceAPI over the ICD loader), the runtime module
// `opencl` and its loader, so an exported library with OpenCL kernels
// runs with libloom_runtime and this plugin alone; and the two entries the
// compiler half (plugin opencl) builds modules and finds devices with.
#include <loom/object/containers.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/device_api.h>
#include <loom/runtime/module.h>

#include "opencl_runtime.h"

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("opencl_runtime") LOOM_PLUGIN_VERSION("0.2.0")
                         LOOM_PLUGIN_DESCRIPTION("OpenCL's runtime half: device:opencl over the ICD loader, "
                                                 "the runtime module opencl and its loader"));

LOOM_PLUGIN_INIT(ctx) {
  loom::runtime::DeviceAPIRegistry::register_api("opencl", loom::opencl::make_device_api());
  loom::opencl::register_module_kind();
  // A program built now for a device: (source, kernels, device), the
  // kernels runtime.Kernel objects (name and argument kinds).
  ctx.register_function(
      "opencl.make_module",
      [](std::string source, loom::Array kernels, int64_t device) {
        return loom::opencl::make_module(std::move(source), std::move(kernels), static_cast<int>(device));
      },
      "an OpenCL program built for a device: (source, [runtime.Kernel...], device) -> opencl module");
  ctx.register_function(
      "opencl.find_device",
      [](std::string platform, int64_t device) {
        return static_cast<int64_t>(loom::opencl::find_device(platform, static_cast<int>(device)));
      },
      "the index of the device-th device of the first platform named like `platform`");
}
