// Target machines, optimisation, object output and the JIT; see compiler.h.
#include "compiler.h"

#include <llvm/AsmParser/Parser.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/JITLink/EHFrameSupport.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/X86TargetParser.h>

#include <mutex>
#include <sstream>

#include <loom/runtime/c_backend_api.h>
#include <loom/support/error.h>
#include <loom/support/strings.h>

namespace loom::llvm_backend {

void initialize_llvm() { llvm_support::initialize_targets(); }

namespace {
std::string to_string(llvm::Error error) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  stream << error;
  return stream.str();
}

const llvm::Target* lookup_target(const std::string& triple) {
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    LOOM_THROW(Error) << "target llvm: mtriple '" << triple << "' is not supported by this LLVM (" << error
                      << "); this build has " << llvm::sys::getDefaultTargetTriple();
  }
  return target;
}
}  // namespace

MachineOptions machine_options(const Map& attrs) {
  initialize_llvm();
  MachineOptions o;
  o.triple = attrs.contains("mtriple") ? attrs.at("mtriple").as_string() : "";
  if (o.triple.empty()) o.triple = llvm::sys::getProcessTriple();
  o.cpu = attrs.contains("mcpu") ? attrs.at("mcpu").as_string() : "native";
  std::string mattr = attrs.contains("mattr") ? attrs.at("mattr").as_string() : "";
  o.opt_level = attrs.contains("opt-level") ? static_cast<int>(attrs.at("opt-level").as_int()) : 3;
  if (o.opt_level < 0 || o.opt_level > 3)
    LOOM_THROW(Error) << "target llvm: opt-level must be 0..3, got " << o.opt_level;
  const llvm::Target* target = lookup_target(o.triple);
  // This machine, detected once, when the triple is of its architecture.
  bool host_arch = llvm::Triple(o.triple).getArch() == llvm::Triple(llvm::sys::getProcessTriple()).getArch();
  llvm_support::Machine host = host_arch ? llvm_support::host_machine() : llvm_support::Machine{};
  std::vector<std::string> features;
  if (o.cpu == "native") {
    if (!host_arch) {
      LOOM_THROW(Error) << "target llvm: mcpu 'native' means this machine's CPU, which cannot run mtriple '" << o.triple
                        << "'; name a CPU";
    }
    o.cpu = host.cpu;
    if (!host.features.empty()) features = split(host.features, ',');
  }
  std::unique_ptr<llvm::MCSubtargetInfo> info(target->createMCSubtargetInfo(o.triple, "", ""));
  if (!info->isCPUStringValid(o.cpu)) {
    std::vector<std::string> known;
    if (llvm::Triple(o.triple).isX86()) {
      llvm::SmallVector<llvm::StringRef, 64> names;
      llvm::X86::fillValidCPUArchList(names, false);
      for (llvm::StringRef n : names) known.push_back(n.str());
    }
    LOOM_THROW(Error) << "target llvm: mcpu '" << o.cpu << "' is not a CPU of " << o.triple
                      << did_you_mean(o.cpu, known);
  }
  // mattr: "+feature,-feature".  For this machine's architecture each
  // name must be one LLVM's host detection knows (LLVM 16 has no public
  // list of a target's features).
  std::vector<std::string> known_features;
  for (const std::string& f : split(host.features, ',')) known_features.push_back(f.substr(1));  // without the +/-
  std::stringstream list(mattr);
  std::string item;
  while (std::getline(list, item, ',')) {
    item = std::string(trim(item));
    if (item.empty()) continue;
    if (item[0] != '+' && item[0] != '-') {
      LOOM_THROW(Error) << "target llvm: mattr entry '" << item << "' must start with + or - (as +avx2,-fma)";
    }
    std::string name = item.substr(1);
    if (!known_features.empty() &&
        std::find(known_features.begin(), known_features.end(), name) == known_features.end()) {
      LOOM_THROW(Error) << "target llvm: mattr names '" << name << "', which is not a feature of " << o.triple
                        << did_you_mean(name, known_features);
    }
    features.push_back(item);
  }
  for (size_t k = 0; k < features.size(); ++k) o.features += (k ? "," : "") + features[k];
  return o;
}

std::unique_ptr<llvm::TargetMachine> make_machine(const MachineOptions& o) {
  initialize_llvm();
  const llvm::Target* target = lookup_target(o.triple);
  llvm::TargetOptions options;
  llvm::CodeGenOpt::Level level = o.opt_level == 0   ? llvm::CodeGenOpt::None
                                  : o.opt_level == 1 ? llvm::CodeGenOpt::Less
                                  : o.opt_level == 2 ? llvm::CodeGenOpt::Default
                                                     : llvm::CodeGenOpt::Aggressive;
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(o.triple, o.cpu, o.features, options, llvm::Reloc::PIC_, std::nullopt, level));
  if (!machine) LOOM_THROW(Error) << "target llvm: LLVM cannot make a machine for " << o.triple << " / " << o.cpu;
  return machine;
}

int vector_bits(const llvm::TargetMachine& machine) {
  const llvm::MCSubtargetInfo* info = machine.getMCSubtargetInfo();
  llvm::Triple::ArchType arch = machine.getTargetTriple().getArch();
  if (arch == llvm::Triple::x86_64 || arch == llvm::Triple::x86) {
    if (info->checkFeatures("+avx512f")) return 512;
    if (info->checkFeatures("+avx")) return 256;
    if (info->checkFeatures("+sse2")) return 128;
    return 0;
  }
  if (arch == llvm::Triple::aarch64) return info->checkFeatures("+neon") ? 128 : 0;
  return 0;
}

namespace {
std::string emit(llvm::Module& module, llvm::TargetMachine& machine, llvm::CodeGenFileType kind) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, stream, nullptr, kind)) {
    LOOM_THROW(Error) << "llvm: this target machine cannot emit "
                      << (kind == llvm::CGFT_ObjectFile ? "object files" : "assembly");
  }
  passes.run(module);
  return std::string(buffer.begin(), buffer.end());
}
}  // namespace

std::string emit_object(llvm::Module& module, llvm::TargetMachine& machine) {
  return emit(module, machine, llvm::CGFT_ObjectFile);
}
std::string emit_assembly(llvm::Module& module, llvm::TargetMachine& machine) {
  return emit(module, machine, llvm::CGFT_AssemblyFile);
}

std::string print_ir(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  module.print(stream, nullptr);
  return stream.str();
}

std::unique_ptr<llvm::Module> parse_ir(const std::string& text, llvm::LLVMContext& context) {
  llvm::SMDiagnostic diagnostic;
  auto module = llvm::parseAssemblyString(text, diagnostic, context);
  if (!module) LOOM_THROW(Error) << "llvm: cannot parse the stored IR: " << diagnostic.getMessage().str();
  return module;
}

namespace {
// What the JIT'ed code and HostLibrary::adopt share: the runtime slots and
// the function table, which export_library's linker would otherwise make.
struct JitState {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  uint32_t abi = LOOM_LIBRARY_ABI;
  uint32_t host_api_size = sizeof(LoomHostApi);  // what the generated code reads (codegen.cc's offsets)
  const void* host_api = nullptr;
  void* module_ctx = nullptr;
  std::vector<std::string> names;
  std::vector<LoomFunctionEntry> table;
};
}  // namespace

std::shared_ptr<runtime::HostLibrary> jit_load(const std::vector<std::string>& objects,
                                               const std::vector<std::pair<std::string, std::string>>& functions,
                                               const std::string& name) {
  initialize_llvm();
  auto state = std::make_shared<JitState>();
  // JITLink rather than LLVM 16's default on Linux (RuntimeDyld with a
  // memory manager that maps code and read-only data separately): JITLink
  // places all of an object's sections in one allocation, so the 32-bit
  // PC-relative references from code to its constant pools stay in range
  // however fragmented the address space is (several GiB of weights mapped
  // between them made RuntimeDyld truncate the offsets silently and the
  // code crash), and it reports a reference out of range as an error.
  auto jit = llvm::orc::LLJITBuilder()
                 .setObjectLinkingLayerCreator([](llvm::orc::ExecutionSession& session, const llvm::Triple&) {
                   auto layer = std::make_unique<llvm::orc::ObjectLinkingLayer>(session);
                   // Unwind tables, so debuggers and profilers walk through generated frames.
                   layer->addPlugin(std::make_unique<llvm::orc::EHFrameRegistrationPlugin>(
                       session, std::make_unique<llvm::jitlink::InProcessEHFrameRegistrar>()));
                   return llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>>(std::move(layer));
                 })
                 .create();
  if (!jit) LOOM_THROW(Error) << "llvm: cannot start the JIT: " << to_string(jit.takeError());
  state->jit = std::move(*jit);
  llvm::orc::LLJIT& j = *state->jit;
  llvm::orc::JITDylib& dylib = j.getMainJITDylib();
  // libc and libm (snprintf, sinf, ...) from this process.
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(j.getDataLayout().getGlobalPrefix());
  if (!process) LOOM_THROW(Error) << "llvm: " << to_string(process.takeError());
  dylib.addGenerator(std::move(*process));
  llvm::orc::SymbolMap slots;
  auto define = [&](const char* symbol, void* address) {
    slots[j.mangleAndIntern(symbol)] =
        llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(address), llvm::JITSymbolFlags::Exported);
  };
  define("__loom_host_api", &state->host_api);
  define("__loom_module_ctx", &state->module_ctx);
  if (auto error = dylib.define(llvm::orc::absoluteSymbols(slots))) {
    LOOM_THROW(Error) << "llvm: " << to_string(std::move(error));
  }
  for (size_t k = 0; k < objects.size(); ++k) {
    std::string part = objects.size() == 1 ? name : name + " part " + std::to_string(k);
    if (auto error = j.addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(objects[k], part))) {
      LOOM_THROW(Error) << "llvm: the JIT cannot load the object of " << part << ": " << to_string(std::move(error));
    }
  }
  state->names.reserve(functions.size());
  for (const auto& [function, symbol] : functions) {
    auto address = j.lookup(symbol);
    if (!address)
      LOOM_THROW(Error) << "llvm: the JIT cannot link @" << function << ": " << to_string(address.takeError());
    state->names.push_back(function);
    state->table.push_back({sizeof(LoomFunctionEntry), state->names.back().c_str(), address->toPtr<LoomBackendFunc>()});
  }
  state->table.push_back({sizeof(LoomFunctionEntry), nullptr, nullptr});
  JitState* raw = state.get();
  return runtime::HostLibrary::adopt(
      name,
      [raw](const char* symbol) -> void* {
        std::string s = symbol;
        if (s == "__loom_library_abi") return &raw->abi;
        if (s == "__loom_host_api_size") return &raw->host_api_size;
        if (s == "__loom_host_api") return &raw->host_api;
        if (s == "__loom_module_ctx") return &raw->module_ctx;
        if (s == "__loom_function_table") return raw->table.data();
        return nullptr;
      },
      state);
}

}  // namespace loom::llvm_backend
