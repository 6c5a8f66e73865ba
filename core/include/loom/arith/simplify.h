// The arithmetic simplifier behind the Simplify pass (and used by the
// other loop passes and the schedule on what they build): integer constant
// folding, linear canonicalisation (x + 1 + 2 -> x + 3, x - x -> 0), and
// facts from bounds (comparisons decided, floordiv/floormod/min/max/select
// removed).  Float arithmetic is never rewritten.
#ifndef LOOM_ARITH_SIMPLIFY_H_
#define LOOM_ARITH_SIMPLIFY_H_

#include "loom/arith/analyzer.h"
#include "loom/tir/stmt.h"

namespace loom::arith {

tir::PrimExpr simplify(const tir::PrimExpr& e, const Analyzer& analyzer = Analyzer());
// Simplify over a statement: loops of extent 0 removed and of extent 1
// inlined, decided ifs replaced by their branch, sequences flattened.
tir::Stmt simplify(const tir::Stmt& s, Analyzer analyzer = Analyzer());

}  // namespace loom::arith

#endif  // LOOM_ARITH_SIMPLIFY_H_
