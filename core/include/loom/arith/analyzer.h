// Integer bounds of prim expressions (docs/ir.md, "Arithmetic"): the
// analyzer the simplifier, the loop passes and the schedule ask whether a
// condition holds for every value of the loops around it.
#ifndef LOOM_ARITH_ANALYZER_H_
#define LOOM_ARITH_ANALYZER_H_

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "loom/tir/stmt.h"

namespace loom::arith {

// Inclusive integer bounds; nullopt = unbounded on that side.
struct Bound {
  std::optional<int64_t> lo, hi;
  static Bound exact(int64_t v) { return {v, v}; }
  bool known() const { return lo && hi; }
};

// Integer bounds of expressions under the ranges of the variables in
// scope (loop variables, let-bound values).  Arithmetic on the bounds is
// checked: an overflow gives "unbounded", never a wrong bound.
class Analyzer {
 public:
  void bind(const tir::VarNode* v, Bound b) { ranges_[v] = b; }
  void unbind(const tir::VarNode* v) { ranges_.erase(v); }
  // The range of a loop `for v from min extent e` (when both are bounded).
  void bind_loop(const tir::ForNode& loop);

  Bound bound(const tir::PrimExpr& e) const;
  // Whether the bool expression holds / fails for every value in scope.
  bool prove(const tir::PrimExpr& cond) const;
  bool disprove(const tir::PrimExpr& cond) const;

 private:
  std::unordered_map<const tir::VarNode*, Bound> ranges_;
};

}  // namespace loom::arith

#endif  // LOOM_ARITH_ANALYZER_H_
