// ConvertLayout: channels-first (NCHW) models to channels-last (NHWC),
// driven by the operators' attribute schemas (docs/passes.md).
#ifndef LOOM_PLUGINS_PASSES_CONVERT_LAYOUT_H_
#define LOOM_PLUGINS_PASSES_CONVERT_LAYOUT_H_

#include "loom/transform/pass.h"

namespace loom::passes {

transform::Pass ConvertLayout();

}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_CONVERT_LAYOUT_H_
