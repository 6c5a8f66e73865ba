// FoldConstant: operator calls whose arguments are all constants (literals,
// or variables bound to them) are evaluated at compile time with the
// reference interpreter and replaced by their value (docs/passes.md).
#ifndef LOOM_PLUGINS_PASSES_FOLD_CONSTANT_H_
#define LOOM_PLUGINS_PASSES_FOLD_CONSTANT_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass FoldConstant();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_FOLD_CONSTANT_H_
