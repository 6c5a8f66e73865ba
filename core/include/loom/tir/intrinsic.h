// The intrinsic registry (docs/passes.md, "LowerIntrinsics"): the named
// scalar functions a prim function may call (`call(float32, "exp", x)`).
// Each has an arity and, unless it is primitive, an expansion into simpler
// prim IR (arithmetic and other intrinsics).  A target kind declares the
// intrinsics its codegen implements directly (its native_intrinsics trait,
// loom/target/target.h); LowerIntrinsics expands the others.  The core registers the standard set; plugins may add more
// (a miss asks for the capability "intrinsic:NAME").
#ifndef LOOM_TIR_INTRINSIC_H_
#define LOOM_TIR_INTRINSIC_H_

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loom/tir/expr.h"

namespace loom::tir {

struct IntrinsicEntry {
  std::string name;
  int num_args = 1;        // -1: any number (the core's tir.launch)
  bool float_only = true;  // the arguments are floats (and the result, but for isnan and isinf: bool)
  std::string doc;
  // The call rewritten into simpler prim IR (the same dtype, scalar or
  // vector); empty for a primitive that every target must implement.
  std::function<PrimExpr(const CallNode&)> expand;
  std::string owner;
};

class IntrinsicRegistry {
 public:
  static void register_intrinsic(IntrinsicEntry entry, bool allow_override = false);
  static std::optional<IntrinsicEntry> entry(const std::string& name);  // no loading
  static IntrinsicEntry get(const std::string& name);                   // lazy; LookupError with a suggestion
  static std::vector<std::string> list();
};

// Whether dot2_i16 takes an argument of dtype `t` (any lanes): an integer
// of at most 16 bits, not uint16 (int16 cannot hold it).  PairProducts,
// the graph passes that prepare its operands and the codegens ask this.
bool dot2_i16_operand(DataType t);

}  // namespace loom::tir

#endif  // LOOM_TIR_INTRINSIC_H_
