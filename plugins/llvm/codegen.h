// Prim IR -> LLVM IR (docs/target-llvm.md, "What codegen supports").
//
// Every prim function `f` of the module becomes a function with the host
// library ABI of loom/runtime/c_backend_api.h, named `symbol`, that checks
// its arguments (count, type code, device, dtype, rank, compactness, every
// dimension against the buffer's shape) and reports a mismatch through the
// runtime's set_last_error, then runs the body.  The body is an internal
// function whose buffer pointers are `noalias` (a caller never passes one
// tensor as two different buffers; buffer views of one tensor share one
// pointer).  Parallel loops are outlined into closures run by the
// runtime's parallel_for; vectorized loops that VectorizeLoop turned into
// ramps become LLVM vector operations (any left are marked for LLVM's loop
// vectorizer); unrolled loops carry llvm.loop.unroll.full.
//
// The code refers to the runtime only through the global `__loom_host_api`
// (defined by export_library's table, or by the JIT), so the same object
// runs in memory and from a shared library.
#ifndef LOOM_PLUGINS_LLVM_CODEGEN_H_
#define LOOM_PLUGINS_LLVM_CODEGEN_H_

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

#include <loom/ir/module.h>

namespace loom::llvm_backend {

// An empty LLVM module for the machine (its triple and data layout).
std::unique_ptr<llvm::Module> new_module(llvm::LLVMContext& context, const llvm::TargetMachine& machine);

// Adds the prim function `name` of `module` to `out` and returns its
// symbol.  Functions are independent of each other (they share only the
// declarations of the runtime's globals), so a build may put them in
// different LLVM modules and compile those in parallel.  Throws Error
// naming the function and the construct it cannot compile.
std::string generate_function(llvm::Module& out, const ir::IRModule& module, const std::string& name,
                              const llvm::TargetMachine& machine);

// Throws Error (an internal error) when the generated IR is invalid.
void verify(const llvm::Module& module);

}  // namespace loom::llvm_backend

#endif  // LOOM_PLUGINS_LLVM_CODEGEN_H_
