// The LLVM side of the llvm plugin (docs/target-llvm.md): target machines
// from a Target's attributes, the optimisation pipeline, object and
// assembly output, and the ORC JIT that loads an object into this process.
#ifndef LOOM_PLUGINS_LLVM_COMPILER_H_
#define LOOM_PLUGINS_LLVM_COMPILER_H_

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <loom/object/containers.h>
#include <loom/runtime/library.h>

#include "llvm_support.h"

namespace loom::llvm_backend {

// A Target's attributes with `native` and the defaults resolved.
struct MachineOptions {
  std::string triple;    // mtriple; the host's when empty
  std::string cpu;       // mcpu; "native" becomes the host CPU's name
  std::string features;  // mattr, after the host's features for native
  int opt_level = 3;     // opt-level 0..3
};

// Resolves and checks the attributes of an llvm target (a Map from
// Target::attrs); Error naming the attribute and what is wrong (an
// unknown triple, CPU or feature, with the closest known name).
MachineOptions machine_options(const Map& attrs);
std::unique_ptr<llvm::TargetMachine> make_machine(const MachineOptions& options);
// The widest vector register, in bits, of the machine's features.
int vector_bits(const llvm::TargetMachine& machine);

// Optimises `module` in place with LLVM's default pipeline at the level.
using llvm_support::optimize;
std::string emit_object(llvm::Module& module, llvm::TargetMachine& machine);
std::string emit_assembly(llvm::Module& module, llvm::TargetMachine& machine);
std::string print_ir(const llvm::Module& module);
// Parses LLVM IR text (what print_ir gave) back, for inspect_source("asm").
std::unique_ptr<llvm::Module> parse_ir(const std::string& text, llvm::LLVMContext& context);

// Loads objects (a host library's functions, from emit_object) into this
// process with ORC, linked together, and adopts them as one host library:
// the JIT defines the runtime slots and the function table that
// export_library's linker would.  `functions`: (name, symbol).
std::shared_ptr<runtime::HostLibrary> jit_load(const std::vector<std::string>& objects,
                                               const std::vector<std::pair<std::string, std::string>>& functions,
                                               const std::string& name);

// Initialises LLVM's native target once.
void initialize_llvm();

}  // namespace loom::llvm_backend

#endif  // LOOM_PLUGINS_LLVM_COMPILER_H_
