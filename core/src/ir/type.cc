#include "loom/ir/type.h"

namespace loom::ir {

LOOM_REGISTER_OBJECT(PrimTypeNode);
LOOM_REGISTER_OBJECT(TensorTypeNode);
LOOM_REGISTER_OBJECT(TupleTypeNode);
LOOM_REGISTER_OBJECT(FuncTypeNode);
LOOM_REGISTER_OBJECT(OpaqueTypeNode);

PrimType::PrimType(DataType dtype) {
  auto node = make_object<PrimTypeNode>();
  node->dtype = dtype;
  data_ = node;
}

TensorType::TensorType(Array shape, DataType dtype) {
  auto node = make_object<TensorTypeNode>();
  node->shape = std::move(shape);
  node->dtype = dtype;
  data_ = node;
}

TupleType::TupleType(std::vector<Type> fields) {
  auto node = make_object<TupleTypeNode>();
  node->fields = to_array(fields);
  data_ = node;
}

FuncType::FuncType(std::vector<Type> params, Type ret) {
  auto node = make_object<FuncTypeNode>();
  node->params = to_array(params);
  node->ret = std::move(ret);
  data_ = node;
}

OpaqueType::OpaqueType(std::string name) {
  auto node = make_object<OpaqueTypeNode>();
  node->name = std::move(name);
  data_ = node;
}

}  // namespace loom::ir
