// Walking and rewriting prim IR: rebuilding a node with new children,
// substitution of variables, fresh copies of bound variables, and queries
// over a subtree.  The loop passes, the schedule, FuseTIR and codegens
// share these instead of writing their own child walks.
#ifndef LOOM_TIR_FUNCTOR_H_
#define LOOM_TIR_FUNCTOR_H_

#include <functional>
#include <unordered_map>

#include "loom/tir/stmt.h"

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

// Whether `s` contains a loop.
bool has_loop(const Stmt& s);

// Whether `node` mentions variable `v`.
bool uses_var(const Any& node, const VarNode* v);

}  // namespace loom::tir

#endif  // LOOM_TIR_FUNCTOR_H_
