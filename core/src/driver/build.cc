#include "loom/driver/build.h"

#include "loom/driver/vm_compiler.h"
#include "loom/graph/function.h"
#include "loom/ir/analysis.h"
#include "loom/ir/op.h"
#include "loom/runtime/device_api.h"
#include "loom/target/codegen.h"
#include "loom/target/target.h"
#include "loom/transform/pass.h"
#include "loom/transform/property.h"

namespace loom::driver {

namespace {
// The host target of a module whose target runs on a device: the module's
// attribute "host" (the config's target.host), which must be a CPU.
target::Target host_of(const ir::IRModule& module, const target::Target& target) {
  target::Target host = module->attrs.contains("host") ? module->attrs.at("host").cast<target::Target>() : target::Target();
  if (!host.defined()) {
    LOOM_THROW(Error) << "build: target kind '" << target->kind << "' runs kernels on a device and needs a host target "
                      << "for the code that launches them: set target.host in the config (for example "
                      << "{kind: " << target->kind << ", host: {kind: llvm}})";
  }
  if (target::traits_of(host).device_type != kDLCPU) {
    LOOM_THROW(Error) << "build: the host target (kind '" << host->kind << "') does not run on the CPU";
  }
  return host;
}
}  // namespace

runtime::Module build_kernels(const ir::IRModule& module, const target::Target& target) {
  // Prim functions, and extern functions whose kind builds nothing itself,
  // go to the target's codegen; each other extern kind builds its own.
  // For a device target, the kernels (SplitHostDevice's device_kernel
  // functions) go to its codegen and the other prim functions, which
  // launch them, to the host target's: the host module is the root and
  // imports the device module, so a launch finds its kernel by name.
  bool device = target::traits_of(target).device_type != kDLCPU;
  target::Target host = device ? host_of(module, target) : target;
  const std::string kHost = "host";
  std::map<std::string, std::map<std::string, Any>> groups;  // builder ("" = codegen) -> functions
  std::map<std::string, Function> builders;
  for (const std::string& name : module.names()) {
    ir::BaseFunc f = module.lookup(name);
    if (f.as<graph::FunctionNode>()) continue;
    std::string builder;
    if (const auto* e = f.as<ir::ExternFuncNode>()) {
      ir::ExternKindEntry kind = ir::ExternKindRegistry::get(e->kind);
      if (kind.build.defined()) builders[builder = "extern kind '" + e->kind + "'"] = kind.build;
    } else if (device && !f->attrs.contains("device_kernel")) {
      builders[builder = kHost] = target::CodegenRegistry::get(host->kind);
    }
    groups[builder][name] = f;
  }
  std::vector<runtime::Module> built;
  size_t root = 0;
  for (const auto& [builder, functions] : groups) {
    ir::IRModule part(functions, module->attrs, module->global_infos);
    Function make = builder.empty() ? target::CodegenRegistry::get(target->kind) : builders.at(builder);
    runtime::Module out = make(part, builder == kHost ? host : target).cast<runtime::Module>();
    if (!out.defined()) {
      LOOM_THROW(Error) << (builder.empty() ? "the codegen for '" + target->kind + "'"
                            : builder == kHost ? "the codegen for the host target '" + host->kind + "'"
                                               : builder)
                        << " returned no module";
    }
    if (builder == kHost || (builder.empty() && !device)) root = built.size();
    built.push_back(out);
  }
  // One root (the codegen's module, or the host module, when there is
  // one); the rest are its imports, so every kernel is found through it.
  if (built.empty()) return runtime::Module();
  for (size_t k = 0; k < built.size(); ++k)
    if (k != root) built[root].import_module(built[k]);
  return built[root];
}

namespace {
// What the target kind declares its codegen needs (its traits): each
// property with a check must hold of the module before code is generated,
// and the kind's device must have a device API.
void check_target_needs(const ir::IRModule& module, const target::Target& target) {
  target::TargetTraits traits = target::traits_of(target);
  for (const std::string& name : traits.codegen_needs) {
    transform::PropertyInfo p = transform::PropertyRegistry::get(name);
    if (!p.check) continue;  // only tracked: nothing to look at here
    if (std::optional<std::string> why = p.check(module)) {
      LOOM_THROW(Error) << "build: the codegen of target kind '" << target->kind << "' needs the property '" << name
                        << "' (" << p.summary << "), which does not hold of the module it is given (" << *why
                        << "); pass '" << p.established_by << "' establishes it: add it to the pipeline";
    }
  }
  runtime::DeviceAPIRegistry::get(Device{traits.device_type, 0});
  if (traits.device_type != kDLCPU) check_target_needs(module, host_of(module, target));
}

runtime::Module link(const ir::IRModule& module, const target::Target& target) {
  check_target_needs(module, target);
  runtime::Module kernels = build_kernels(module, target);
  bool has_graph = false;
  for (const std::string& name : module.names()) has_graph |= module.lookup(name).as<graph::FunctionNode>() != nullptr;
  if (!has_graph) {
    if (!kernels.defined()) LOOM_THROW(Error) << "build: the module has no function";
    return kernels;
  }
  runtime::Module vm = vm_compile(module);
  if (kernels.defined()) vm.import_module(kernels);
  return vm;
}

// The input, checked before any pass or codegen relies on it: a module
// built in a frontend (Python) has not been through the parser's checks.
void check_input(const ir::IRModule& module) {
  std::vector<ir::Diagnostic> problems = ir::well_formed(module);
  if (problems.empty()) return;
  throw Error("build: the module is not well formed (" + std::to_string(problems.size()) + " problem" +
              (problems.size() == 1 ? "" : "s") + "):" + ir::diagnostic_lines(problems));
}
}  // namespace

runtime::Module build(const ir::IRModule& module, const config::Config& config) {
  check_input(module);
  // The config's context (C0), plus the instruments of the context the
  // caller entered (a Python `with PassContext(instruments=...)`).
  transform::PassContext context = config.context;
  for (const auto& instrument : transform::PassContext::current().instruments) context.instruments.push_back(instrument);
  ir::IRModule lowered = config.pipeline()(config.constrain(module), context);
  return link(lowered, config.target);
}

runtime::Module build(const ir::IRModule& module, const target::Target& target) {
  if (!target.defined()) LOOM_THROW(Error) << "build needs a target";
  check_input(module);
  return link(target::with_target(module, target), target);
}

}  // namespace loom::driver
