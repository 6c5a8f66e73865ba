// Core value objects: String, Array (of Any) and Map (str -> Any, ordered by
// key so that printing and hashing are deterministic).  They are objects so
// that fields of any node can hold them and Python can see them; the generic
// printer, structural equality and hashing know them by type.
#ifndef LOOM_OBJECT_CONTAINERS_H_
#define LOOM_OBJECT_CONTAINERS_H_

#include <map>
#include <string>
#include <vector>

#include "loom/object/any.h"
#include "loom/object/object.h"
#include "loom/object/reflection.h"

namespace loom {

class StringNode : public Object {
 public:
  explicit StringNode(std::string v = "") : value(std::move(v)) {}
  std::string value;
  LOOM_OBJECT(StringNode, Object, "String");
};

class String : public ObjectRef {
 public:
  LOOM_OBJECT_REF(String, ObjectRef, StringNode)
  String(std::string value);                                 // NOLINT
  String(const char* value) : String(std::string(value)) {}  // NOLINT
  const std::string& str() const { return get()->value; }
  operator const std::string&() const { return str(); }  // NOLINT
};

class ArrayNode : public Object {
 public:
  std::vector<Any> items;
  LOOM_OBJECT(ArrayNode, Object, "Array");
};

class Array : public ObjectRef {
 public:
  LOOM_OBJECT_REF(Array, ObjectRef, ArrayNode)
  Array(std::vector<Any> items);  // NOLINT
  Array(std::initializer_list<Any> items) : Array(std::vector<Any>(items)) {}
  size_t size() const { return get() ? get()->items.size() : 0; }
  const Any& operator[](size_t i) const { return get()->items.at(i); }
  // An undefined Array iterates as empty.
  std::vector<Any>::const_iterator begin() const { return get() ? get()->items.begin() : empty_items().begin(); }
  std::vector<Any>::const_iterator end() const { return get() ? get()->items.end() : empty_items().end(); }

 private:
  static const std::vector<Any>& empty_items() {
    static const std::vector<Any> empty;
    return empty;
  }
};

class MapNode : public Object {
 public:
  std::map<std::string, Any> items;
  LOOM_OBJECT(MapNode, Object, "Map");
};

class Map : public ObjectRef {
 public:
  LOOM_OBJECT_REF(Map, ObjectRef, MapNode)
  Map(std::map<std::string, Any> items);  // NOLINT
  Map(std::initializer_list<std::pair<const std::string, Any>> items) : Map(std::map<std::string, Any>(items)) {}
  static Map empty() { return Map(std::map<std::string, Any>{}); }
  size_t size() const { return get() ? get()->items.size() : 0; }
  bool contains(const std::string& key) const { return get() && get()->items.count(key); }
  // Throws LookupError naming the key (and the closest one) when missing.
  const Any& at(const std::string& key) const;
};

}  // namespace loom

#endif  // LOOM_OBJECT_CONTAINERS_H_
