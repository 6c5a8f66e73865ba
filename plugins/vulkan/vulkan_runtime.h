// The Vulkan runtime (docs/target-vulkan.md): device:vulkan, a DeviceAPI
// over the Vulkan loader, and the runtime module `vulkan` that holds each
// kernel's SPIR-V and launches it.  Only vulkan_runtime.cc includes
// Vulkan's headers.  It is the runtime half (plugin vulkan_runtime, linking
// libloom_runtime only); the compiler half (plugin vulkan: the GLSL
// printer and spirv_compiler.h) reaches it through the global functions
// vulkan.make_module, vulkan.describe_device and vulkan.device_features.
#ifndef LOOM_PLUGINS_VULKAN_VULKAN_RUNTIME_H_
#define LOOM_PLUGINS_VULKAN_VULKAN_RUNTIME_H_

#include <loom/runtime/device_api.h>
#include <loom/runtime/kernel_module.h>
#include <loom/runtime/module.h>

#include <memory>
#include <string>
#include <vector>

namespace loom::vulkan {

// The data types a device runs (the target's fp64, fp16, int8 attributes
// as the device allows them); a kernel using another is an Error naming
// the attribute.
struct Features {
  bool fp64 = false, fp16 = false, int8 = false;
};

// The DeviceAPI registered as "vulkan": physical devices in the loader's
// order; nothing is opened until the first use.
std::shared_ptr<runtime::DeviceAPI> make_device_api();

// "NAME (Vulkan X.Y)", for messages; Error naming the package to install
// when there is no Vulkan device.
std::string describe_device(int device_id);
// The data types device `device_id` runs (shaderFloat64, shaderFloat16 with
// 16-bit storage, shaderInt8 with 8-bit storage); Error when the device
// lacks shaderInt64, which the kernels' index arithmetic needs.
Features device_features(int device_id);
// The most threads a workgroup may have on the device.
int64_t max_workgroup_size(int device_id);

// A module of compiled kernels for device_id: runtime.Kernel objects, each
// with its GLSL as source, its SPIR-V as binary and, after the six launch
// sizes, the kind of each argument ("buffer" or a scalar dtype); the
// scalars travel as push constants in that order, each aligned to its size.
runtime::Module make_module(Array kernels, int device_id);
// Registers the module kind vulkan (its object type and loader), from the
// plugin's init.
void register_module_kind();

// The messages the validation layers gave since the last call
// (LOOM_VULKAN_VALIDATION=1 enables them), one per line.
std::string take_validation_messages();

}  // namespace loom::vulkan

#endif  // LOOM_PLUGINS_VULKAN_VULKAN_RUNTIME_H_
