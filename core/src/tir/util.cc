// Small prim IR utilities (loom/tir/util.h).
#include "loom/tir/util.h"

#include <map>

namespace loom::tir {

bool is_int(DataType t) { return t.code == DataType::kInt || t.code == DataType::kUInt; }

std::optional<int64_t> const_int(const PrimExpr& e) {
  if (const auto* i = e.as<IntImmNode>()) return i->value;
  return std::nullopt;
}

Stmt serial_with_note(const ForNode& loop, const std::string& key, const std::string& reason) {
  std::map<std::string, Any> notes = loop.annotations.get() ? loop.annotations->items : std::map<std::string, Any>{};
  notes[key] = Any(reason);
  return For(loop.loop_var, loop.min, loop.extent, ForKind::kSerial, loop.body, "", Map(notes));
}

std::vector<const ForNode*> perfect_nest(const ForNode* top) {
  std::vector<const ForNode*> nest{top};
  while (const auto* next = nest.back()->body.as<ForNode>()) nest.push_back(next);
  return nest;
}

tir::PrimFunc with_body(const tir::PrimFuncNode& f, const Stmt& body) {
  std::vector<Any> params(f.params.begin(), f.params.end());
  return tir::PrimFunc(params, body, f.ret, f.attrs);
}

}  // namespace loom::tir
