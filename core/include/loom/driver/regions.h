// Regions as prim functions (docs/partitioning.md, "A codegen that runs
// prim functions"): for a partition codegen whose hardware runs what the
// core's prim IR says (a DSP programmed in a C dialect, a vendor's own
// codegen over CSourcePrinter), the operators of each region lowered and
// fused into one prim function by the same passes that lower a whole
// model, so the codegen only builds prim functions.
#ifndef LOOM_DRIVER_REGIONS_H_
#define LOOM_DRIVER_REGIONS_H_

#include "loom/ir/module.h"

namespace loom::driver {

// `part`: what driver::build gives a partition codegen (its regions, each
// a graph function with attrs codegen called through call_dps, and their
// composites).  Returns a module with one prim function per region, of the
// region's name, whose buffers are the region's parameters and then its
// result (the arguments call_dps gives it), and no module attributes (the
// codegen builds it for its own target): the composites inlined into
// the region, each operator lowered by its lowering (LegalizeOps) and the
// kernels fused into one function (FuseTIR).  Error naming the region for
// one that is not a chain of operator and composite calls, or whose
// operators do not fuse into one prim function.
ir::IRModule lower_regions(const ir::IRModule& part);

}  // namespace loom::driver

#endif  // LOOM_DRIVER_REGIONS_H_
