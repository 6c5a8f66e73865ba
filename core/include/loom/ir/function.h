// The base of the three function variants (see docs/ir.md), and the
// extern function: an opaque body of a registered kind.  The other two
// variants are graph::Function (loom/graph/function.h) and tir::PrimFunc
// (loom/tir/function.h).
#ifndef LOOM_IR_FUNCTION_H_
#define LOOM_IR_FUNCTION_H_

#include <cstddef>
#include <memory>
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

// Where the text parser read an extern function's payload (the string
// literal after `payload`), so that a kind's diagnostics at a line and
// column of the payload can name the place in the .loom file
// (text::payload_position, loom/text/text.h).  Not part of the IR: it is
// no reflected field, so structural equality and hashing, JSON, the
// printer and Python never see it; a function built any other way has
// none, and a copy whose payload differs is not mapped (size and hash).
struct PayloadSource {
  std::string source;  // the file name the parser was given ("<text>" for a string)
  size_t payload_size = 0;
  size_t payload_hash = 0;  // std::hash of the payload it describes
  // The payload's bytes from `offset` on, up to the next piece's, stand at
  // consecutive columns of `line` from `column` (1-based): a piece starts
  // at each escape sequence and after each line break of the literal.  A
  // last piece at the payload's size is where the literal closes.
  struct Piece {
    size_t offset;
    int line;
    int column;
  };
  std::vector<Piece> pieces;
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
  // Set by the text parser for a text payload; not reflected (see above).
  std::shared_ptr<const PayloadSource> payload_source;
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
