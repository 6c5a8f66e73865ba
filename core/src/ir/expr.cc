#include "loom/ir/expr.h"

namespace loom::ir {
LOOM_REGISTER_OBJECT(GlobalVarNode);
LOOM_REGISTER_OBJECT(OpNode);

GlobalVar::GlobalVar(std::string name) {
  auto node = make_object<GlobalVarNode>();
  node->name = std::move(name);
  data_ = node;
}
}  // namespace loom::ir
