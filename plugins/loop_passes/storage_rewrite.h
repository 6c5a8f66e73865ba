// StorageRewrite: temporary buffers whose lifetimes do not overlap share memory (docs/passes.md).
#ifndef LOOM_PLUGINS_LOOP_PASSES_STORAGE_REWRITE_H_
#define LOOM_PLUGINS_LOOP_PASSES_STORAGE_REWRITE_H_

#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass StorageRewrite();

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_STORAGE_REWRITE_H_
