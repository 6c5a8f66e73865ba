// Scalar expressions of the prim IR, and buffers (see docs/ir.md, "Prim IR").
// PrimExprs also serve as (symbolic) tensor dimensions in graph types.
#ifndef LOOM_TIR_EXPR_H_
#define LOOM_TIR_EXPR_H_

#include <string>
#include <vector>

#include "loom/ir/type.h"

namespace loom::tir {

class PrimExprNode : public Object {
 public:
  DataType dtype = DataType::Int(32);
  LOOM_ABSTRACT_OBJECT(PrimExprNode, Object, "tir.PrimExpr");
  static void reflect(ReflectionBuilder<PrimExprNode>& r) { r.field("dtype", &PrimExprNode::dtype); }
};

class PrimExpr : public ObjectRef {
 public:
  LOOM_OBJECT_REF(PrimExpr, ObjectRef, PrimExprNode)
  PrimExpr(int value);      // NOLINT: an int32 IntImm
  PrimExpr(int64_t value);  // NOLINT: an int64 IntImm
  DataType dtype() const { return get()->dtype; }
};

class IntImmNode : public PrimExprNode {
 public:
  int64_t value = 0;
  LOOM_OBJECT(IntImmNode, PrimExprNode, "tir.IntImm");
  static void reflect(ReflectionBuilder<IntImmNode>& r) { r.field("value", &IntImmNode::value); }
};
class IntImm : public PrimExpr {
 public:
  LOOM_OBJECT_REF(IntImm, PrimExpr, IntImmNode)
  IntImm(DataType dtype, int64_t value);
};

class FloatImmNode : public PrimExprNode {
 public:
  double value = 0;
  LOOM_OBJECT(FloatImmNode, PrimExprNode, "tir.FloatImm");
  static void reflect(ReflectionBuilder<FloatImmNode>& r) { r.field("value", &FloatImmNode::value); }
};
class FloatImm : public PrimExpr {
 public:
  LOOM_OBJECT_REF(FloatImm, PrimExpr, FloatImmNode)
  FloatImm(DataType dtype, double value);
};

class StringImmNode : public PrimExprNode {
 public:
  std::string value;
  LOOM_OBJECT(StringImmNode, PrimExprNode, "tir.StringImm");
  static void reflect(ReflectionBuilder<StringImmNode>& r) { r.field("value", &StringImmNode::value); }
};
class StringImm : public PrimExpr {
 public:
  LOOM_OBJECT_REF(StringImm, PrimExpr, StringImmNode)
  explicit StringImm(std::string value);
};

// A scalar variable; compared up to consistent renaming.
class VarNode : public PrimExprNode {
 public:
  std::string name;
  LOOM_OBJECT(VarNode, PrimExprNode, "tir.Var");
  static void reflect(ReflectionBuilder<VarNode>& r) {
    r.field("name", &VarNode::name, "name hint", kStructuralIgnore).structural(StructuralKind::kBinding);
  }
};
class Var : public PrimExpr {
 public:
  LOOM_OBJECT_REF(Var, PrimExpr, VarNode)
  Var(std::string name, DataType dtype = DataType::Int(32));
  const std::string& name() const { return get()->name; }
};

// Base of the two-operand nodes; each operator is its own type.
class BinaryOpNode : public PrimExprNode {
 public:
  PrimExpr a, b;
  LOOM_ABSTRACT_OBJECT(BinaryOpNode, PrimExprNode, "tir.BinaryOp");
  static void reflect(ReflectionBuilder<BinaryOpNode>& r) {
    r.field("a", &BinaryOpNode::a).field("b", &BinaryOpNode::b);
  }
};

// Arithmetic results take the operands' dtype (which must agree);
// comparisons and logic give bool.
#define LOOM_TIR_BINARY(Name, Key)              \
  class Name##Node : public BinaryOpNode {      \
   public:                                      \
    LOOM_OBJECT(Name##Node, BinaryOpNode, Key); \
  };                                            \
  class Name : public PrimExpr {                \
   public:                                      \
    LOOM_OBJECT_REF(Name, PrimExpr, Name##Node) \
    Name(PrimExpr a, PrimExpr b);               \
  };
LOOM_TIR_BINARY(Add, "tir.Add")
LOOM_TIR_BINARY(Sub, "tir.Sub")
LOOM_TIR_BINARY(Mul, "tir.Mul")
LOOM_TIR_BINARY(Div, "tir.Div")
LOOM_TIR_BINARY(FloorDiv, "tir.FloorDiv")
LOOM_TIR_BINARY(FloorMod, "tir.FloorMod")
LOOM_TIR_BINARY(Min, "tir.Min")
LOOM_TIR_BINARY(Max, "tir.Max")
LOOM_TIR_BINARY(EQ, "tir.EQ")
LOOM_TIR_BINARY(NE, "tir.NE")
LOOM_TIR_BINARY(LT, "tir.LT")
LOOM_TIR_BINARY(LE, "tir.LE")
LOOM_TIR_BINARY(GT, "tir.GT")
LOOM_TIR_BINARY(GE, "tir.GE")
LOOM_TIR_BINARY(And, "tir.And")
LOOM_TIR_BINARY(Or, "tir.Or")
#undef LOOM_TIR_BINARY

class NotNode : public PrimExprNode {
 public:
  PrimExpr a;
  LOOM_OBJECT(NotNode, PrimExprNode, "tir.Not");
  static void reflect(ReflectionBuilder<NotNode>& r) { r.field("a", &NotNode::a); }
};
class Not : public PrimExpr {
 public:
  LOOM_OBJECT_REF(Not, PrimExpr, NotNode)
  explicit Not(PrimExpr a);
};

class SelectNode : public PrimExprNode {
 public:
  PrimExpr condition, true_value, false_value;
  LOOM_OBJECT(SelectNode, PrimExprNode, "tir.Select");
  static void reflect(ReflectionBuilder<SelectNode>& r) {
    r.field("condition", &SelectNode::condition)
        .field("true_value", &SelectNode::true_value)
        .field("false_value", &SelectNode::false_value);
  }
};
class Select : public PrimExpr {
 public:
  LOOM_OBJECT_REF(Select, PrimExpr, SelectNode)
  Select(PrimExpr condition, PrimExpr true_value, PrimExpr false_value);
};

// dtype is the target type.
class CastNode : public PrimExprNode {
 public:
  PrimExpr value;
  LOOM_OBJECT(CastNode, PrimExprNode, "tir.Cast");
  static void reflect(ReflectionBuilder<CastNode>& r) { r.field("value", &CastNode::value); }
};
class Cast : public PrimExpr {
 public:
  LOOM_OBJECT_REF(Cast, PrimExpr, CastNode)
  Cast(DataType dtype, PrimExpr value);
};

// A call of a named intrinsic ("exp", "sqrt", ...); dtype is the result's.
class CallNode : public PrimExprNode {
 public:
  std::string op;
  Array args;
  LOOM_OBJECT(CallNode, PrimExprNode, "tir.Call");
  static void reflect(ReflectionBuilder<CallNode>& r) {
    r.field("op", &CallNode::op).field("args", &CallNode::args).elements<PrimExpr>();
  }
};
class Call : public PrimExpr {
 public:
  LOOM_OBJECT_REF(Call, PrimExpr, CallNode)
  Call(DataType dtype, std::string op, std::vector<PrimExpr> args);
};

// A buffer: typed, shaped view of memory at `data` (a handle Var).
class BufferNode : public Object {
 public:
  Var data;
  DataType dtype = DataType::Float(32);
  Array shape;    // of PrimExpr
  Array strides;  // of PrimExpr; empty for compact row-major
  PrimExpr elem_offset;
  std::string scope = "global";
  std::string name;
  LOOM_OBJECT(BufferNode, Object, "tir.Buffer");
  static void reflect(ReflectionBuilder<BufferNode>& r) {
    r.field("data", &BufferNode::data)
        .field("dtype", &BufferNode::dtype)
        .field("shape", &BufferNode::shape)
        .elements<PrimExpr>()
        .field("strides", &BufferNode::strides)
        .elements<PrimExpr>()
        .field("elem_offset", &BufferNode::elem_offset)
        .field("scope", &BufferNode::scope)
        .field("name", &BufferNode::name, "name hint", kStructuralIgnore);
  }
};
class Buffer : public ObjectRef {
 public:
  LOOM_OBJECT_REF(Buffer, ObjectRef, BufferNode)
  // A compact buffer with a fresh data var named after it.
  Buffer(std::string name, DataType dtype, std::vector<PrimExpr> shape, std::string scope = "global");
};

// The tensor type of a constant shape (each dimension an int64 IntImm).
ir::TensorType tensor_type(const std::vector<int64_t>& shape, DataType dtype);

// A new node with every field of `b` (the same memory, data var included),
// for a pass to change some of them before wrapping it in a Buffer.
ObjectPtr<BufferNode> copy_buffer(const BufferNode& b);

class BufferLoadNode : public PrimExprNode {
 public:
  Buffer buffer;
  Array indices;
  LOOM_OBJECT(BufferLoadNode, PrimExprNode, "tir.BufferLoad");
  static void reflect(ReflectionBuilder<BufferLoadNode>& r) {
    r.field("buffer", &BufferLoadNode::buffer).field("indices", &BufferLoadNode::indices).elements<PrimExpr>();
  }
};
class BufferLoad : public PrimExpr {
 public:
  LOOM_OBJECT_REF(BufferLoad, PrimExpr, BufferLoadNode)
  BufferLoad(Buffer buffer, std::vector<PrimExpr> indices);
};

// base, base + stride, ... (lanes values); dtype has `lanes` lanes.
// The most lanes a vector expression has (docs/reliability.md, "Cost"):
// wider than any machine's vectors, and small enough that a vectorized
// loop's code stays bounded.
constexpr int64_t kMaxLanes = 1024;

class RampNode : public PrimExprNode {
 public:
  PrimExpr base, stride;
  int64_t lanes = 1;
  LOOM_OBJECT(RampNode, PrimExprNode, "tir.Ramp");
  static void reflect(ReflectionBuilder<RampNode>& r) {
    r.field("base", &RampNode::base).field("stride", &RampNode::stride).field("lanes", &RampNode::lanes);
  }
};
class Ramp : public PrimExpr {
 public:
  LOOM_OBJECT_REF(Ramp, PrimExpr, RampNode)
  Ramp(PrimExpr base, PrimExpr stride, int64_t lanes);
};

class BroadcastNode : public PrimExprNode {
 public:
  PrimExpr value;
  int64_t lanes = 1;
  LOOM_OBJECT(BroadcastNode, PrimExprNode, "tir.Broadcast");
  static void reflect(ReflectionBuilder<BroadcastNode>& r) {
    r.field("value", &BroadcastNode::value).field("lanes", &BroadcastNode::lanes);
  }
};
class Broadcast : public PrimExpr {
 public:
  LOOM_OBJECT_REF(Broadcast, PrimExpr, BroadcastNode)
  Broadcast(PrimExpr value, int64_t lanes);
};

class LetNode : public PrimExprNode {
 public:
  Var var;
  PrimExpr value, body;
  LOOM_OBJECT(LetNode, PrimExprNode, "tir.Let");
  static void reflect(ReflectionBuilder<LetNode>& r) {
    r.field("var", &LetNode::var).field("value", &LetNode::value).field("body", &LetNode::body);
  }
};
class Let : public PrimExpr {
 public:
  LOOM_OBJECT_REF(Let, PrimExpr, LetNode)
  Let(Var var, PrimExpr value, PrimExpr body);
};

}  // namespace loom::tir

#endif  // LOOM_TIR_EXPR_H_
