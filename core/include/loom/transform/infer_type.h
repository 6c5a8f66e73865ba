// InferType: fills checked_type of every graph expression and missing
// result types (loom/graph/type_infer.h).  Requires nothing; leaves prim and
// extern functions untouched.  A type error fails the pass, listing every
// problem.
#ifndef LOOM_TRANSFORM_INFER_TYPE_H_
#define LOOM_TRANSFORM_INFER_TYPE_H_

#include "loom/transform/pass.h"

namespace loom::transform {

Pass InferType();

}  // namespace loom::transform

#endif  // LOOM_TRANSFORM_INFER_TYPE_H_
