// The whole compile flow in one call (docs/runtime.md, "Building"):
// store the target (C1) in the module, run the pipeline under its
// PassContext (C0), build the prim functions with the codegen of the
// target's kind and the extern functions with their kind's builder (or the
// codegen, for a kind without one), compile the graph functions for the VM and import the
// kernels into it.
#ifndef LOOM_DRIVER_BUILD_H_
#define LOOM_DRIVER_BUILD_H_

#include "loom/config/config.h"
#include "loom/runtime/module.h"

namespace loom::driver {

// With a config (target, host, placement, pipeline, pass context).  The
// passes run under the config's PassContext, with the instruments of the
// entered one (PassContext::current()) added after its own.
runtime::Module build(const ir::IRModule& module, const config::Config& config);

// With a target and no passes: the module must already be lowered.
runtime::Module build(const ir::IRModule& module, const target::Target& target);

// The codegen step alone: the prim and extern functions of an already
// constrained and lowered module, built by the codegen of `target`'s kind
// and by the builders of the extern kinds that have one.  One module: the
// codegen's (or the first), importing the others.  Undefined when the
// module has no such function.
runtime::Module build_kernels(const ir::IRModule& module, const target::Target& target);

}  // namespace loom::driver

#endif  // LOOM_DRIVER_BUILD_H_
