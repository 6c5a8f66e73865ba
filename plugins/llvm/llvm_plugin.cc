// The llvm plugin (docs/target-llvm.md): target kind `llvm`, whose codegen
// compiles prim functions to machine code for the CPU through LLVM.  A
// build generates LLVM IR (codegen.h), optimises it, emits one object and
// loads that object with ORC, so the functions run at once; the same
// object is what export_library links into a shared library, so both
// paths run the same machine code.
#include <loom/plugin_sdk.h>
#include <loom/runtime/library.h>
#include <loom/runtime/module.h>
#include <loom/runtime/thread_pool.h>
#include <loom/target/codegen.h>
#include <loom/target/target.h>

#include <llvm/MC/MCSubtargetInfo.h>

#include <chrono>
#include <mutex>
#include <set>
#include <string>

#include "codegen.h"
#include "compiler.h"

namespace {
using loom::Any;
using loom::Function;
using loom::Map;
using loom::ir::IRModule;
namespace backend = loom::llvm_backend;

class LLVMModuleNode : public loom::runtime::HostCodeModuleNode {
 public:
  std::string object;  // the relocatable object (ELF), as export links it
  std::string ir;      // the optimised LLVM IR
  backend::MachineOptions options;

  std::string type_key() const override { return "llvm"; }
  std::optional<loom::runtime::LinkedCode> linked_code() const override {
    return loom::runtime::LinkedCode{{{"llvm_kernels.o", object}}, functions};
  }
  std::string inspect_source(const std::string& format) const override {
    if (format == "ll") return ir;
    if (format == "asm" || format == "s") {
      llvm::LLVMContext context;
      auto module = backend::parse_ir(ir, context);
      auto machine = backend::make_machine(options);
      return backend::emit_assembly(*module, *machine);
    }
    LOOM_THROW(Error) << "llvm module: no source format '" << format << "' (it has: ll, asm)";
  }
  LOOM_OBJECT(LLVMModuleNode, loom::runtime::HostCodeModuleNode, "llvm.Module");
};

loom::runtime::Module build(const IRModule& module, const loom::target::Target& target) {
  backend::MachineOptions options = backend::machine_options(target->attrs);
  auto machine = backend::make_machine(options);
  llvm::LLVMContext context;
  backend::GeneratedModule generated = backend::generate(module, context, *machine);
  backend::optimize(*generated.module, *machine, options.opt_level);
  auto node = loom::make_object<LLVMModuleNode>();
  node->ir = backend::print_ir(*generated.module);
  node->object = backend::emit_object(*generated.module, *machine);
  node->functions = generated.functions;
  node->options = options;
  node->library = backend::jit_load(node->object, node->functions, "<llvm module>");
  node->library->bind(node.get());
  return loom::runtime::Module(node);
}

int64_t vector_bits(const loom::target::Target& target) {
  auto machine = backend::make_machine(backend::machine_options(target->attrs));
  return backend::vector_bits(*machine);
}

// The intrinsics only some CPUs implement natively: dot2_bf16 where the
// CPU has AVX-512 BF16 (vdpbf16ps; elsewhere its expansion, two widened
// products, is what the codegen would emit anyway).
std::set<std::string> target_intrinsics(const loom::target::Target& target) {
  auto machine = backend::make_machine(backend::machine_options(target->attrs));
  if (machine->getTargetTriple().isX86() && machine->getMCSubtargetInfo()->checkFeatures("+avx512bf16"))
    return {"dot2_bf16"};
  return {};
}
}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("llvm") LOOM_PLUGIN_VERSION("0.1.0") LOOM_PLUGIN_DESCRIPTION(
    "CPU codegen through LLVM 16: target kind llvm, ORC JIT, objects for export_library"));

LOOM_PLUGIN_INIT(ctx) {
  ctx.register_object<LLVMModuleNode>();
  loom::target::TargetTraits traits;
  traits.vector_bits = vector_bits;
  traits.target_intrinsics = target_intrinsics;
  traits.native_intrinsics = {"exp",        "sigmoid",     "tanh",        "log",        "sqrt",        "floor",
                              "ceil",       "round",       "trunc",       "sin",        "cos",         "abs",
                              "pow",        "fmod",        "isnan",       "isinf",      "ret",         "tan",
                              "asin",       "acos",        "atan",        "sinh",       "cosh",        "asinh",
                              "acosh",      "atanh",       "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                              "shift_left", "shift_right", "dot2_i16"};
  traits.threads_attr = "num-threads";
  // Convolutional models run channels-last (docs/target-llvm.md, "Layout"):
  // 0.67-0.96x the channels-first time on seven ImageNet CNNs (ResNet-18
  // even in one run of two); a model without an NCHW convolution or pool
  // is left as it is.
  traits.default_pipeline = {"cpu_channels_last"};
  traits.codegen_needs = {"intrinsics_lowered"};
  loom::target::TargetKindRegistry::register_kind(
      loom::target::TargetKindEntry::named("llvm")
          .attrs({{"mtriple", "str", std::string(""), "LLVM target triple; empty: this machine's"},
                  {"mcpu", "str", std::string("native"),
                   "CPU model (LLVM's names, e.g. skylake-avx512); native: this machine's"},
                  {"mattr", "str", std::string(""), "CPU features to add or remove, e.g. +avx2,-avx512f"},
                  loom::SchemaField{"num-threads", "int", int64_t{0}, "threads for parallel loops; 0: one per core"}
                      .between(0, loom::runtime::kMaxThreads),
                  loom::SchemaField{"opt-level", "int", int64_t{3}, "LLVM optimisation level"}.between(0, 3)})
          .validate(Function::typed([](Map attrs) { backend::machine_options(attrs); }, "llvm.validate_target"))
          .doc("CPU machine code through LLVM: vectorized, parallel, JIT-loaded or exported as a shared library")
          .traits(traits));
  loom::target::CodegenRegistry::register_codegen(
      "llvm", Function::typed([](IRModule module, loom::target::Target target) { return build(module, target); },
                              "llvm.codegen"));
}
