// The vulkan plugin, its compiler half (docs/target-vulkan.md, "Two
// plugins"): target kind `vulkan`, whose codegen prints the device kernels
// SplitHostDevice makes as GLSL compute shaders (GLSLPrinter, derived from
// the SDK's C printer), compiles them to SPIR-V with libshaderc and
// validates them with SPIRV-Tools, and has the runtime half (plugin
// vulkan_runtime: device, runtime module, loader) make the module `vulkan`.
#include <loom/object/containers.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/module.h>
#include <loom/target/codegen.h>
#include <loom/target/target.h>

#include "glsl_printer.h"
#include "spirv_compiler.h"

namespace {
using loom::Function;
using loom::FunctionRegistry;
using loom::ir::IRModule;

std::string describe_device(int device) {
  return FunctionRegistry::get("vulkan.describe_device")(int64_t{device}).cast<std::string>();
}

// A data type the target allows: its attribute (auto: what the device
// has; true: required of the device; false: refused).
bool allowed(const loom::target::Target& target, const std::string& attribute, bool device_has, int device) {
  std::string wanted = target.attr(attribute).as_string();
  if (wanted == "false") return false;
  if (wanted == "true" && !device_has) {
    LOOM_THROW(Error) << "vulkan: the target asks for " << attribute << " (" << attribute << ": true) but "
                      << describe_device(device) << " lacks it; set it to auto or false";
  }
  if (wanted != "true" && wanted != "auto") {
    LOOM_THROW(Error) << "vulkan: the target's " << attribute << " is '" << wanted << "'; it is auto, true or false";
  }
  return device_has;
}

loom::runtime::Module build(const IRModule& module, const loom::target::Target& target) {
  int device = loom::target::device_of(target).device_id;
  loom::Array features = FunctionRegistry::get("vulkan.device_features")(int64_t{device}).cast<loom::Array>();
  loom::vulkan::Features has{features[0].as_bool(), features[1].as_bool(), features[2].as_bool()}, use;
  use.fp64 = allowed(target, "fp64", has.fp64, device);
  use.fp16 = allowed(target, "fp16", has.fp16, device);
  use.int8 = allowed(target, "int8", has.int8, device);
  loom::vulkan::GLSLPrinter printer(use);
  std::vector<loom::vulkan::Kernel> kernels = printer.print_kernels(module);
  std::vector<loom::Any> compiled;
  for (loom::vulkan::Kernel& k : kernels) {
    loom::vulkan::compile(k);
    std::string spirv(reinterpret_cast<const char*>(k.spirv.data()), k.spirv.size() * sizeof(uint32_t));
    compiled.emplace_back(loom::runtime::Kernel(k.name, k.args, k.glsl, loom::runtime::Bytes(std::move(spirv))));
  }
  return FunctionRegistry::get("vulkan.make_module")(loom::Array(compiled), int64_t{device})
      .cast<loom::runtime::Module>();
}
}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("vulkan") LOOM_PLUGIN_VERSION("0.2.0") LOOM_PLUGIN_DESCRIPTION(
    "Vulkan: target kind vulkan (GLSL from the C printer, SPIR-V by libshaderc, "
    "checked by SPIRV-Tools); its runtime is the plugin vulkan_runtime") LOOM_PLUGIN_REQUIRES("vulkan_runtime"));

LOOM_PLUGIN_INIT(ctx) {
  loom::target::TargetTraits traits;
  traits.vector_bits = [](const loom::target::Target&) -> int64_t { return 0; };  // scalar kernels
  traits.native_intrinsics = loom::target::CSourcePrinter::intrinsics();
  traits.native_intrinsics.erase("erf");  // GLSL has none: LowerIntrinsics expands it
  // lavapipe's asin and acos are off by 1e-4 near 1: the expansion is closer.
  traits.native_intrinsics.erase("asin");
  traits.native_intrinsics.erase("acos");
  traits.native_intrinsics.insert("tir.barrier");
  traits.device_type = kDLVulkan;
  traits.device_id = [](const loom::target::Target& target) {
    int device = static_cast<int>(target.attr("device").as_int());
    describe_device(device);  // an Error naming the package when there is none
    return device;
  };
  traits.default_pipeline = {"device"};
  traits.codegen_needs = {"devices_planned", "kernels_split", "intrinsics_lowered"};
  loom::target::TargetKindRegistry::register_kind(
      loom::target::TargetKindEntry::named("vulkan")
          .attrs({loom::SchemaField{"device", "int", int64_t{0},
                                    "the physical device's index, in the Vulkan loader's order"}
                      .at_least(0),
                  loom::SchemaField{"max-work-group-size", "int", int64_t{256},
                                    "the most threads a block (workgroup) of the default device schedule has"}
                      .at_least(1),
                  {"fp64", "str", std::string("auto"),
                   "float64 kernels: auto (if the device has shaderFloat64), true, false"},
                  {"fp16", "str", std::string("auto"), "float16 and 16-bit integers: auto, true, false"},
                  {"int8", "str", std::string("auto"), "8-bit integers and bool buffers: auto, true, false"}})
          .doc("GLSL compute shaders compiled to SPIR-V, run through the Vulkan loader (lavapipe on the CPU); needs "
               "target.host for the launching code")
          .traits(traits));
  loom::target::CodegenRegistry::register_codegen(
      "vulkan", Function::typed([](IRModule module, loom::target::Target target) { return build(module, target); },
                                "vulkan.codegen"));
  // The shader compiler as the codegen runs it, for checking a shader by
  // hand (docs/target-vulkan.md, "Checking a shader"): GLSL to validated
  // SPIR-V, returned as its disassembly; and SPIR-V assembly validated.
  loom::FunctionRegistry::register_function("vulkan.compile_glsl", Function::typed(
                                                                       [](std::string name, std::string glsl) {
                                                                         loom::vulkan::Kernel kernel;
                                                                         kernel.name = std::move(name);
                                                                         kernel.glsl = std::move(glsl);
                                                                         loom::vulkan::compile(kernel);
                                                                         return loom::vulkan::disassemble(kernel.spirv);
                                                                       },
                                                                       "vulkan.compile_glsl"));
  loom::FunctionRegistry::register_function(
      "vulkan.validate_spirv",
      Function::typed([](std::string name, std::string assembly) { loom::vulkan::validate_assembly(name, assembly); },
                      "vulkan.validate_spirv"));
}
