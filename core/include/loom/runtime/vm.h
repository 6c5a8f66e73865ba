// The VM that runs graph functions (docs/runtime.md, "VM").
//
// vm_compile turns the lowered graph functions of an IRModule (calls through
// call_dps and call_packed, calls between graph functions, tuples, If,
// constants) into a VM module of type "vm" whose functions have the same
// names.  The prim and extern functions that call_dps names come from the
// module codegen made for them: import it into the VM module.  Tensors are
// allocated from a static memory plan that reuses storage between tensors
// whose lifetimes do not overlap; every call checks its inputs (count,
// dtype, shape, device) before running.
#ifndef LOOM_RUNTIME_VM_H_
#define LOOM_RUNTIME_VM_H_

#include <optional>
#include <string>
#include <vector>

#include "loom/ir/module.h"
#include "loom/runtime/module.h"

namespace loom::runtime {

// Compiles every graph function of `module`.  Throws Error naming the
// function and the construct the VM cannot run (an operator that was not
// lowered, a call_dps output of unknown shape, ...).  The threads of the
// host target (or the target), `num-threads`, are applied to the runtime's
// thread pool when the VM module is created or loaded (LOOM_NUM_THREADS
// still wins).
Module vm_compile(const ir::IRModule& module);

// The static memory plan of one VM function.
struct MemoryPlan {
  int64_t planned_tensors = 0;  // tensors placed in the arena
  int64_t output_tensors = 0;   // tensors returned to the caller (own buffers)
  int64_t storages = 0;         // arena slots after reuse
  // Bytes of the arena (peak) and of one buffer per planned tensor, as an
  // integer or, with symbolic shapes, an expression over the shape
  // variables (for example "(n * 64)").
  std::string peak_bytes, naive_bytes;
  std::optional<int64_t> static_peak_bytes, static_naive_bytes;
};

// The plan of `function` of a VM module; LookupError for an unknown name,
// Error for a module that is not a VM module.
MemoryPlan memory_plan(const Module& vm, const std::string& function);

// The parameter types of `function` of a VM module (an undefined Type for a
// parameter the VM does not check); LookupError for an unknown name.
std::vector<ir::Type> param_types(const Module& vm, const std::string& function);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_VM_H_
