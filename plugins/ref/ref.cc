// The ref plugin: target kind "ref", whose codegen wraps prim functions in
// a module that runs them with the reference interpreter
// (interpreter.h).  Graph functions run on the VM as for every target, so
// a whole model runs through ref: slowly, simply, as a numerical oracle.
// The module saves its functions as JSON (runtime:ref), so it exports and
// loads like any other.
#include <loom/driver/build.h>
#include <loom/ir/module.h>
#include <loom/text/text.h>
#include <loom/object/serialization.h>
#include <loom/plugin_sdk.h>
#include <loom/runtime/module.h>
#include <loom/runtime/thread_pool.h>
#include <loom/target/codegen.h>
#include <loom/target/target.h>

#include "interpreter.h"

namespace {
using loom::Any;
using loom::Function;
using loom::ir::IRModule;

class RefModuleNode : public loom::runtime::ModuleNode {
 public:
  IRModule functions;
  std::string type_key() const override { return "ref"; }
  std::vector<std::string> function_names() const override { return functions.names(); }
  std::optional<Function> own_function(const std::string& name) const override {
    if (!functions.contains(name)) return std::nullopt;
    auto prim = loom::downcast<loom::tir::PrimFunc>(functions.lookup(name));
    return Function(
        [prim, name](const Any* args, int32_t count) { return loom::ref::run_prim_func(prim, name, args, count); },
        name);
  }
  std::string save_to_binary() const override { return loom::save_binary(Any(functions)); }
  std::string inspect_source(const std::string& format) const override {
    if (format == "ir" || format == "loom") return loom::text::print_module(functions);
    return ModuleNode::inspect_source(format);
  }
  LOOM_OBJECT(RefModuleNode, loom::runtime::ModuleNode, "ref.Module");
};

loom::runtime::Module make_module(const IRModule& module) {
  for (const std::string& name : module.names()) {
    loom::ir::BaseFunc f = module.lookup(name);
    if (const auto* ext = f.as<loom::ir::ExternFuncNode>()) {
      LOOM_THROW(Error) << "ref: @" << name << " is an extern function of kind '" << ext->kind
                        << "'; the reference interpreter runs prim functions only";
    }
    if (!f.as<loom::tir::PrimFuncNode>()) {
      LOOM_THROW(Error) << "ref: @" << name << " is not a prim function";
    }
  }
  auto node = loom::make_object<RefModuleNode>();
  node->functions = module;
  return loom::runtime::Module(node);
}
}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("ref") LOOM_PLUGIN_VERSION("0.1.0") LOOM_PLUGIN_DESCRIPTION(
    "Reference interpreter: target kind ref runs prim functions as an oracle"));

LOOM_PLUGIN_INIT(ctx) {
  ctx.register_object<RefModuleNode>();
  // The interpreter evaluates every intrinsic it knows directly, so
  // LowerIntrinsics leaves them for it.
  loom::target::TargetTraits traits;
  std::vector<std::string> known = loom::ref::known_intrinsics();
  traits.native_intrinsics = std::set<std::string>(known.begin(), known.end());
  traits.threads_attr = "num-threads";
  traits.default_pipeline = {"cpu"};
  loom::target::TargetKindRegistry::register_kind(
      loom::target::TargetKindEntry::named("ref")
          .attrs({loom::SchemaField{"num-threads", "int", int64_t{0},
                                    "threads for the VM's host pool; prim functions run serially"}
                      .between(0, loom::runtime::kMaxThreads)})
          .doc("the reference interpreter: slow, simple, exact; a numerical oracle")
          .traits(traits));
  loom::target::CodegenRegistry::register_codegen(
      "ref", Function::typed([](IRModule module, loom::target::Target) { return make_module(module); }, "ref.codegen"));
  // The interpreter as a function, for passes that evaluate at compile
  // time (FoldConstant): (prim function, one NDArray per buffer
  // parameter) in destination-passing style.
  ctx.register_function(
      "ref.run_prim_func",
      Function(
          [](const Any* args, int32_t count) -> Any {
            if (count < 1) LOOM_THROW(TypeError) << "ref.run_prim_func needs a prim function and its arguments";
            return loom::ref::run_prim_func(args[0].cast<loom::tir::PrimFunc>(), "ref.run_prim_func", args + 1,
                                            count - 1);
          },
          "ref.run_prim_func"),
      "runs a prim function with the reference interpreter: (func, arrays...) in destination-passing style");
  loom::runtime::ModuleLoaderRegistry::register_loader(
      "ref",
      Function::typed(
          [](std::string bytes) { return make_module(loom::load_document(bytes, "<ref module>").cast<IRModule>()); },
          "ref.load"));
}
