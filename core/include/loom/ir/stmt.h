// Deprecated forwarding header: loom/ir/stmt.h moved to loom/tir/stmt.h in
// Loom 0.2.0 (the prim-IR statements).  It goes in 0.3.0; include the new header
// (docs/plugins.md, "Migrating plugins").
#ifndef LOOM_IR_STMT_H_FORWARDING_
#define LOOM_IR_STMT_H_FORWARDING_

#if !defined(LOOM_NO_DEPRECATED_HEADER_WARNINGS)
#warning \
    "loom/ir/stmt.h is deprecated: include loom/tir/stmt.h (moved in Loom 0.2.0; docs/plugins.md, Migrating plugins)"
#endif

#include "loom/tir/stmt.h"

#endif  // LOOM_IR_STMT_H_FORWARDING_
