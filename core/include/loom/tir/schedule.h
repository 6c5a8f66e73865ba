// Deprecated forwarding header: loom/tir/schedule.h moved to loom/schedule/schedule.h in
// Loom 0.2.0 (tir::Schedule).  It goes in 0.3.0; include the new header
// (docs/plugins.md, "Migrating plugins").
#ifndef LOOM_TIR_SCHEDULE_H_FORWARDING_
#define LOOM_TIR_SCHEDULE_H_FORWARDING_

#if !defined(LOOM_NO_DEPRECATED_HEADER_WARNINGS)
#warning \
    "loom/tir/schedule.h is deprecated: include loom/schedule/schedule.h (moved in Loom 0.2.0; docs/plugins.md, Migrating plugins)"
#endif

#include "loom/schedule/schedule.h"

#endif  // LOOM_TIR_SCHEDULE_H_FORWARDING_
