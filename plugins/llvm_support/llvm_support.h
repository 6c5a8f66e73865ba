// What the plugins built on LLVM 16 (llvm, asm, mlir) share: this machine
// as LLVM names it, the registration of LLVM's targets, and LLVM's
// optimisation pipeline.  A static library linked into each of them (each
// plugin keeps its own copy; LLVM's registries live in libLLVM, which they
// share).  The header declares LLVM's types without including LLVM's
// headers, so a plugin's files that do not use LLVM may include it.
#ifndef LOOM_PLUGINS_LLVM_SUPPORT_LLVM_SUPPORT_H_
#define LOOM_PLUGINS_LLVM_SUPPORT_LLVM_SUPPORT_H_

#include <string>

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace loom::llvm_support {

// A machine as LLVM names it: a triple, a CPU name and its features
// ("+avx2,-avx512f,..."; empty: the CPU's own).
struct Machine {
  std::string triple;
  std::string cpu;
  std::string features;
};

// Registers every target LLVM was built with (infos, MC layers, assembly
// parsers) and the native target's code generation and printer; once per
// process, from any thread.
void initialize_targets();

// This process's triple, CPU name and features.
Machine host_machine();

// Whether LLVM knows the triple, and `cpu` for it ("" and "generic":
// every triple's).
bool is_known_cpu(const std::string& triple, const std::string& cpu);

// LLVM's default pipeline at `opt_level` (0 to 3: loop and SLP
// vectorization from 2, loop unrolling from 1) run on `module` for
// `machine`.
void optimize(llvm::Module& module, llvm::TargetMachine& machine, int opt_level);

}  // namespace loom::llvm_support

#endif  // LOOM_PLUGINS_LLVM_SUPPORT_LLVM_SUPPORT_H_
