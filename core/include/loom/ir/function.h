// The base of the three function variants (see docs/ir.md), and the
// extern function: an opaque body of a registered kind.  The other two
// variants are graph::Function (loom/graph/function.h) and tir::PrimFunc
// (loom/tir/function.h).
#ifndef LOOM_IR_FUNCTION_H_
#define LOOM_IR_FUNCTION_H_

#include <string>
#include <vector>

#include "loom/ir/type.h"

namespace loom::ir {

class BaseFuncNode : public Object {
 public:
  Map attrs;
  LOOM_ABSTRACT_OBJECT(BaseFuncNode, Object, "ir.BaseFunc");
  static void reflect(ReflectionBuilder<BaseFuncNode>& r) { r.field("attrs", &BaseFuncNode::attrs); }
};
class BaseFunc : public ObjectRef {
 public:
  LOOM_OBJECT_REF(BaseFunc, ObjectRef, BaseFuncNode)
};

// An opaque body of a registered extern kind (asm, torchscript, ...).
// convention: "dps" (outputs are trailing parameters of the signature) or
// "packed".  encoding: "text", or "base64" for binary payloads.
class ExternFuncNode : public BaseFuncNode {
 public:
  std::string kind;
  std::string payload;
  std::string encoding = "text";
  FuncType signature;
  std::string convention = "dps";
  LOOM_OBJECT(ExternFuncNode, BaseFuncNode, "ir.ExternFunc");
  static void reflect(ReflectionBuilder<ExternFuncNode>& r) {
    r.field("kind", &ExternFuncNode::kind)
        .field("payload", &ExternFuncNode::payload)
        .field("encoding", &ExternFuncNode::encoding)
        .field("signature", &ExternFuncNode::signature)
        .field("convention", &ExternFuncNode::convention);
  }
};
class ExternFunc : public BaseFunc {
 public:
  LOOM_OBJECT_REF(ExternFunc, BaseFunc, ExternFuncNode)
  ExternFunc(std::string kind, std::string payload, FuncType signature, std::string convention = "dps",
             Map attrs = Map::empty());
};

}  // namespace loom::ir

#endif  // LOOM_IR_FUNCTION_H_
