// Registering an IR node's constructor in the global function registry
// under its type key ("tir.Add", "graph.Call", "ir.TensorType", ...), with
// its arguments checked: a missing (none) node where one is required or a
// wrong element in a list is a TypeError naming the constructor and the
// argument, never a null dereference further on.  Each IR area registers
// its own nodes' constructors with these (docs/python.md, "Builders").
#ifndef LOOM_IR_CONSTRUCTORS_H_
#define LOOM_IR_CONSTRUCTORS_H_

#include <string>
#include <utility>
#include <vector>

#include "loom/object/containers.h"
#include "loom/object/function.h"
#include "loom/support/error.h"

namespace loom::ir::constructor_args {

template <class F>
void def(const std::string& name, F body, std::string doc) {
  FunctionRegistry::register_function(name, Function::typed(std::move(body), name), std::move(doc));
}

// `value`, which must be defined.
template <class T>
T need(T value, const std::string& ctor, const char* arg) {
  if (!value.defined()) LOOM_THROW(TypeError) << ctor << ": " << arg << " is required, got none";
  return value;
}

// The items of `items` as T, each defined.
template <class T>
std::vector<T> list(const Array& items, const std::string& ctor, const char* arg) {
  std::vector<T> out;
  for (size_t i = 0; i < items.size(); ++i) {
    T item;
    try {
      item = items[i].cast<T>();
    } catch (const Error& e) {
      LOOM_THROW(TypeError) << ctor << ": " << arg << "[" << i << "]: " << e.what();
    }
    if (!item.defined()) {
      LOOM_THROW(TypeError) << ctor << ": " << arg << "[" << i << "] must be a " << T::ContainerType::_type_key
                            << ", got none";
    }
    out.push_back(std::move(item));
  }
  return out;
}

inline Map or_empty(Map m) { return m.defined() ? m : Map::empty(); }

}  // namespace loom::ir::constructor_args

#endif  // LOOM_IR_CONSTRUCTORS_H_
