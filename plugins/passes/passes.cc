// The graph pass library: passes over graph functions, registered by name
// so a YAML pipeline, the CLI and Python can name them (docs/passes.md).
// One pass per file pair.
#include <loom/plugin_sdk.h>

#include "legalize_ops.h"

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("passes") LOOM_PLUGIN_VERSION("0.1.0")
                     LOOM_PLUGIN_DESCRIPTION("Graph passes: lowering of operators")
                     LOOM_PLUGIN_PROVIDES("pass:LegalizeOps"));

LOOM_PLUGIN_INIT(ctx) { loom::transform::PassRegistry::register_pass(loom::passes::LegalizeOps()); }
