// The three function variants (see docs/ir.md): graph.Function,
// tir.PrimFunc and ir.ExternFunc, all ir.BaseFunc.
#ifndef LOOM_IR_FUNCTION_H_
#define LOOM_IR_FUNCTION_H_

#include <string>
#include <vector>

#include "loom/ir/expr.h"
#include "loom/ir/stmt.h"

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

namespace loom::graph {

class FunctionNode : public ir::BaseFuncNode {
 public:
  Array params;  // of graph.Var
  Expr body;
  Type ret_type;  // may be none until type inference
  LOOM_OBJECT(FunctionNode, ir::BaseFuncNode, "graph.Function");
  static void reflect(ReflectionBuilder<FunctionNode>& r) {
    r.field("params", &FunctionNode::params).field("body", &FunctionNode::body).field("ret_type", &FunctionNode::ret_type, "none until inferred", kOptional);
  }
};
class Function : public ir::BaseFunc {
 public:
  LOOM_OBJECT_REF(Function, ir::BaseFunc, FunctionNode)
  Function(std::vector<Var> params, Expr body, Type ret_type = Type(), Map attrs = Map::empty());
};

}  // namespace loom::graph

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
    r.field("params", &PrimFuncNode::params).field("body", &PrimFuncNode::body).field("ret", &PrimFuncNode::ret, "none: no result", kOptional);
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

#endif  // LOOM_IR_FUNCTION_H_
