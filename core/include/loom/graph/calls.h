// The calls of prim and extern functions through call_dps, seen from the
// module (docs/target-llvm.md, "Parameter layouts"): which inputs are
// always constants, and giving those constants the layouts the callee's
// parameters took (tir::Schedule::transform_layout).
#ifndef LOOM_GRAPH_CALLS_H_
#define LOOM_GRAPH_CALLS_H_

#include <map>
#include <set>
#include <string>

#include "loom/ir/module.h"

namespace loom::graph {

// For each function of `module` called through call_dps and referenced in
// no other way: the positions of the inputs that are a graph constant at
// every call site.
std::map<std::string, std::set<size_t>> constant_inputs(const ir::IRModule& module);

// `module` with each call_dps of the prim functions named in `functions`
// passing, for every input the callee's param_layouts attribute lays out,
// the constant re-laid out (each constant and layout computed once; the
// new constants typed).  Throws Error naming the call when such an input
// is not a constant, or its shape is not the one the layout was made for.
ir::IRModule relayout_constant_inputs(const ir::IRModule& module, const std::set<std::string>& functions);

}  // namespace loom::graph

#endif  // LOOM_GRAPH_CALLS_H_
