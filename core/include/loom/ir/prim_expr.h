// Deprecated forwarding header: loom/ir/prim_expr.h moved to loom/tir/expr.h in
// Loom 0.2.0 (the prim-IR expressions, namespace loom::tir as before).  It goes in 0.3.0; include the new header
// (docs/plugins.md, "Migrating plugins").
#ifndef LOOM_IR_PRIM_EXPR_H_FORWARDING_
#define LOOM_IR_PRIM_EXPR_H_FORWARDING_

#if !defined(LOOM_NO_DEPRECATED_HEADER_WARNINGS)
#warning \
    "loom/ir/prim_expr.h is deprecated: include loom/tir/expr.h (moved in Loom 0.2.0; docs/plugins.md, Migrating plugins)"
#endif

#include "loom/tir/expr.h"

#endif  // LOOM_IR_PRIM_EXPR_H_FORWARDING_
