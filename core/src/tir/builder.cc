// Building prim IR (loom/tir/builder.h).
#include "loom/tir/builder.h"

namespace loom::tir {

Stmt no_op() { return Evaluate(PrimExpr(0)); }
bool is_no_op(const Stmt& s) {
  const auto* e = s.as<EvaluateNode>();
  return e && e->value.as<IntImmNode>();
}

Stmt seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (const Stmt& s : stmts) {
    if (const auto* q = s.as<SeqStmtNode>()) {
      for (const Any& x : q->seq) {
        Stmt inner = x.cast<Stmt>();
        if (!is_no_op(inner)) flat.push_back(inner);
      }
    } else if (!is_no_op(s)) {
      flat.push_back(s);
    }
  }
  if (flat.empty()) return no_op();
  if (flat.size() == 1) return flat[0];
  return SeqStmt(flat);
}

}  // namespace loom::tir
