// The object system: intrusive reference-counted objects with a runtime type
// registry.  Every IR node, container and function is an Object; an ObjectRef
// is a counted handle to one.
//
// Each object type declares a type key ("ir.Var") and its parent; its type
// index is assigned at first use, so core types and types a plugin defines
// work the same way.  Reflection (fields, creator, structural kind) lives in
// loom/object/reflection.h and is filled in the same registration.
//
// Declaring a type:
//
//   class PointNode : public Object {
//    public:
//     int64_t x = 0;
//     LOOM_OBJECT(PointNode, Object, "test.Point");
//     static void reflect(ReflectionBuilder<PointNode>& r) { r.field("x", &PointNode::x); }
//   };
//
// A type without a reflect() function has no fields.  A header that declares
// object types includes loom/object/reflection.h, which defines what
// LOOM_OBJECT instantiates.
#ifndef LOOM_OBJECT_OBJECT_H_
#define LOOM_OBJECT_OBJECT_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace loom {

struct TypeInfo;

class Object {
 public:
  Object() = default;
  // Copies start with their own count (used by copy-on-write helpers).
  Object(const Object& other) : type_index_(other.type_index_) {}
  Object& operator=(const Object&) { return *this; }
  virtual ~Object() = default;

  uint32_t type_index() const { return type_index_; }
  const std::string& type_key() const;
  int32_t use_count() const { return ref_count_.load(std::memory_order_relaxed); }

  // True if this object is a T or derives from T.
  template <class T>
  bool is_instance() const {
    return is_instance_of(T::runtime_type_index());
  }
  bool is_instance_of(uint32_t type_index) const;

  static constexpr const char* _type_key = "Object";
  static uint32_t runtime_type_index() { return 0; }

  void inc_ref() const { ref_count_.fetch_add(1, std::memory_order_relaxed); }
  void dec_ref() const {
    if (ref_count_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy(this);
  }

 protected:
  // Deletes an object whose last reference went.  Iterative: objects whose
  // last reference goes while another is being deleted on this thread are
  // queued and deleted by the outermost call, so a deep tree (a let chain
  // of any length) frees without recursion.
  static void destroy(const Object* object);

  template <class T, class... Args>
  friend auto make_object(Args&&... args);

  uint32_t type_index_ = 0;
  mutable std::atomic<int32_t> ref_count_{0};
};

// A counted pointer to an Object (or a subclass).
template <class T>
class ObjectPtr {
 public:
  ObjectPtr() = default;
  ObjectPtr(std::nullptr_t) {}  // NOLINT(runtime/explicit)
  explicit ObjectPtr(T* raw) : ptr_(raw) {
    if (ptr_) ptr_->inc_ref();
  }
  ObjectPtr(const ObjectPtr& other) : ObjectPtr(other.ptr_) {}
  ObjectPtr(ObjectPtr&& other) noexcept : ptr_(other.ptr_) { other.ptr_ = nullptr; }
  template <class U, class = std::enable_if_t<std::is_base_of_v<T, U>>>
  ObjectPtr(const ObjectPtr<U>& other) : ObjectPtr(other.get()) {}  // NOLINT
  ~ObjectPtr() { reset(); }

  ObjectPtr& operator=(ObjectPtr other) noexcept {
    std::swap(ptr_, other.ptr_);
    return *this;
  }
  void reset() {
    if (ptr_) ptr_->dec_ref();
    ptr_ = nullptr;
  }
  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }
  T& operator*() const { return *ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  bool operator==(const ObjectPtr& other) const { return ptr_ == other.ptr_; }
  bool operator!=(const ObjectPtr& other) const { return ptr_ != other.ptr_; }

 private:
  T* ptr_ = nullptr;
};

// Allocates a T, stamps its type index and returns a counted pointer.
template <class T, class... Args>
auto make_object(Args&&... args) {
  static_assert(std::is_base_of_v<Object, T>, "make_object needs an Object subclass");
  T* raw = new T(std::forward<Args>(args)...);
  raw->type_index_ = T::runtime_type_index();
  return ObjectPtr<T>(raw);
}

// Base of all typed handles.  Subclasses add typed accessors and keep the
// object immutable once shared.
class ObjectRef {
 public:
  ObjectRef() = default;
  explicit ObjectRef(ObjectPtr<Object> data) : data_(std::move(data)) {}

  const Object* get() const { return data_.get(); }
  const Object* operator->() const { return data_.get(); }
  bool defined() const { return data_ != nullptr; }
  bool same_as(const ObjectRef& other) const { return data_ == other.data_; }
  const ObjectPtr<Object>& object_ptr() const { return data_; }

  // Typed views; as<T>() returns nullptr when the object is not a T.
  template <class T>
  const T* as() const {
    return data_ && data_->is_instance<T>() ? static_cast<const T*>(data_.get()) : nullptr;
  }

  using ContainerType = Object;

 protected:
  ObjectPtr<Object> data_;
};

// Downcast a handle; throws TypeError naming both types on mismatch.
[[noreturn]] void throw_downcast_error(const Object* object, const char* target_key);
template <class RefType>
RefType downcast(const ObjectRef& ref) {
  using Node = typename RefType::ContainerType;
  if (ref.defined() && !ref->is_instance<Node>()) throw_downcast_error(ref.get(), Node::_type_key);
  return RefType(ref.object_ptr());
}

// ---------------------------------------------------------------------------
// Type registry
// ---------------------------------------------------------------------------
using TypeDescriber = void (*)(TypeInfo& info);

class TypeRegistry {
 public:
  // Registers `key` under `parent_index` and returns its index.  Registering
  // the same key with the same parent again returns the existing index (each
  // shared object may run the registration of a header-defined type); the
  // same key with a different parent is an Error.  `describe` fills fields.
  static uint32_t register_type(const char* key, uint32_t parent_index, TypeDescriber describe);
  static const TypeInfo& info(uint32_t index);
  // Throws LookupError with a suggestion when `key` is unknown.
  static const TypeInfo& info(const std::string& key);
  static const TypeInfo* find(const std::string& key);
  static bool is_derived_from(uint32_t child, uint32_t ancestor);
  static std::vector<std::string> list_keys();
};

namespace detail {
template <class T>
void describe_type(TypeInfo& info);  // defined in reflection.h
template <class T>
void describe_abstract_type(TypeInfo& info);  // defined in reflection.h

template <class P>
struct IsObjectPtr : std::false_type {};
template <class T>
struct IsObjectPtr<ObjectPtr<T>> : std::true_type {};
}  // namespace detail

}  // namespace loom

// Declares the type key, parent and runtime type index of an object type.
#define LOOM_OBJECT(TypeName, ParentName, TypeKey)                                                               \
  static constexpr const char* _type_key = TypeKey;                                                              \
  using _parent_type = ParentName;                                                                               \
  static uint32_t runtime_type_index() {                                                                         \
    static const uint32_t index = ::loom::TypeRegistry::register_type(TypeKey, ParentName::runtime_type_index(), \
                                                                      &::loom::detail::describe_type<TypeName>); \
    return index;                                                                                                \
  }

// As LOOM_OBJECT, for a base type that is never instantiated on its own
// (tir.PrimExpr, ir.Type, ...): it gets no creator, so a deserializer
// refuses it.
#define LOOM_ABSTRACT_OBJECT(TypeName, ParentName, TypeKey)                                            \
  static constexpr const char* _type_key = TypeKey;                                                    \
  using _parent_type = ParentName;                                                                     \
  static uint32_t runtime_type_index() {                                                               \
    static const uint32_t index = ::loom::TypeRegistry::register_type(                                 \
        TypeKey, ParentName::runtime_type_index(), &::loom::detail::describe_abstract_type<TypeName>); \
    return index;                                                                                      \
  }

// Registers a type when its library is loaded, so that lookups by key (a
// deserializer, Python) find it before any object of it is made.  For the
// core and programs; a plugin registers its types in init instead
// (PluginContext::register_object), where a failure can be rolled back.
#define LOOM_REGISTER_OBJECT(TypeName) LOOM_REGISTER_OBJECT_AT(TypeName, __COUNTER__)
#define LOOM_REGISTER_OBJECT_AT(TypeName, N) LOOM_REGISTER_OBJECT_AT2(TypeName, N)
#define LOOM_REGISTER_OBJECT_AT2(TypeName, N) \
  [[maybe_unused]] static const uint32_t loom_registered_type_##N = TypeName::runtime_type_index()

// Declares the usual constructors of a handle type over a node type.
// The pointer constructor accepts only an ObjectPtr, so that a literal 0 (a
// null pointer constant) never competes with a value constructor such as
// PrimExpr(int).
#define LOOM_OBJECT_REF(RefName, ParentRef, NodeName)                                         \
  RefName() = default;                                                                        \
  template <class P, std::enable_if_t<::loom::detail::IsObjectPtr<P>::value, int> = 0>        \
  explicit RefName(P data) : ParentRef(::loom::ObjectPtr<::loom::Object>(std::move(data))) {} \
  const NodeName* operator->() const { return static_cast<const NodeName*>(data_.get()); }    \
  const NodeName* get() const { return static_cast<const NodeName*>(data_.get()); }           \
  using ContainerType = NodeName;

#endif  // LOOM_OBJECT_OBJECT_H_
