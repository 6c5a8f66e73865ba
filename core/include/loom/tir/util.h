// Prim IR utilities shared by the loop passes, the schedule and codegens:
// rebuilding prim nodes with new children, substitution, fresh copies, an
// integer bound analyzer and the simplifier.
#ifndef LOOM_TIR_UTIL_H_
#define LOOM_TIR_UTIL_H_

#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "loom/ir/function.h"
#include "loom/ir/stmt.h"
#include "loom/transform/pass.h"

namespace loom::tir {

using ExprFn = std::function<PrimExpr(const PrimExpr&)>;
using StmtFn = std::function<Stmt(const Stmt&)>;

// `e` with each direct child expression replaced by f(child), rebuilt
// through the constructors (so dtypes follow the children: a vector child
// makes a vector node) only when one changed.  Buffers are kept.
PrimExpr map_children(const PrimExpr& e, const ExprFn& f);

// `s` with each direct child expression replaced by fe(child) and each
// child statement by fs(child), rebuilt only when one changed.
Stmt map_children(const Stmt& s, const ExprFn& fe, const StmtFn& fs);

// Variables replaced by expressions (by identity), everywhere below.
PrimExpr substitute(const PrimExpr& e, const std::unordered_map<const Object*, PrimExpr>& with);
Stmt substitute(const Stmt& s, const std::unordered_map<const Object*, PrimExpr>& with);

// A copy of `s` in which every variable bound inside it (loop and let
// variables, allocated buffers and their data variables) is a fresh
// object, so the copy can sit beside the original (a variable is bound
// once per function).  Free variables are kept.
Stmt fresh_bindings(const Stmt& s);

// `loop` as a serial loop whose annotations say why a pass left it:
// `key: "reason"` (VectorizeLoop's and UnrollLoop's refusals).
Stmt serial_with_note(const tir::ForNode& loop, const std::string& key, const std::string& reason);

// The perfect nest from `top` down: `top`, then each loop that is the
// whole body of the one before.
std::vector<const tir::ForNode*> perfect_nest(const tir::ForNode* top);

// Whether `s` contains a loop.
bool has_loop(const Stmt& s);

// Whether `e` mentions variable `v`.
bool uses_var(const Any& node, const tir::VarNode* v);

// The statement that does nothing (`evaluate(0)`), and the test for it.
Stmt no_op();
bool is_no_op(const Stmt& s);

// A sequence: nested sequences flattened, no-ops dropped, one statement
// as itself, none as no_op().
Stmt seq(std::vector<Stmt> stmts);

std::optional<int64_t> const_int(const PrimExpr& e);
bool is_int(DataType t);

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

  Bound bound(const PrimExpr& e) const;
  // Whether the bool expression holds / fails for every value in scope.
  bool prove(const PrimExpr& cond) const;
  bool disprove(const PrimExpr& cond) const;

 private:
  std::unordered_map<const tir::VarNode*, Bound> ranges_;
};

// The arithmetic simplifier behind Simplify (and used by the other loop
// passes on what they build): integer constant folding, linear
// canonicalisation (x + 1 + 2 -> x + 3, x - x -> 0), and facts from
// bounds (comparisons decided, floordiv/floormod/min/max/select removed).
PrimExpr simplify(const PrimExpr& e, const Analyzer& analyzer = Analyzer());
// Simplify over a statement: loops of extent 0 removed and of extent 1
// inlined, decided ifs replaced by their branch, sequences flattened.
Stmt simplify(const Stmt& s, Analyzer analyzer = Analyzer());

// A prim function with a new body (parameters, result and attributes kept).
tir::PrimFunc with_body(const tir::PrimFuncNode& f, const Stmt& body);

// A pass over every prim function of a module: `body_of(f, module, ctx)`
// returns the function's new body (the same object when unchanged).  An
// Error from it is re-thrown prefixed with "@name: ".
using PrimBodyFn = std::function<Stmt(const tir::PrimFuncNode&, const ir::IRModule&, const transform::PassContext&)>;
transform::Pass prim_pass(transform::PassInfo info, PrimBodyFn body_of);

}  // namespace loom::tir

#endif  // LOOM_TIR_UTIL_H_
