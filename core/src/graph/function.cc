#include "loom/graph/function.h"

namespace loom::graph {
LOOM_REGISTER_OBJECT(FunctionNode);

Function::Function(std::vector<Var> params, Expr body, Type ret_type, Map attrs) {
  auto node = make_object<FunctionNode>();
  node->params = ir::to_array(params);
  node->body = std::move(body);
  node->ret_type = std::move(ret_type);
  node->attrs = std::move(attrs);
  data_ = node;
}
}  // namespace loom::graph
