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

std::string codegen_of(const ir::BaseFunc& f) {
  const auto* g = f.as<FunctionNode>();
  if (!g || !g->attrs.defined() || !g->attrs.contains("codegen")) return "";
  return g->attrs.at("codegen").as_string();
}
}  // namespace loom::graph
