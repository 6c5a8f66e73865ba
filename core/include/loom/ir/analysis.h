// Deprecated forwarding header: loom/ir/analysis.h moved to loom/ir/diagnostic.h, loom/graph/well_formed.h,
// loom/graph/type_infer.h in Loom 0.2.0 (ir::Diagnostic stays in loom::ir; well_formed, check_module, infer_types and
// infer_expr_type are in loom::graph).  It goes in 0.3.0; include the new header (docs/plugins.md, "Migrating
// plugins").
#ifndef LOOM_IR_ANALYSIS_H_FORWARDING_
#define LOOM_IR_ANALYSIS_H_FORWARDING_

#if !defined(LOOM_NO_DEPRECATED_HEADER_WARNINGS)
#warning \
    "loom/ir/analysis.h is deprecated: include loom/ir/diagnostic.h, loom/graph/well_formed.h, loom/graph/type_infer.h (moved in Loom 0.2.0; docs/plugins.md, Migrating plugins)"
#endif

#include "loom/ir/diagnostic.h"
#include "loom/graph/well_formed.h"
#include "loom/graph/type_infer.h"

// The old names, for one minor version.
namespace loom::ir {
using graph::check_module;
using graph::infer_expr_type;
using graph::infer_types;
using graph::well_formed;
}  // namespace loom::ir

#endif  // LOOM_IR_ANALYSIS_H_FORWARDING_
