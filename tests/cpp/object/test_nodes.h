// Node types used by the object tests: a small expression language with a
// binding kind (TVar), so that reflection, printing and structural equality
// are exercised on a realistic shape.
#ifndef LOOM_TESTS_CPP_OBJECT_TEST_NODES_H_
#define LOOM_TESTS_CPP_OBJECT_TEST_NODES_H_

#include "loom/object/containers.h"
#include "loom/object/reflection.h"

namespace loom::test {

class TExprNode : public Object {
 public:
  DataType dtype = DataType::Int(32);
  LOOM_OBJECT(TExprNode, Object, "test.Expr");
  static void reflect(ReflectionBuilder<TExprNode>& r) { r.field("dtype", &TExprNode::dtype); }
};

class TExpr : public ObjectRef {
 public:
  LOOM_OBJECT_REF(TExpr, ObjectRef, TExprNode)
};

class TIntNode : public TExprNode {
 public:
  int64_t value = 0;
  LOOM_OBJECT(TIntNode, TExprNode, "test.Int");
  static void reflect(ReflectionBuilder<TIntNode>& r) { r.field("value", &TIntNode::value, "the constant"); }
};

class TVarNode : public TExprNode {
 public:
  std::string name;
  LOOM_OBJECT(TVarNode, TExprNode, "test.Var");
  static void reflect(ReflectionBuilder<TVarNode>& r) {
    r.field("name", &TVarNode::name, "name hint", kStructuralIgnore).structural(StructuralKind::kBinding);
  }
};

class TAddNode : public TExprNode {
 public:
  TExpr a, b;
  LOOM_OBJECT(TAddNode, TExprNode, "test.Add");
  static void reflect(ReflectionBuilder<TAddNode>& r) { r.field("a", &TAddNode::a).field("b", &TAddNode::b); }
};

// let var = value in body
class TLetNode : public TExprNode {
 public:
  TExpr var, value, body;
  LOOM_OBJECT(TLetNode, TExprNode, "test.Let");
  static void reflect(ReflectionBuilder<TLetNode>& r) {
    r.field("var", &TLetNode::var).field("value", &TLetNode::value).field("body", &TLetNode::body);
  }
};

inline TExpr Int(int64_t v) {
  auto n = make_object<TIntNode>();
  n->value = v;
  return TExpr(n);
}
inline TExpr Var(std::string name) {
  auto n = make_object<TVarNode>();
  n->name = std::move(name);
  return TExpr(n);
}
inline TExpr Add(TExpr a, TExpr b) {
  auto n = make_object<TAddNode>();
  n->a = std::move(a);
  n->b = std::move(b);
  return TExpr(n);
}
inline TExpr Let(TExpr var, TExpr value, TExpr body) {
  auto n = make_object<TLetNode>();
  n->var = std::move(var);
  n->value = std::move(value);
  n->body = std::move(body);
  return TExpr(n);
}

}  // namespace loom::test

#endif
