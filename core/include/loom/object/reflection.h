// Field reflection: what the generic printer, structural equality/hash, the
// JSON serializer and the Python binding know about every object type.
//
// A type lists its fields once, in its reflect() function; the list is
// inherited (parent fields first).  Each field has a name, a type name
// ("int", "float", "bool", "str", "dtype", "device", "Any", "Function", or
// the type key of an object type), a doc line, a getter and a setter that
// speak Any.  A default-constructible type also gets a creator, so a
// serializer can rebuild it: create(), then set each field.
//
// The structural kind tells the generic algorithms how to compare a node:
//   kTree     compare the fields (the default);
//   kBinding  a variable: two bindings are equal if they are bound to each
//             other at first encounter (alpha-equivalence); hash by order of
//             first encounter;
//   kUnique   compare by identity (functions, registries, handles).
#ifndef LOOM_OBJECT_REFLECTION_H_
#define LOOM_OBJECT_REFLECTION_H_

#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/object/any.h"
#include "loom/object/object.h"

namespace loom {

enum class StructuralKind { kTree, kBinding, kUnique };

namespace detail {
// Calls f(item, "element I") for each item of an Array value, f(item,
// "entry 'KEY'") for each value of a Map; nothing for anything else.
void for_each_element(const Any& value, const std::function<void(const Any&, const std::string&)>& f);
}  // namespace detail

// Field flags.
//   kStructuralIgnore: left out of structural equality and hash (a
//     variable's name hint, a source location).
//   kOptional: an object field that may be none (an inferred type not yet
//     inferred, a missing else branch).  Without it, the setter refuses none.
//   kDerived: a cache computed from the other fields (an expression's
//     inferred type).  A Mutator neither rewrites it nor keeps it on a copy
//     whose other fields changed, so a stale value never survives a rewrite.
enum FieldFlags : uint32_t { kFieldNone = 0, kStructuralIgnore = 1, kOptional = 2, kDerived = 4 };

struct FieldInfo {
  std::string name;
  std::string type;
  std::string doc;
  // For an Array or Map field declared with elements<E>(): the type name
  // of its elements (values), which the setter checks; "" when unchecked.
  std::string element_type;
  uint32_t flags = kFieldNone;
  std::function<Any(const Object*)> get;
  std::function<void(Object*, const Any&)> set;
};

struct TypeInfo {
  uint32_t index = 0;
  std::string key;
  uint32_t parent_index = 0;
  std::vector<uint32_t> ancestors;            // parent first, up to Object
  std::vector<FieldInfo> fields;              // inherited fields first
  std::function<ObjectPtr<Object>()> create;  // empty for abstract types
  StructuralKind structural = StructuralKind::kTree;
  std::string owner;  // "core" or the plugin that registered the type
  // Raw bytes that are part of the value but not a field (an NDArray's
  // data): compared and hashed after the fields, and stored by serializers.
  std::function<std::string(const Object*)> get_bytes;
  std::function<void(Object*, const std::string&)> set_bytes;

  const FieldInfo* field(const std::string& name) const;
};

namespace detail {
template <class F, class = void>
struct FieldTypeName {
  static std::string get() {
    if constexpr (std::is_same_v<F, bool>)
      return "bool";
    else if constexpr (std::is_integral_v<F>)
      return "int";
    else if constexpr (std::is_floating_point_v<F>)
      return "float";
    else if constexpr (std::is_same_v<F, std::string>)
      return "str";
    else if constexpr (std::is_same_v<F, DataType>)
      return "dtype";
    else if constexpr (std::is_same_v<F, Device>)
      return "device";
    else if constexpr (std::is_same_v<F, Any>)
      return "Any";
    else if constexpr (std::is_same_v<F, void*>)
      return "handle";
    else if constexpr (std::is_base_of_v<ObjectRef, F>) {
      // A String field reads as "str", like a std::string one.
      std::string key = F::ContainerType::_type_key;
      return key == "String" ? "str" : key;
    } else {
      static_assert(sizeof(F) == 0, "unsupported field type for reflection");
    }
  }
};
}  // namespace detail

template <class T>
class ReflectionBuilder {
 public:
  explicit ReflectionBuilder(TypeInfo& info) : info_(info) {}

  template <class F>
  ReflectionBuilder& field(const char* name, F T::*member, const char* doc = "", uint32_t flags = kFieldNone) {
    FieldInfo field;
    field.name = name;
    field.type = detail::FieldTypeName<F>::get();
    field.doc = doc;
    field.flags = flags;
    field.get = [member](const Object* object) -> Any { return Any(static_cast<const T*>(object)->*member); };
    field.set = [member, flags, name = field.name, type = field.type](Object* object, const Any& value) {
      if constexpr (std::is_base_of_v<ObjectRef, F>) {
        if (value.is_none() && !(flags & kOptional)) {
          LOOM_THROW(TypeError) << "field '" << name << "' of " << T::_type_key << ": expected " << type
                                << ", got none";
        }
      }
      try {
        static_cast<T*>(object)->*member = value.cast<F>();
      } catch (const TypeError& e) {
        LOOM_THROW(TypeError) << "field '" << name << "' of " << T::_type_key << ": " << e.what();
      }
    };
    info_.fields.push_back(std::move(field));
    return *this;
  }

  // Declares the element type of the Array (or the value type of the Map)
  // field just declared: its setter then refuses a container holding none
  // or anything that is not an E ("field 'params' of graph.Function:
  // element 0: expected graph.Var, got graph.Constant"), so a node read
  // from JSON or built through reflection never holds an element of the
  // wrong kind for the code that downcasts it later.
  template <class E>
  ReflectionBuilder& elements() {
    if constexpr (std::is_base_of_v<ObjectRef, E>) {
      return elements({E::ContainerType::_type_key});
    } else {
      return checked_elements(detail::FieldTypeName<E>::get(), [](const Any& item) { (void)item.cast<E>(); });
    }
  }
  // The same for elements that may be an object of any of `type_keys`
  // (each an object type key, derived types included).
  ReflectionBuilder& elements(std::vector<std::string> type_keys) {
    std::string names;
    for (const auto& key : type_keys) names += (names.empty() ? "" : " or ") + key;
    return checked_elements(names, [type_keys, names](const Any& item) {
      const Object* object = item.object();
      for (const auto& key : type_keys) {
        if (object && object->is_instance_of(TypeRegistry::info(key).index)) return;
      }
      LOOM_THROW(TypeError) << "expected " << names << ", got " << item.describe();
    });
  }

  // Declares the raw-bytes payload (see TypeInfo::get_bytes).
  ReflectionBuilder& bytes(std::string (*get)(const T&), void (*set)(T&, const std::string&)) {
    info_.get_bytes = [get](const Object* object) { return get(*static_cast<const T*>(object)); };
    info_.set_bytes = [set](Object* object, const std::string& data) { set(*static_cast<T*>(object), data); };
    return *this;
  }

  ReflectionBuilder& structural(StructuralKind kind) {
    info_.structural = kind;
    return *this;
  }

 private:
  // Wraps the last field's setter: every element of an Array value (every
  // value of a Map) must pass `check`, which throws TypeError.
  ReflectionBuilder& checked_elements(std::string element_type, std::function<void(const Any&)> check) {
    FieldInfo& field = info_.fields.back();
    field.element_type = element_type;
    field.set = [set = field.set, name = field.name, element_type, check](Object* object, const Any& value) {
      auto verify = [&](const Any& item, const std::string& where) {
        if (item.is_none()) {
          LOOM_THROW(TypeError) << "field '" << name << "' of " << T::_type_key << ": " << where << ": expected "
                                << element_type << ", got none";
        }
        try {
          check(item);
        } catch (const TypeError& e) {
          LOOM_THROW(TypeError) << "field '" << name << "' of " << T::_type_key << ": " << where << ": " << e.what();
        }
      };
      detail::for_each_element(value, verify);
      set(object, value);
    };
    return *this;
  }

  TypeInfo& info_;
};

namespace detail {
// True only for a reflect() of T itself: one inherited from the parent takes
// the parent's builder, and the parent's fields are inherited already.
template <class T, class = void>
struct HasReflect : std::false_type {};
template <class T>
struct HasReflect<T, std::void_t<decltype(static_cast<void (*)(ReflectionBuilder<T>&)>(&T::reflect))>>
    : std::true_type {};

template <class T>
void describe_type(TypeInfo& info) {
  if constexpr (std::is_default_constructible_v<T> && !std::is_abstract_v<T>) {
    info.create = []() { return ObjectPtr<Object>(make_object<T>()); };
  }
  if constexpr (HasReflect<T>::value) {
    ReflectionBuilder<T> builder(info);
    T::reflect(builder);
  }
}

template <class T>
void describe_abstract_type(TypeInfo& info) {
  describe_type<T>(info);
  info.create = nullptr;
}
}  // namespace detail

}  // namespace loom

#endif  // LOOM_OBJECT_REFLECTION_H_
