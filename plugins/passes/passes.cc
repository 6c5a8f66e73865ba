// The graph pass library: passes over graph functions, registered by name
// so a YAML pipeline, the CLI and Python can name them (docs/passes.md).
// One pass per file pair.
#include <loom/plugin_sdk.h>

#include "canonicalize_bindings.h"
#include "dead_code_elimination.h"
#include "eliminate_common_subexpr.h"
#include "fold_constant.h"
#include "legalize_ops.h"

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("passes") LOOM_PLUGIN_VERSION("0.1.0")
                     LOOM_PLUGIN_DESCRIPTION("Graph passes: lowering of operators and clean-ups")
                     LOOM_PLUGIN_PROVIDES("pass:LegalizeOps,pass:DeadCodeElimination,pass:CanonicalizeBindings,"
                                          "pass:EliminateCommonSubexpr,pass:FoldConstant"));

LOOM_PLUGIN_INIT(ctx) {
  using loom::transform::PassRegistry;
  PassRegistry::register_pass(loom::passes::LegalizeOps());
  PassRegistry::register_pass(loom::passes::DeadCodeElimination());
  PassRegistry::register_pass(loom::passes::CanonicalizeBindings());
  PassRegistry::register_pass(loom::passes::EliminateCommonSubexpr());
  PassRegistry::register_pass(loom::passes::FoldConstant());
}
