// Expressions of the graph IR (see docs/ir.md, "Graph IR"): variables,
// constants, calls, tuples, let-bindings and if.  Their base (ir::Expr) and
// GlobalVar/Op are in loom/ir/expr.h.
#ifndef LOOM_GRAPH_EXPR_H_
#define LOOM_GRAPH_EXPR_H_

#include <string>
#include <vector>

#include "loom/ir/expr.h"
#include "loom/runtime/ndarray.h"
#include "loom/tir/expr.h"

namespace loom::graph {

using ir::Expr;
using ir::ExprNode;
using ir::Type;

class VarNode : public ExprNode {
 public:
  std::string name;
  Type annotation;
  LOOM_OBJECT(VarNode, ExprNode, "graph.Var");
  static void reflect(ReflectionBuilder<VarNode>& r) {
    r.field("name", &VarNode::name, "name hint", kStructuralIgnore)
        .field("annotation", &VarNode::annotation, "declared type, may be none", kOptional)
        .structural(StructuralKind::kBinding);
  }
};
class Var : public Expr {
 public:
  LOOM_OBJECT_REF(Var, Expr, VarNode)
  Var(std::string name, Type annotation = Type());
  const std::string& name() const { return get()->name; }
};

class ConstantNode : public ExprNode {
 public:
  runtime::NDArray data;
  LOOM_OBJECT(ConstantNode, ExprNode, "graph.Constant");
  static void reflect(ReflectionBuilder<ConstantNode>& r) { r.field("data", &ConstantNode::data); }
};
class Constant : public Expr {
 public:
  LOOM_OBJECT_REF(Constant, Expr, ConstantNode)
  explicit Constant(runtime::NDArray data);
};

// callee(args...) with attributes; type_args carry explicit types (the
// output type of call_dps / call_packed).
class CallNode : public ExprNode {
 public:
  Expr callee;
  Array args;
  Map attrs;
  Array type_args;
  LOOM_OBJECT(CallNode, ExprNode, "graph.Call");
  static void reflect(ReflectionBuilder<CallNode>& r) {
    r.field("callee", &CallNode::callee)
        .field("args", &CallNode::args)
        .elements<Expr>()
        .field("attrs", &CallNode::attrs)
        .field("type_args", &CallNode::type_args)
        .elements<Type>();
  }
};
class Call : public Expr {
 public:
  LOOM_OBJECT_REF(Call, Expr, CallNode)
  Call(Expr callee, std::vector<Expr> args, Map attrs = Map::empty(), std::vector<Type> type_args = {});
};

class TupleNode : public ExprNode {
 public:
  Array fields;
  LOOM_OBJECT(TupleNode, ExprNode, "graph.Tuple");
  static void reflect(ReflectionBuilder<TupleNode>& r) { r.field("fields", &TupleNode::fields).elements<Expr>(); }
};
class Tuple : public Expr {
 public:
  LOOM_OBJECT_REF(Tuple, Expr, TupleNode)
  explicit Tuple(std::vector<Expr> fields);
};

class TupleGetItemNode : public ExprNode {
 public:
  Expr tuple;
  int64_t index = 0;
  LOOM_OBJECT(TupleGetItemNode, ExprNode, "graph.TupleGetItem");
  static void reflect(ReflectionBuilder<TupleGetItemNode>& r) {
    r.field("tuple", &TupleGetItemNode::tuple).field("index", &TupleGetItemNode::index);
  }
};
class TupleGetItem : public Expr {
 public:
  LOOM_OBJECT_REF(TupleGetItem, Expr, TupleGetItemNode)
  TupleGetItem(Expr tuple, int64_t index);
};

class LetNode : public ExprNode {
 public:
  Var var;
  Expr value, body;
  LOOM_OBJECT(LetNode, ExprNode, "graph.Let");
  static void reflect(ReflectionBuilder<LetNode>& r) {
    r.field("var", &LetNode::var).field("value", &LetNode::value).field("body", &LetNode::body);
  }
};
class Let : public Expr {
 public:
  LOOM_OBJECT_REF(Let, Expr, LetNode)
  Let(Var var, Expr value, Expr body);
};

class IfNode : public ExprNode {
 public:
  Expr cond, then_branch, else_branch;
  LOOM_OBJECT(IfNode, ExprNode, "graph.If");
  static void reflect(ReflectionBuilder<IfNode>& r) {
    r.field("cond", &IfNode::cond)
        .field("then_branch", &IfNode::then_branch)
        .field("else_branch", &IfNode::else_branch);
  }
};
class If : public Expr {
 public:
  LOOM_OBJECT_REF(If, Expr, IfNode)
  If(Expr cond, Expr then_branch, Expr else_branch);
};

}  // namespace loom::graph

#endif  // LOOM_GRAPH_EXPR_H_
