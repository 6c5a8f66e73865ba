#include "loom/tir/function.h"

namespace loom::tir {
LOOM_REGISTER_OBJECT(PrimFuncNode);

PrimFunc::PrimFunc(std::vector<Any> params, Stmt body, ir::Type ret, Map attrs) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Object* p = params[i].object();
    if (!p || !(p->is_instance<VarNode>() || p->is_instance<BufferNode>())) {
      LOOM_THROW(TypeError) << "tir.PrimFunc: parameter " << i << " must be a tir.Var or a tir.Buffer, got "
                            << params[i].describe();
    }
  }
  auto node = make_object<PrimFuncNode>();
  node->params = Array(std::move(params));
  node->body = std::move(body);
  node->ret = std::move(ret);
  node->attrs = std::move(attrs);
  data_ = node;
}

std::vector<Buffer> PrimFunc::buffer_params() const {
  std::vector<Buffer> out;
  for (const Any& p : get()->params)
    if (p.object()->is_instance<BufferNode>()) out.push_back(p.cast<Buffer>());
  return out;
}
}  // namespace loom::tir
