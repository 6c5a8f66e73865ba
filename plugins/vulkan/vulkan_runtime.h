// The Vulkan runtime (docs/target-vulkan.md): device:vulkan, a DeviceAPI
// over the Vulkan loader, and the runtime module `vulkan` that holds each
// kernel's SPIR-V and launches it.  Only vulkan_runtime.cc includes
// Vulkan's headers; only spirv_compiler.cc shaderc's and SPIRV-Tools'.
#ifndef LOOM_PLUGINS_VULKAN_VULKAN_RUNTIME_H_
#define LOOM_PLUGINS_VULKAN_VULKAN_RUNTIME_H_

#include <loom/runtime/device_api.h>
#include <loom/runtime/module.h>

#include <memory>
#include <string>
#include <vector>

#include "glsl_printer.h"

namespace loom::vulkan {

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

// A module of kernels (compiled: their SPIR-V filled) for device_id.
runtime::Module make_module(std::vector<Kernel> kernels, int device_id);
// The module's loader (type key "vulkan").
runtime::Module load_module(const std::string& bytes);

// The messages the validation layers gave since the last call
// (LOOM_VULKAN_VALIDATION=1 enables them), one per line.
std::string take_validation_messages();

// GLSL -> SPIR-V (libshaderc), checked by SPIRV-Tools' validator: fills
// kernel.spirv; Error naming the kernel, with the compiler's or the
// validator's message.
void compile(Kernel& kernel);
// SPIR-V as text (SPIRV-Tools' disassembler), for the functions below.
std::string disassemble(const std::vector<uint32_t>& words);
// Assembles SPIR-V text and validates it as compile() does: Error naming
// the kernel and the assembler's line or the validator's message.
void validate_assembly(const std::string& name, const std::string& assembly);

}  // namespace loom::vulkan

#endif  // LOOM_PLUGINS_VULKAN_VULKAN_RUNTIME_H_
