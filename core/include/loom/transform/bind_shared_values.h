// BindSharedValues: binds every graph value used in more than one place by
// a let (loom/graph/shared.h), so passes that rebuild expressions compute it
// once.  Establishes shared_values_bound; preserves every property.  The
// pass manager runs it by itself before a pass that needs the property.
#ifndef LOOM_TRANSFORM_BIND_SHARED_VALUES_H_
#define LOOM_TRANSFORM_BIND_SHARED_VALUES_H_

#include "loom/transform/pass.h"

namespace loom::transform {

Pass BindSharedValues();

}  // namespace loom::transform

#endif  // LOOM_TRANSFORM_BIND_SHARED_VALUES_H_
