#include "loom/driver/build.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "loom/driver/vm_compiler.h"
#include "loom/graph/function.h"
#include "loom/graph/well_formed.h"
#include "loom/ir/op.h"
#include "loom/object/traversal.h"
#include "loom/runtime/device_api.h"
#include "loom/support/strings.h"
#include "loom/target/codegen.h"
#include "loom/target/target.h"
#include "loom/tir/function.h"
#include "loom/transform/pass.h"
#include "loom/transform/property.h"

namespace loom::driver {

namespace {
// The host target of a module with code on a device target `device`: the
// module's host target (target::host_target: the config's target.host, or
// the module's target when it is a CPU), which must be a CPU.
target::Target host_of(const ir::IRModule& module, const target::Target& device) {
  target::Target host = target::host_target(module);
  if (!host.defined()) {
    LOOM_THROW(Error) << "build: target kind '" << device->kind << "' runs kernels on a device and needs a host target "
                      << "for the code that launches them: set target.host in the config (for example "
                      << "{kind: " << device->kind << ", host: {kind: llvm}})";
  }
  if (target::traits_of(host).device_type != kDLCPU) {
    LOOM_THROW(Error) << "build: the host target (kind '" << host->kind << "') does not run on the CPU";
  }
  return host;
}

bool on_device(const target::Target& t) { return target::traits_of(t).device_type != kDLCPU; }

// The targets the module's prim functions are built for (the module's
// target first), each once.
std::vector<target::Target> targets_used(const ir::IRModule& module, const target::Target& target) {
  std::vector<target::Target> out{target};
  for (const std::string& name : module.names()) {
    if (!module.lookup(name).as<tir::PrimFuncNode>()) continue;
    target::Target t = target::function_target(module, name);
    auto same = [&](const target::Target& have) { return target::same_target(have, t); };
    if (t.defined() && std::none_of(out.begin(), out.end(), same)) out.push_back(t);
  }
  return out;
}
}  // namespace

runtime::Module build_kernels(const ir::IRModule& module, const target::Target& target) {
  // Each prim function goes to the codegen of the target it runs on
  // (target::function_target: its placement, else the module's target),
  // and so do extern functions whose kind builds nothing itself; each
  // other extern kind builds its own.  On a device target, the kernels
  // (SplitHostDevice's device_kernel functions) go to the device's
  // codegen and the rest, which launches them, to the host target's.
  // The host module is the root and imports the others, so a launch
  // finds its kernel by name and the VM every function.
  struct Group {
    std::string label;  // for errors
    Function make;
    target::Target target;
    bool codegen;  // a target's codegen (else an extern kind's builder)
    std::map<std::string, Any> functions;
  };
  std::vector<Group> groups;
  auto group_for = [&](const target::Target& t) -> Group& {
    for (Group& g : groups)
      if (g.codegen && target::same_target(g.target, t)) return g;
    groups.push_back(Group{"the codegen for '" + t->kind + "'", target::CodegenRegistry::get(t->kind), t, true, {}});
    return groups.back();
  };
  // The group of an extern kind's builder or of a partition codegen, by
  // its label: made by `make` the first time.
  std::map<std::string, size_t> labelled;
  auto group_labelled = [&](const std::string& label, const std::function<Group()>& make) -> Group& {
    auto [at, added] = labelled.emplace(label, groups.size());
    if (added) groups.push_back(make());
    return groups[at->second];
  };
  for (const std::string& name : module.names()) {
    ir::BaseFunc f = module.lookup(name);
    // A partitioned region and its composites (docs/partitioning.md) go to
    // their codegen, given its partition entry's target (a target of the
    // codegen's kind, default attributes unless the entry sets them).
    if (std::string codegen = graph::codegen_of(f); !codegen.empty()) {
      std::string label = "the codegen for '" + codegen + "' (partitioned for)";
      group_labelled(label, [&] {
        return Group{
            label, target::CodegenRegistry::get(codegen), target::partition_target(module, codegen), false, {}};
      }).functions[name] = f;
      continue;
    }
    if (f.as<graph::FunctionNode>()) continue;
    if (const auto* e = f.as<ir::ExternFuncNode>()) {
      ir::ExternKindEntry kind = ir::ExternKindRegistry::get(e->kind);
      if (kind.build.defined()) {
        std::string label = "extern kind '" + e->kind + "'";
        group_labelled(label, [&] { return Group{label, kind.build, target, false, {}}; }).functions[name] = f;
        continue;
      }
    }
    target::Target t = target::function_target(module, name);
    if (!t.defined()) t = target;
    if (on_device(t) && !f->attrs.contains("device_kernel")) t = host_of(module, t);
    group_for(t).functions[name] = f;
  }
  std::vector<runtime::Module> built;
  target::Target host = target::host_target(module);
  size_t root = groups.size();
  for (const Group& g : groups) {
    ir::IRModule part(g.functions, module->attrs, module->global_infos);
    bool is_host = g.codegen && host.defined() && target::same_target(g.target, host);
    std::string label = is_host && on_device(target) ? "the codegen for the host target '" + host->kind + "'" : g.label;
    runtime::Module out = g.make(part, g.target).cast<runtime::Module>();
    if (!out.defined()) LOOM_THROW(Error) << label << " returned no module";
    if (is_host && root == groups.size()) root = built.size();
    built.push_back(out);
  }
  // One root (the host module, when there is one); the rest are its
  // imports, so every kernel is found through it.
  if (built.empty()) return runtime::Module();
  if (root == groups.size()) root = 0;
  for (size_t k = 0; k < built.size(); ++k)
    if (k != root) built[root].import_module(built[k]);
  return built[root];
}

namespace {
// What target `t` declares its codegen needs (its traits): each property
// with a check must hold of the module before code is generated, and the
// target's device must have a device API.
void check_needs_of(const ir::IRModule& module, const target::Target& t) {
  target::TargetTraits traits = target::traits_of(t);
  for (const std::string& name : traits.codegen_needs) {
    transform::PropertyInfo p = transform::PropertyRegistry::get(name);
    if (!p.check) continue;  // only tracked: nothing to look at here
    if (std::optional<std::string> why = p.check(module)) {
      LOOM_THROW(Error) << "build: the codegen of target kind '" << t->kind << "' needs the property '" << name << "' ("
                        << p.summary << "), which does not hold of the module it is given (" << *why << "); pass '"
                        << p.established_by << "' establishes it: add it to the pipeline";
    }
  }
  runtime::DeviceAPIRegistry::get(Device{traits.device_type, 0});
}

// The needs of every target the module is built for, and of the host
// target of each device target.
void check_target_needs(const ir::IRModule& module, const target::Target& target) {
  for (const target::Target& t : targets_used(module, target)) {
    check_needs_of(module, t);
    if (on_device(t)) check_needs_of(module, host_of(module, t));
  }
}

// Every placement was honoured by the pipeline (docs/devices.md, "One
// module, several devices"), so none is dropped silently: what a placed
// graph function calls is built for its target (PlanDevices passes the
// placement on), and the prim functions on a device were split into
// kernels and the host code that launches them (SplitHostDevice).
void check_placement(const ir::IRModule& module) {
  for (const std::string& name : module.names()) {
    ir::BaseFunc f = module.lookup(name);
    target::Target placed = target::placed_target(module, name);
    if (f.as<graph::FunctionNode>() && placed.defined()) {
      Visitor v;
      v.on<ir::GlobalVarNode>([&](const ir::GlobalVarNode* g) {
        if (!module.contains(g->name) || !module.lookup(g->name).as<tir::PrimFuncNode>()) return;
        target::Target callee = target::function_target(module, g->name);
        if (target::same_target(callee, placed)) return;
        LOOM_THROW(Error) << "build: @" << name << " is placed on target '" << placed->kind << "', but @" << g->name
                          << ", which it calls, is built for '" << (callee.defined() ? callee->kind : "none")
                          << "': the pipeline must run PlanDevices, which passes a graph function's placement on to "
                          << "the kernels it calls (the 'device' pipeline does)";
      });
      v.visit(Any(f));
    }
  }
  // kernels_split, whatever the device kind's codegen declares it needs.
  if (std::optional<std::string> why =
          transform::PropertyRegistry::get(transform::property::kKernelsSplit).check(module)) {
    LOOM_THROW(Error) << "build: " << *why << " and the host code that launches them: the pipeline must run "
                      << "DefaultDeviceSchedule (or bind its loops) and SplitHostDevice (the 'device' pipeline does)";
  }
}

// The module the config's pipeline left, completed for what the VM and
// the codegens of the targets it is built for need (vm_needs(), each
// target's codegen_needs): a property that does not hold is established by
// its pass, so a module built after any prefix of a pipeline, or with no
// pass at all, runs unoptimised.  The passes added are appended to `added`.
ir::IRModule complete(const ir::IRModule& module, const target::Target& target, const transform::PassContext& context,
                      std::vector<std::string>& added) {
  std::vector<std::string> needs = vm_needs();
  auto add = [&](const target::Target& t) {
    for (const std::string& name : target::traits_of(t).codegen_needs)
      if (std::find(needs.begin(), needs.end(), name) == needs.end()) needs.push_back(name);
  };
  for (const target::Target& t : targets_used(module, target)) {
    add(t);
    if (on_device(t)) add(host_of(module, t));
  }
  return transform::establish(module, needs, "the build", context, &added);
}

runtime::Module link(const ir::IRModule& module, const target::Target& target) {
  check_placement(module);
  check_target_needs(module, target);
  runtime::Module kernels = build_kernels(module, target);
  bool has_graph = false;
  for (const std::string& name : module.names()) {
    has_graph |= module.lookup(name).as<graph::FunctionNode>() && graph::codegen_of(module.lookup(name)).empty();
  }
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
  std::vector<ir::Diagnostic> problems = graph::well_formed(module);
  if (problems.empty()) return;
  throw Error("build: the module is not well formed (" + std::to_string(problems.size()) + " problem" +
              (problems.size() == 1 ? "" : "s") + "):" + ir::diagnostic_lines(problems));
}
}  // namespace

runtime::Module build(const ir::IRModule& module, const config::Config& config) {
  check_input(module);
  if (config.target.defined() && target::traits_of(config.target).partition_only) {
    LOOM_THROW(Error) << "build: target kind '" << config.target->kind
                      << "' compiles only the regions partitioning gives "
                      << "it; build for a CPU target and partition for it: target: {kind: llvm, partition: ["
                      << config.target->kind << "]} (docs/partitioning.md)";
  }
  // The config's context (C0), plus the instruments of the context the
  // caller entered (a Python `with PassContext(instruments=...)`).
  transform::PassContext context = config.context;
  for (const auto& instrument : transform::PassContext::current().instruments)
    context.instruments.push_back(instrument);
  // LOOM_LOG=info logs each pass, unless the caller asked for that already.
  bool logging = std::any_of(context.instruments.begin(), context.instruments.end(), [](const auto& i) {
    return dynamic_cast<const transform::LogInstrument*>(i.get()) != nullptr;
  });
  if (!logging && transform::log_level() == transform::LogLevel::kInfo) {
    context.instruments.push_back(std::make_shared<transform::LogInstrument>());
    logging = true;
  }
  ir::IRModule lowered = config.pipeline()(config.constrain(module), context);
  std::vector<std::string> added;
  lowered = complete(lowered, config.target, context, added);
  if (logging && !added.empty()) {
    std::fprintf(stderr, "loom: the build added %s (what the VM and the codegens need that the pipeline left)\n",
                 join(added, ", ").c_str());
  }
  auto start = std::chrono::steady_clock::now();
  runtime::Module built = link(lowered, config.target);
  if (logging) {
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "loom: codegen and link  %.2f ms\n", ms);
  }
  return built;
}

runtime::Module build(const ir::IRModule& module, const target::Target& target) {
  if (!target.defined()) LOOM_THROW(Error) << "build needs a target";
  check_input(module);
  return link(target::with_target(module, target), target);
}

}  // namespace loom::driver
