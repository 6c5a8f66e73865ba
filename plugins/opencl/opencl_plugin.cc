// The opencl plugin, its compiler half (docs/target-opencl.md, "Two
// plugins"): target kind `opencl`, whose codegen prints the device kernels
// SplitHostDevice makes as OpenCL C (OpenCLPrinter, derived from the SDK's
// C printer) and has the runtime half (plugin opencl_runtime: device,
// runtime module, loader) build them into the runtime module `opencl`.
// The host code that launches the kernels is built by the host target
// (target.host) and imports this module.
#include <loom/object/containers.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/module.h>
#include <loom/target/codegen.h>
#include <loom/target/target.h>

#include "opencl_printer.h"

namespace {
using loom::Function;
using loom::Map;
using loom::ir::IRModule;

loom::runtime::Module build(const IRModule& module, const loom::target::Target& target) {
  int device = loom::target::device_of(target).device_id;
  loom::opencl::OpenCLPrinter printer;
  std::vector<loom::Any> kernels;
  std::string source = printer.print_program(module, &kernels);
  return loom::FunctionRegistry::get("opencl.make_module")(source, loom::Array(kernels), device)
      .cast<loom::runtime::Module>();
}
}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("opencl") LOOM_PLUGIN_VERSION("0.2.0")
                         LOOM_PLUGIN_DESCRIPTION("OpenCL: target kind opencl (OpenCL C from the C printer); "
                                                 "its runtime is the plugin opencl_runtime")
                             LOOM_PLUGIN_REQUIRES("opencl_runtime"));

LOOM_PLUGIN_INIT(ctx) {
  loom::target::TargetTraits traits;
  traits.vector_bits = [](const loom::target::Target&) -> int64_t { return 0; };  // scalar kernels
  traits.native_intrinsics = loom::target::CSourcePrinter::intrinsics();
  traits.native_intrinsics.insert("tir.barrier");
  traits.device_type = kDLOpenCL;
  traits.device_id = [](const loom::target::Target& target) {
    return static_cast<int>(loom::FunctionRegistry::get("opencl.find_device")(target.attr("platform").as_string(),
                                                                              target.attr("device").as_int())
                                .as_int());
  };
  traits.default_pipeline = {"device"};
  traits.codegen_needs = {"devices_planned", "kernels_split", "intrinsics_lowered"};
  loom::target::TargetKindRegistry::register_kind(
      loom::target::TargetKindEntry::named("opencl")
          .attrs({{"platform", "str", std::string(""), "the first platform whose name contains this ('' for any)"},
                  loom::SchemaField{"device", "int", int64_t{0}, "the device's index among that platform's devices"}
                      .at_least(0),
                  loom::SchemaField{"max-work-group-size", "int", int64_t{256},
                                    "the most threads a block (work-group) of the default device schedule has"}
                      .at_least(1)})
          .doc(
              "OpenCL C kernels run through the ICD loader (PoCL on the CPU); needs target.host for the launching code")
          .traits(traits));
  loom::target::CodegenRegistry::register_codegen(
      "opencl", Function::typed([](IRModule module, loom::target::Target target) { return build(module, target); },
                                "opencl.codegen"));
}
