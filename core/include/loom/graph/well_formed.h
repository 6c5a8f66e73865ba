// The well-formedness check of a module: its graph, prim and extern
// functions (docs/ir.md, "Well-formedness"), and check_module, the check
// every pass boundary and loader runs.
#ifndef LOOM_GRAPH_WELL_FORMED_H_
#define LOOM_GRAPH_WELL_FORMED_H_

#include <vector>

#include "loom/ir/diagnostic.h"
#include "loom/ir/module.h"

namespace loom::graph {

// Every well-formedness problem of the module (empty: well formed).
std::vector<ir::Diagnostic> well_formed(const ir::IRModule& module);

// well_formed, then infer_types (loom/graph/type_infer.h); throws Error
// listing every diagnostic.
ir::IRModule check_module(const ir::IRModule& module);

}  // namespace loom::graph

#endif  // LOOM_GRAPH_WELL_FORMED_H_
