// Prim functions (see docs/ir.md, "Prim IR"): scalar and buffer
// parameters, a statement body and an optional scalar result.
#ifndef LOOM_TIR_FUNCTION_H_
#define LOOM_TIR_FUNCTION_H_

#include <vector>

#include "loom/ir/function.h"
#include "loom/tir/stmt.h"

namespace loom::tir {

// params: each a scalar tir.Var or a tir.Buffer (which carries its data
// var); ret: a PrimType, or none for no result.
class PrimFuncNode : public ir::BaseFuncNode {
 public:
  Array params;
  Stmt body;
  ir::Type ret;
  LOOM_OBJECT(PrimFuncNode, ir::BaseFuncNode, "tir.PrimFunc");
  static void reflect(ReflectionBuilder<PrimFuncNode>& r) {
    r.field("params", &PrimFuncNode::params)
        .elements({"tir.Var", "tir.Buffer"})
        .field("body", &PrimFuncNode::body)
        .field("ret", &PrimFuncNode::ret, "none: no result", kOptional);
  }
};
class PrimFunc : public ir::BaseFunc {
 public:
  LOOM_OBJECT_REF(PrimFunc, ir::BaseFunc, PrimFuncNode)
  PrimFunc(std::vector<Any> params, Stmt body, ir::Type ret = ir::Type(), Map attrs = Map::empty());
  // The buffer parameters, in order.
  std::vector<Buffer> buffer_params() const;
};

}  // namespace loom::tir

#endif  // LOOM_TIR_FUNCTION_H_
