// Constructors of the prim IR's expressions.  They check what a builder can
// get wrong locally (operand dtypes, lanes) and say which node and why.
#include "loom/tir/expr.h"

namespace loom::tir {

LOOM_REGISTER_OBJECT(IntImmNode);
LOOM_REGISTER_OBJECT(FloatImmNode);
LOOM_REGISTER_OBJECT(StringImmNode);
LOOM_REGISTER_OBJECT(VarNode);
LOOM_REGISTER_OBJECT(AddNode);
LOOM_REGISTER_OBJECT(SubNode);
LOOM_REGISTER_OBJECT(MulNode);
LOOM_REGISTER_OBJECT(DivNode);
LOOM_REGISTER_OBJECT(FloorDivNode);
LOOM_REGISTER_OBJECT(FloorModNode);
LOOM_REGISTER_OBJECT(MinNode);
LOOM_REGISTER_OBJECT(MaxNode);
LOOM_REGISTER_OBJECT(EQNode);
LOOM_REGISTER_OBJECT(NENode);
LOOM_REGISTER_OBJECT(LTNode);
LOOM_REGISTER_OBJECT(LENode);
LOOM_REGISTER_OBJECT(GTNode);
LOOM_REGISTER_OBJECT(GENode);
LOOM_REGISTER_OBJECT(AndNode);
LOOM_REGISTER_OBJECT(OrNode);
LOOM_REGISTER_OBJECT(NotNode);
LOOM_REGISTER_OBJECT(SelectNode);
LOOM_REGISTER_OBJECT(CastNode);
LOOM_REGISTER_OBJECT(CallNode);
LOOM_REGISTER_OBJECT(BufferNode);
LOOM_REGISTER_OBJECT(BufferLoadNode);
LOOM_REGISTER_OBJECT(RampNode);
LOOM_REGISTER_OBJECT(BroadcastNode);
LOOM_REGISTER_OBJECT(LetNode);

PrimExpr::PrimExpr(int value) : PrimExpr(IntImm(DataType::Int(32), value)) {}
PrimExpr::PrimExpr(int64_t value) : PrimExpr(IntImm(DataType::Int(64), value)) {}

IntImm::IntImm(DataType dtype, int64_t value) {
  if (dtype.code != DataType::kInt && dtype.code != DataType::kUInt && dtype.code != DataType::kBool) {
    LOOM_THROW(TypeError) << "tir.IntImm needs an integer or bool dtype, got " << dtype.to_string();
  }
  auto node = make_object<IntImmNode>();
  node->dtype = dtype;
  node->value = value;
  data_ = node;
}

FloatImm::FloatImm(DataType dtype, double value) {
  if (dtype.code != DataType::kFloat && dtype.code != DataType::kBFloat) {
    LOOM_THROW(TypeError) << "tir.FloatImm needs a float dtype, got " << dtype.to_string();
  }
  auto node = make_object<FloatImmNode>();
  node->dtype = dtype;
  node->value = value;
  data_ = node;
}

StringImm::StringImm(std::string value) {
  auto node = make_object<StringImmNode>();
  node->dtype = DataType::Handle();
  node->value = std::move(value);
  data_ = node;
}

Var::Var(std::string name, DataType dtype) {
  auto node = make_object<VarNode>();
  node->name = std::move(name);
  node->dtype = dtype;
  data_ = node;
}

namespace {
template <class Node>
ObjectPtr<Object> binary(const char* key, PrimExpr a, PrimExpr b, bool logical) {
  if (!a.defined() || !b.defined()) LOOM_THROW(TypeError) << key << ": an operand is undefined";
  if (a.dtype() != b.dtype()) {
    LOOM_THROW(TypeError) << key << ": operand dtypes differ (" << a.dtype().to_string() << " vs "
                          << b.dtype().to_string() << ")";
  }
  auto node = make_object<Node>();
  node->dtype = logical ? DataType::Bool(a.dtype().lanes) : a.dtype();
  node->a = std::move(a);
  node->b = std::move(b);
  return node;
}
}  // namespace

#define LOOM_TIR_BINARY_CTOR(Name, Key, Logical) \
  Name::Name(PrimExpr a, PrimExpr b) : PrimExpr(binary<Name##Node>(Key, std::move(a), std::move(b), Logical)) {}
LOOM_TIR_BINARY_CTOR(Add, "tir.Add", false)
LOOM_TIR_BINARY_CTOR(Sub, "tir.Sub", false)
LOOM_TIR_BINARY_CTOR(Mul, "tir.Mul", false)
LOOM_TIR_BINARY_CTOR(Div, "tir.Div", false)
LOOM_TIR_BINARY_CTOR(FloorDiv, "tir.FloorDiv", false)
LOOM_TIR_BINARY_CTOR(FloorMod, "tir.FloorMod", false)
LOOM_TIR_BINARY_CTOR(Min, "tir.Min", false)
LOOM_TIR_BINARY_CTOR(Max, "tir.Max", false)
LOOM_TIR_BINARY_CTOR(EQ, "tir.EQ", true)
LOOM_TIR_BINARY_CTOR(NE, "tir.NE", true)
LOOM_TIR_BINARY_CTOR(LT, "tir.LT", true)
LOOM_TIR_BINARY_CTOR(LE, "tir.LE", true)
LOOM_TIR_BINARY_CTOR(GT, "tir.GT", true)
LOOM_TIR_BINARY_CTOR(GE, "tir.GE", true)
LOOM_TIR_BINARY_CTOR(And, "tir.And", true)
LOOM_TIR_BINARY_CTOR(Or, "tir.Or", true)
#undef LOOM_TIR_BINARY_CTOR

Not::Not(PrimExpr a) {
  auto node = make_object<NotNode>();
  node->dtype = DataType::Bool(a.dtype().lanes);
  node->a = std::move(a);
  data_ = node;
}

Select::Select(PrimExpr condition, PrimExpr true_value, PrimExpr false_value) {
  if (true_value.dtype() != false_value.dtype()) {
    LOOM_THROW(TypeError) << "tir.Select: branch dtypes differ (" << true_value.dtype().to_string() << " vs "
                          << false_value.dtype().to_string() << ")";
  }
  auto node = make_object<SelectNode>();
  node->dtype = true_value.dtype();
  node->condition = std::move(condition);
  node->true_value = std::move(true_value);
  node->false_value = std::move(false_value);
  data_ = node;
}

Cast::Cast(DataType dtype, PrimExpr value) {
  auto node = make_object<CastNode>();
  node->dtype = dtype;
  node->value = std::move(value);
  data_ = node;
}

Call::Call(DataType dtype, std::string op, std::vector<PrimExpr> args) {
  auto node = make_object<CallNode>();
  node->dtype = dtype;
  node->op = std::move(op);
  node->args = ir::to_array(args);
  data_ = node;
}

Buffer::Buffer(std::string name, DataType dtype, std::vector<PrimExpr> shape, std::string scope) {
  auto node = make_object<BufferNode>();
  node->data = Var(name + "_data", DataType::Handle());
  node->dtype = dtype;
  node->shape = ir::to_array(shape);
  node->strides = Array(std::vector<Any>{});
  node->elem_offset = IntImm(DataType::Int(64), 0);
  node->scope = std::move(scope);
  node->name = std::move(name);
  data_ = node;
}

ObjectPtr<BufferNode> copy_buffer(const BufferNode& b) {
  auto node = make_object<BufferNode>();
  node->data = b.data;
  node->dtype = b.dtype;
  node->shape = b.shape;
  node->strides = b.strides;
  node->elem_offset = b.elem_offset;
  node->scope = b.scope;
  node->name = b.name;
  return node;
}

BufferLoad::BufferLoad(Buffer buffer, std::vector<PrimExpr> indices) {
  auto node = make_object<BufferLoadNode>();
  int lanes = indices.empty() ? 1 : indices.back().dtype().lanes;
  node->dtype = DataType(static_cast<DataType::Code>(buffer->dtype.code), buffer->dtype.bits, lanes);
  node->buffer = std::move(buffer);
  node->indices = ir::to_array(indices);
  data_ = node;
}

Ramp::Ramp(PrimExpr base, PrimExpr stride, int64_t lanes) {
  if (lanes < 2 || lanes > kMaxLanes) {
    LOOM_THROW(TypeError) << "tir.Ramp needs 2 to " << kMaxLanes << " lanes, got " << lanes;
  }
  auto node = make_object<RampNode>();
  DataType t = base.dtype();
  node->dtype = DataType(static_cast<DataType::Code>(t.code), t.bits, static_cast<int>(lanes));
  node->base = std::move(base);
  node->stride = std::move(stride);
  node->lanes = lanes;
  data_ = node;
}

Broadcast::Broadcast(PrimExpr value, int64_t lanes) {
  if (lanes < 2 || lanes > kMaxLanes) {
    LOOM_THROW(TypeError) << "tir.Broadcast needs 2 to " << kMaxLanes << " lanes, got " << lanes;
  }
  auto node = make_object<BroadcastNode>();
  DataType t = value.dtype();
  node->dtype = DataType(static_cast<DataType::Code>(t.code), t.bits, static_cast<int>(lanes));
  node->value = std::move(value);
  node->lanes = lanes;
  data_ = node;
}

Let::Let(Var var, PrimExpr value, PrimExpr body) {
  auto node = make_object<LetNode>();
  node->dtype = body.dtype();
  node->var = std::move(var);
  node->value = std::move(value);
  node->body = std::move(body);
  data_ = node;
}

ir::TensorType tensor_type(const std::vector<int64_t>& shape, DataType dtype) {
  std::vector<Any> dims;
  for (int64_t d : shape) dims.push_back(IntImm(DataType::Int(64), d));
  return ir::TensorType(Array(dims), dtype);
}

}  // namespace loom::tir
