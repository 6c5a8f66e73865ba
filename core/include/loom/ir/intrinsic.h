// Deprecated forwarding header: loom/ir/intrinsic.h moved to loom/tir/intrinsic.h in
// Loom 0.2.0 (tir::IntrinsicRegistry).  It goes in 0.3.0; include the new header
// (docs/plugins.md, "Migrating plugins").
#ifndef LOOM_IR_INTRINSIC_H_FORWARDING_
#define LOOM_IR_INTRINSIC_H_FORWARDING_

#if !defined(LOOM_NO_DEPRECATED_HEADER_WARNINGS)
#warning \
    "loom/ir/intrinsic.h is deprecated: include loom/tir/intrinsic.h (moved in Loom 0.2.0; docs/plugins.md, Migrating plugins)"
#endif

#include "loom/tir/intrinsic.h"

#endif  // LOOM_IR_INTRINSIC_H_FORWARDING_
