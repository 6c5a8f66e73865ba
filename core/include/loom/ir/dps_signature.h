// Deprecated forwarding header: loom/ir/dps_signature.h moved to loom/tir/dps_signature.h in
// Loom 0.2.0 (read_dps_signature, now in loom::tir).  It goes in 0.3.0; include the new header
// (docs/plugins.md, "Migrating plugins").
#ifndef LOOM_IR_DPS_SIGNATURE_H_FORWARDING_
#define LOOM_IR_DPS_SIGNATURE_H_FORWARDING_

#if !defined(LOOM_NO_DEPRECATED_HEADER_WARNINGS)
#warning \
    "loom/ir/dps_signature.h is deprecated: include loom/tir/dps_signature.h (moved in Loom 0.2.0; docs/plugins.md, Migrating plugins)"
#endif

#include "loom/tir/dps_signature.h"

// The old name, for one minor version.
namespace loom::ir {
using tir::read_dps_signature;
}  // namespace loom::ir

#endif  // LOOM_IR_DPS_SIGNATURE_H_FORWARDING_
