// Constructors of the graph IR's expressions.
#include "loom/graph/expr.h"

namespace loom::graph {
LOOM_REGISTER_OBJECT(VarNode);
LOOM_REGISTER_OBJECT(ConstantNode);
LOOM_REGISTER_OBJECT(CallNode);
LOOM_REGISTER_OBJECT(TupleNode);
LOOM_REGISTER_OBJECT(TupleGetItemNode);
LOOM_REGISTER_OBJECT(LetNode);
LOOM_REGISTER_OBJECT(IfNode);

Var::Var(std::string name, Type annotation) {
  auto node = make_object<VarNode>();
  node->name = std::move(name);
  node->annotation = std::move(annotation);
  data_ = node;
}

Constant::Constant(runtime::NDArray data) {
  if (!data.defined()) LOOM_THROW(Error) << "graph.Constant needs data";
  auto node = make_object<ConstantNode>();
  node->data = std::move(data);
  data_ = node;
}

Call::Call(Expr callee, std::vector<Expr> args, Map attrs, std::vector<Type> type_args) {
  auto node = make_object<CallNode>();
  node->callee = std::move(callee);
  node->args = ir::to_array(args);
  node->attrs = std::move(attrs);
  node->type_args = ir::to_array(type_args);
  data_ = node;
}

Tuple::Tuple(std::vector<Expr> fields) {
  auto node = make_object<TupleNode>();
  node->fields = ir::to_array(fields);
  data_ = node;
}

TupleGetItem::TupleGetItem(Expr tuple, int64_t index) {
  if (index < 0) LOOM_THROW(Error) << "graph.TupleGetItem: negative index " << index;
  auto node = make_object<TupleGetItemNode>();
  node->tuple = std::move(tuple);
  node->index = index;
  data_ = node;
}

Let::Let(Var var, Expr value, Expr body) {
  auto node = make_object<LetNode>();
  node->var = std::move(var);
  node->value = std::move(value);
  node->body = std::move(body);
  data_ = node;
}

If::If(Expr cond, Expr then_branch, Expr else_branch) {
  auto node = make_object<IfNode>();
  node->cond = std::move(cond);
  node->then_branch = std::move(then_branch);
  node->else_branch = std::move(else_branch);
  data_ = node;
}
}  // namespace loom::graph
