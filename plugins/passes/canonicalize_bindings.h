// CanonicalizeBindings: a binding of one variable to another is replaced
// by the variable itself, and an item of a tuple bound by its literal by
// that field (docs/passes.md).
#ifndef LOOM_PLUGINS_PASSES_CANONICALIZE_BINDINGS_H_
#define LOOM_PLUGINS_PASSES_CANONICALIZE_BINDINGS_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass CanonicalizeBindings();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_CANONICALIZE_BINDINGS_H_
