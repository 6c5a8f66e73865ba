// Walking and rewriting prim IR: rebuilding a node with new children,
// substitution of variables, fresh copies of bound variables, and queries
// over a subtree.  The loop passes, the schedule, FuseTIR and codegens
// share these instead of writing their own child walks.
#ifndef LOOM_TIR_FUNCTOR_H_
#define LOOM_TIR_FUNCTOR_H_

#include <functional>
#include <optional>
#include <unordered_map>

#include "loom/tir/function.h"

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

// A rewrite of a prim IR tree, parents first.  At each node a `pre`
// callback may return a replacement, whose subtree is then not visited;
// otherwise the node's children are rewritten (the node rebuilt through
// map_children only when one changed) and the `post` callback, when set,
// maps the result.  Without an expression callback expressions are left
// as they are (not walked).  Every loop pass rewrites through this.
//
//   Stmt out = Rewriter().post_stmt([](const Stmt& s) { ... }).run(body);
class Rewriter {
 public:
  using PreStmt = std::function<std::optional<Stmt>(const Stmt&)>;
  using PreExpr = std::function<std::optional<PrimExpr>(const PrimExpr&)>;
  Rewriter& pre_stmt(PreStmt f) {
    pre_stmt_ = std::move(f);
    return *this;
  }
  Rewriter& post_stmt(StmtFn f) {
    post_stmt_ = std::move(f);
    return *this;
  }
  Rewriter& pre_expr(PreExpr f) {
    pre_expr_ = std::move(f);
    return *this;
  }
  Rewriter& post_expr(ExprFn f) {
    post_expr_ = std::move(f);
    return *this;
  }
  Stmt run(const Stmt& s) const;
  PrimExpr run(const PrimExpr& e) const;

 private:
  PreStmt pre_stmt_;
  StmtFn post_stmt_;
  PreExpr pre_expr_;
  ExprFn post_expr_;
};

// Visits the statements of `s` (and, with `on_expr`, the expressions of
// each statement), parents first; a callback returning false skips the
// node's children.
void pre_order(const Stmt& s, const std::function<bool(const Stmt&)>& on_stmt,
               const std::function<bool(const PrimExpr&)>& on_expr = nullptr);

// Variables replaced by expressions (by identity), everywhere below.
PrimExpr substitute(const PrimExpr& e, const std::unordered_map<const Object*, PrimExpr>& with);
Stmt substitute(const Stmt& s, const std::unordered_map<const Object*, PrimExpr>& with);

// A copy of `s` in which every variable bound inside it (loop and let
// variables, allocated buffers and their data variables) is a fresh
// object, so the copy can sit beside the original (a variable is bound
// once per function).  Free variables are kept.  `rename`, when given,
// names each fresh variable from the old name (else the name is kept).
Stmt fresh_bindings(const Stmt& s, const std::function<std::string(const std::string&)>& rename = nullptr);

// A copy of `f` in which every variable (parameters, the buffers' data
// variables, loop and let variables) is a fresh object, so the same
// function can be inlined twice into one function.
PrimFunc fresh_copy(const PrimFunc& f);

// Whether `s` contains a loop.
bool has_loop(const Stmt& s);

// Whether `node` mentions variable `v`.
bool uses_var(const Any& node, const VarNode* v);

// Whether `e` reads memory (a BufferLoad): a select's condition that does
// not is a guard on loop variables (a padded input read in place).
bool reads_memory(const PrimExpr& e);

}  // namespace loom::tir

#endif  // LOOM_TIR_FUNCTOR_H_
