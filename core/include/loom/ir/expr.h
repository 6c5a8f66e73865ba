// The base of graph expressions, and the two expressions every variant
// refers to: GlobalVar (a function of the module) and Op (an operator of
// the registry).  The graph IR's own expressions are in loom/graph/expr.h.
#ifndef LOOM_IR_EXPR_H_
#define LOOM_IR_EXPR_H_

#include <string>
#include <vector>

#include "loom/ir/type.h"

namespace loom::ir {

// Base of graph expressions.  checked_type is filled by type inference and
// ignored by structural equality.
class ExprNode : public Object {
 public:
  Type checked_type;
  LOOM_ABSTRACT_OBJECT(ExprNode, Object, "ir.Expr");
  static void reflect(ReflectionBuilder<ExprNode>& r) {
    r.field("checked_type", &ExprNode::checked_type, "set by type inference", kStructuralIgnore | kOptional | kDerived);
  }
};
class Expr : public ObjectRef {
 public:
  LOOM_OBJECT_REF(Expr, ObjectRef, ExprNode)
};

// A reference to a function of the module, by name.
class GlobalVarNode : public ExprNode {
 public:
  std::string name;
  LOOM_OBJECT(GlobalVarNode, ExprNode, "ir.GlobalVar");
  static void reflect(ReflectionBuilder<GlobalVarNode>& r) { r.field("name", &GlobalVarNode::name); }
};
class GlobalVar : public Expr {
 public:
  LOOM_OBJECT_REF(GlobalVar, Expr, GlobalVarNode)
  explicit GlobalVar(std::string name);
  const std::string& name() const { return get()->name; }
};

// A reference to an operator of the registry (loom/ir/op.h), by name.
class OpNode : public ExprNode {
 public:
  std::string name;
  LOOM_OBJECT(OpNode, ExprNode, "ir.Op");
  static void reflect(ReflectionBuilder<OpNode>& r) { r.field("name", &OpNode::name); }
};
class Op : public Expr {
 public:
  LOOM_OBJECT_REF(Op, Expr, OpNode)
  // The operator named `name`; throws LookupError (with a suggestion) if no
  // operator of that name is registered or provided by a plugin.
  static Op get(const std::string& name);
  const std::string& name() const { return get()->name; }
};

}  // namespace loom::ir

#endif  // LOOM_IR_EXPR_H_
