// The llvm plugin (docs/target-llvm.md): target kind `llvm`, whose codegen
// compiles prim functions to machine code for the CPU through LLVM.  A
// build generates LLVM IR (codegen.h), optimises it and emits objects, in
// parallel parts, and loads those objects with ORC, so the functions run
// at once; the same objects are what export_library links into a shared
// library, so both paths run the same machine code.
#include <loom/plugin_sdk.h>
#include <loom/runtime/library.h>
#include <loom/runtime/module.h>
#include <loom/runtime/thread_pool.h>
#include <loom/target/codegen.h>
#include <loom/target/target.h>
#include <loom/tir/function.h>
#include <loom/tir/functor.h>

#include <llvm/MC/MCSubtargetInfo.h>

#include <algorithm>
#include <exception>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

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
  // One per part the build compiled in parallel (see build below).
  std::vector<std::string> objects;  // the relocatable objects (ELF), as export links them
  std::vector<std::string> irs;      // the optimised LLVM IR of each
  backend::MachineOptions options;

  std::string type_key() const override { return "llvm"; }
  std::optional<loom::runtime::LinkedCode> linked_code() const override {
    loom::runtime::LinkedCode code{{}, functions};
    for (size_t k = 0; k < objects.size(); ++k)
      code.files.emplace_back("llvm_kernels" + (objects.size() == 1 ? "" : "_" + std::to_string(k)) + ".o", objects[k]);
    return code;
  }
  // The parts one after another, each a whole LLVM module (or its assembly).
  std::string inspect_source(const std::string& format) const override {
    if (format != "ll" && format != "asm" && format != "s")
      LOOM_THROW(Error) << "llvm module: no source format '" << format << "' (it has: ll, asm)";
    std::string text;
    if (format == "ll") {
      for (const std::string& ir : irs) text += ir;
      return text;
    }
    auto machine = backend::make_machine(options);
    for (const std::string& ir : irs) {
      llvm::LLVMContext context;
      auto module = backend::parse_ir(ir, context);
      text += backend::emit_assembly(*module, *machine);
    }
    return text;
  }
  LOOM_OBJECT(LLVMModuleNode, loom::runtime::HostCodeModuleNode, "llvm.Module");
};

// Roughly how much work LLVM has with a function: its prim IR's nodes,
// the bodies of unrolled loops counted once per iteration.
int64_t work(const loom::tir::Stmt& body) {
  int64_t nodes = 0;
  loom::tir::pre_order(
      body,
      [&](const loom::tir::Stmt& s) {
        ++nodes;
        const auto* loop = s.as<loom::tir::ForNode>();
        const auto* extent = loop ? loop->extent.as<loom::tir::IntImmNode>() : nullptr;
        if (!extent || loop->for_kind() != loom::tir::ForKind::kUnrolled) return true;
        nodes += extent->value * work(loop->body);
        return false;
      },
      [&](const loom::tir::PrimExpr&) {
        ++nodes;
        return true;
      });
  return nodes;
}

// The module's functions in `count` groups of about equal work (the
// largest first, each to the lightest group), each group in module
// order, so that a build divides the same way every time.
std::vector<std::vector<size_t>> partition(const IRModule& module, const std::vector<std::string>& names,
                                           size_t count) {
  std::vector<int64_t> cost(names.size(), 1);
  for (size_t k = 0; k < names.size(); ++k) {
    if (const auto* f = module.lookup(names[k]).as<loom::tir::PrimFuncNode>()) cost[k] = 1 + work(f->body);
  }
  std::vector<size_t> order(names.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  std::vector<std::vector<size_t>> groups(count);
  std::vector<int64_t> load(count, 0);
  for (size_t k : order) {
    size_t lightest = std::min_element(load.begin(), load.end()) - load.begin();
    groups[lightest].push_back(k);
    load[lightest] += cost[k];
  }
  for (auto& group : groups) std::sort(group.begin(), group.end());
  return groups;
}

// Generates, optimises and emits the module's functions in parts, one per
// CPU this process may use (at most one per function), each part on its
// own thread with its own LLVM context and target machine.  The error of
// the first function in module order that fails is the one reported, as a
// build in one part would.
loom::runtime::Module build(const IRModule& module, const loom::target::Target& target) {
  backend::MachineOptions options = backend::machine_options(target->attrs);
  std::vector<std::string> names = module.names();
  size_t count = std::max<size_t>(1, std::min<size_t>(names.size(), loom::runtime::available_cpus()));
  std::vector<std::vector<size_t>> groups = partition(module, names, count);
  auto node = loom::make_object<LLVMModuleNode>();
  node->objects.resize(count);
  node->irs.resize(count);
  std::vector<std::string> symbols(names.size());
  // Per part: the index of the function that failed (or of the part when
  // the failure is not one function's) and its exception.
  std::vector<std::pair<size_t, std::exception_ptr>> failures(count, {names.size(), nullptr});
  auto compile = [&](size_t part) {
    size_t current = names.size();
    try {
      auto machine = backend::make_machine(options);
      llvm::LLVMContext context;
      std::unique_ptr<llvm::Module> generated = backend::new_module(context, *machine);
      for (size_t k : groups[part]) {
        current = k;
        symbols[k] = backend::generate_function(*generated, module, names[k], *machine);
      }
      current = names.size();
      backend::verify(*generated);
      backend::optimize(*generated, *machine, options.opt_level);
      node->irs[part] = backend::print_ir(*generated);
      node->objects[part] = backend::emit_object(*generated, *machine);
    } catch (...) {
      failures[part] = {current, std::current_exception()};
    }
  };
  // A part whose thread cannot start (a process at its thread limit) runs
  // on this one.
  std::vector<std::thread> threads;
  std::vector<size_t> here{0};
  for (size_t part = 1; part < count; ++part) {
    try {
      threads.emplace_back(compile, part);
    } catch (const std::system_error&) {
      here.push_back(part);
    }
  }
  for (size_t part : here) compile(part);
  for (std::thread& thread : threads) thread.join();
  const std::pair<size_t, std::exception_ptr>* first = nullptr;
  for (const auto& failure : failures)
    if (failure.second && (!first || failure.first < first->first)) first = &failure;
  if (first) std::rethrow_exception(first->second);
  for (size_t k = 0; k < names.size(); ++k) node->functions.emplace_back(names[k], symbols[k]);
  node->options = options;
  node->library = backend::jit_load(node->objects, node->functions, "<llvm module>");
  node->library->bind(node.get());
  return loom::runtime::Module(node);
}

int64_t vector_bits(const loom::target::Target& target) {
  auto machine = backend::make_machine(backend::machine_options(target->attrs));
  return backend::vector_bits(*machine);
}

// The intrinsics only some CPUs implement natively: dot2_bf16 where the
// CPU has AVX-512 BF16 (vdpbf16ps), dot4_u8i8 where it has AVX-512 VNNI
// or AVX-VNNI (vpdpbusd); elsewhere their expansions, widened products,
// are what the codegen would emit anyway.
std::set<std::string> target_intrinsics(const loom::target::Target& target) {
  auto machine = backend::make_machine(backend::machine_options(target->attrs));
  std::set<std::string> out;
  if (!machine->getTargetTriple().isX86()) return out;
  const llvm::MCSubtargetInfo* cpu = machine->getMCSubtargetInfo();
  if (cpu->checkFeatures("+avx512bf16")) out.insert("dot2_bf16");
  if (cpu->checkFeatures("+avx512vnni") || cpu->checkFeatures("+avxvnni")) out.insert("dot4_u8i8");
  return out;
}

// The CPU features graph passes ask about: AMX's (AMXMatmul).
std::set<std::string> cpu_features(const loom::target::Target& target) {
  auto machine = backend::make_machine(backend::machine_options(target->attrs));
  std::set<std::string> out;
  if (!machine->getTargetTriple().isX86()) return out;
  const llvm::MCSubtargetInfo* cpu = machine->getMCSubtargetInfo();
  for (const char* feature : {"amx-tile", "amx-bf16", "amx-int8"})
    if (cpu->checkFeatures(std::string("+") + feature)) out.insert(feature);
  return out;
}
}  // namespace

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("llvm") LOOM_PLUGIN_VERSION("0.1.0") LOOM_PLUGIN_DESCRIPTION(
    "CPU codegen through LLVM 16: target kind llvm, ORC JIT, objects for export_library"));

LOOM_PLUGIN_INIT(ctx) {
  ctx.register_object<LLVMModuleNode>();
  loom::target::TargetTraits traits;
  traits.vector_bits = vector_bits;
  traits.target_intrinsics = target_intrinsics;
  traits.cpu_features = cpu_features;
  traits.native_intrinsics = {"exp",         "sigmoid",    "tanh",        "erf",         "log",        "sqrt",
                              "floor",       "ceil",       "round",       "trunc",       "sin",        "cos",
                              "abs",         "pow",        "fmod",        "isnan",       "isinf",      "ret",
                              "tan",         "asin",       "acos",        "atan",        "sinh",       "cosh",
                              "asinh",       "acosh",      "atanh",       "bitwise_and", "bitwise_or", "bitwise_xor",
                              "bitwise_not", "shift_left", "shift_right", "dot2_i16"};
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
