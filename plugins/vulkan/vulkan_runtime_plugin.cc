// The vulkan plugin's runtime half (docs/target-vulkan.md, "Two plugins"):
// device:vulkan (the DeviceAPI over the Vulkan loader), the runtime module
// `vulkan` and its loader, so an exported library with Vulkan kernels runs
// with libloom_runtime and this plugin alone; and the entries the compiler
// half (plugin vulkan) builds modules and asks about devices with.
#include <loom/object/containers.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/device_api.h>
#include <loom/runtime/module.h>

#include <cstring>

#include "vulkan_runtime.h"

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("vulkan_runtime") LOOM_PLUGIN_VERSION("0.2.0")
                         LOOM_PLUGIN_DESCRIPTION("Vulkan's runtime half: device:vulkan over the Vulkan loader, "
                                                 "the runtime module vulkan and its loader"));

LOOM_PLUGIN_INIT(ctx) {
  loom::runtime::DeviceAPIRegistry::register_api("vulkan", loom::vulkan::make_device_api());
  loom::runtime::ModuleLoaderRegistry::register_loader(
      "vulkan",
      loom::Function::typed([](std::string bytes) { return loom::vulkan::load_module(bytes); }, "vulkan.load"));
  // Compiled kernels as the compiler half hands them over: each
  // [name, glsl, spirv (its words' bytes), argument kinds...].
  ctx.register_function(
      "vulkan.make_module",
      [](loom::Array kernels, int64_t device) {
        std::vector<loom::vulkan::Kernel> out;
        for (const loom::Any& k : kernels) {
          loom::Array items = k.cast<loom::Array>();
          if (items.size() < 3) LOOM_THROW(Error) << "vulkan.make_module: a kernel is [name, glsl, spirv, args...]";
          loom::vulkan::Kernel kernel;
          kernel.name = items[0].cast<std::string>();
          kernel.glsl = items[1].cast<std::string>();
          std::string words = items[2].cast<std::string>();
          if (words.size() % 4 != 0)
            LOOM_THROW(Error) << "vulkan.make_module: kernel " << kernel.name << "'s SPIR-V is " << words.size()
                              << " bytes, not whole words";
          kernel.spirv.resize(words.size() / 4);
          std::memcpy(kernel.spirv.data(), words.data(), words.size());
          for (size_t i = 3; i < items.size(); ++i) kernel.args.push_back(items[i].cast<std::string>());
          out.push_back(std::move(kernel));
        }
        return loom::vulkan::make_module(std::move(out), static_cast<int>(device));
      },
      "a module of compiled Vulkan kernels for a device: ([[name, glsl, spirv bytes, arg kinds...]...], device)");
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
