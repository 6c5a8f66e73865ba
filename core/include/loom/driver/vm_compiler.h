// The VM compiler (docs/runtime.md, "VM"): the lowered graph functions of
// an IRModule (calls through call_dps and call_packed, calls between graph
// functions, tuples, If, constants) become a VM executable
// (loom/runtime/vm.h) with a static memory plan, run by a VM module of type
// "vm" whose functions have the same names.  The prim and extern functions
// that call_dps names come from the module codegen made for them: import
// it into the VM module.
#ifndef LOOM_DRIVER_VM_COMPILER_H_
#define LOOM_DRIVER_VM_COMPILER_H_

#include <string>
#include <vector>

#include "loom/ir/module.h"
#include "loom/runtime/module.h"

namespace loom::driver {

// Compiles every graph function of `module`.  Throws Error naming the
// function and the construct the VM cannot run (an operator that was not
// lowered, a call_dps output of unknown shape, a dimension no parameter
// binds, ...).  The thread count of the host target (or the target) is
// stored in the executable and applied to the runtime's thread pool when
// the VM module is created or loaded (LOOM_NUM_THREADS still wins).
runtime::Module vm_compile(const ir::IRModule& module);

// The IR properties vm_compile needs of the module (operators lowered; it
// infers types itself); the driver establishes those that do not hold.
const std::vector<std::string>& vm_needs();

}  // namespace loom::driver

#endif  // LOOM_DRIVER_VM_COMPILER_H_
