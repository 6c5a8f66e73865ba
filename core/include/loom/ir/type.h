// Types shared by every IR variant (see docs/ir.md, "Types").
#ifndef LOOM_IR_TYPE_H_
#define LOOM_IR_TYPE_H_

#include <string>
#include <vector>

#include "loom/object/containers.h"
#include "loom/object/reflection.h"

namespace loom::ir {

class TypeNode : public Object {
 public:
  LOOM_ABSTRACT_OBJECT(TypeNode, Object, "ir.Type");
};

class Type : public ObjectRef {
 public:
  LOOM_OBJECT_REF(Type, ObjectRef, TypeNode)
};

class PrimTypeNode : public TypeNode {
 public:
  DataType dtype;
  LOOM_OBJECT(PrimTypeNode, TypeNode, "ir.PrimType");
  static void reflect(ReflectionBuilder<PrimTypeNode>& r) { r.field("dtype", &PrimTypeNode::dtype); }
};

class PrimType : public Type {
 public:
  LOOM_OBJECT_REF(PrimType, Type, PrimTypeNode)
  explicit PrimType(DataType dtype);
};

// shape: an Array of tir.PrimExpr (IntImm or symbolic Var), or undefined
// when the rank is unknown.
class TensorTypeNode : public TypeNode {
 public:
  Array shape;
  DataType dtype;
  bool unknown_rank() const { return !shape.defined(); }
  LOOM_OBJECT(TensorTypeNode, TypeNode, "ir.TensorType");
  static void reflect(ReflectionBuilder<TensorTypeNode>& r) {
    r.field("shape", &TensorTypeNode::shape, "dimensions, or none for unknown rank", kOptional)
        .elements({"tir.PrimExpr"})
        .field("dtype", &TensorTypeNode::dtype);
  }
};

class TensorType : public Type {
 public:
  LOOM_OBJECT_REF(TensorType, Type, TensorTypeNode)
  TensorType(Array shape, DataType dtype);
  // (A tensor type of constant shape: tir::tensor_type, loom/tir/expr.h.)
};

class TupleTypeNode : public TypeNode {
 public:
  Array fields;
  LOOM_OBJECT(TupleTypeNode, TypeNode, "ir.TupleType");
  static void reflect(ReflectionBuilder<TupleTypeNode>& r) {
    r.field("fields", &TupleTypeNode::fields).elements<Type>();
  }
};

class TupleType : public Type {
 public:
  LOOM_OBJECT_REF(TupleType, Type, TupleTypeNode)
  explicit TupleType(std::vector<Type> fields);
};

class FuncTypeNode : public TypeNode {
 public:
  Array params;
  Type ret;
  LOOM_OBJECT(FuncTypeNode, TypeNode, "ir.FuncType");
  static void reflect(ReflectionBuilder<FuncTypeNode>& r) {
    r.field("params", &FuncTypeNode::params)
        .elements<Type>()
        .field("ret", &FuncTypeNode::ret, "none: no result", kOptional);
  }
};

class FuncType : public Type {
 public:
  LOOM_OBJECT_REF(FuncType, Type, FuncTypeNode)
  FuncType(std::vector<Type> params, Type ret);
};

class OpaqueTypeNode : public TypeNode {
 public:
  std::string name;
  LOOM_OBJECT(OpaqueTypeNode, TypeNode, "ir.OpaqueType");
  static void reflect(ReflectionBuilder<OpaqueTypeNode>& r) { r.field("name", &OpaqueTypeNode::name); }
};

class OpaqueType : public Type {
 public:
  LOOM_OBJECT_REF(OpaqueType, Type, OpaqueTypeNode)
  explicit OpaqueType(std::string name);
};

// Typed view of an Array's items; throws TypeError naming the index.
template <class T>
std::vector<T> items_as(const Array& array) {
  std::vector<T> out;
  for (size_t i = 0; i < array.size(); ++i) out.push_back(array[i].cast<T>());
  return out;
}

template <class T>
Array to_array(const std::vector<T>& items) {
  return Array(std::vector<Any>(items.begin(), items.end()));
}

}  // namespace loom::ir

#endif  // LOOM_IR_TYPE_H_
