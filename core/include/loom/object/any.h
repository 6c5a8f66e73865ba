// Any: the type-erased value that crosses every registry and function call.
//
// An Any is one of: none, bool, int (int64), float (double), str, data type,
// device, object, function or opaque pointer.  Strings and functions are
// objects underneath (StringNode, FunctionNode) but carry their own kind so
// that a cast or an error message can name them.  Casts are strict: an int
// is not a bool, a str is not a data type; the only widening is int -> float.
// A failed cast throws TypeError("expected int, got str").
//
// DataType and Device use the numeric codes of DLPack, so they convert to
// DLDataType/DLDevice field by field.
#ifndef LOOM_OBJECT_ANY_H_
#define LOOM_OBJECT_ANY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "loom/object/object.h"
#include "loom/support/error.h"

namespace loom {

struct DataType {
  enum Code : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kHandle = 3, kBFloat = 4, kBool = 6 };
  uint8_t code = kFloat;
  uint8_t bits = 32;
  uint16_t lanes = 1;

  constexpr DataType() = default;
  constexpr DataType(Code c, int b, int l = 1)
      : code(c), bits(static_cast<uint8_t>(b)), lanes(static_cast<uint16_t>(l)) {}
  static DataType Int(int bits, int lanes = 1) { return {kInt, bits, lanes}; }
  static DataType UInt(int bits, int lanes = 1) { return {kUInt, bits, lanes}; }
  static DataType Float(int bits, int lanes = 1) { return {kFloat, bits, lanes}; }
  static DataType BFloat16(int lanes = 1) { return {kBFloat, 16, lanes}; }
  static DataType Bool(int lanes = 1) { return {kBool, 8, lanes}; }
  static DataType Handle() { return {kHandle, 64, 1}; }

  // "float32", "int8x4", "bool", "bfloat16", "handle".  parse() throws
  // Error naming the text for anything else.
  std::string to_string() const;
  static DataType parse(const std::string& text);
  bool operator==(const DataType& o) const { return code == o.code && bits == o.bits && lanes == o.lanes; }
  bool operator!=(const DataType& o) const { return !(*this == o); }
};

struct Device {
  enum Type : int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3, kOpenCL = 4, kVulkan = 7, kMetal = 8, kExtDev = 12 };
  int32_t device_type = kCPU;
  int32_t device_id = 0;

  // "cpu:0", "opencl:1", "vulkan", "ext_dev:0", a vendor's "acme:0";
  // parse() throws on unknown names.  A name no registered device has is
  // asked of the plugins as the capability "device:NAME" first.
  std::string to_string() const;
  static Device parse(const std::string& text);

  // Vendor devices (docs/runtime.md, "Vendor devices"): DLPack has no code
  // for a vendor's accelerator, so the plugin that provides one names it
  // with a code from kVendorFirst to kVendorLast, in its init, before it
  // registers the device's DeviceAPI.  The code is part of the vendor's
  // ABI (saved libraries and placements carry it).  Registering the same
  // name and code again does nothing; a name or code another plugin holds,
  // a built-in name, a code out of range or a malformed name is an Error
  // naming the holder.  A failed init removes its names again.
  static constexpr int32_t kVendorFirst = 64;
  static constexpr int32_t kVendorLast = 127;
  static void register_type(const std::string& name, int32_t type);
  // The code of device `name`, built in or registered; loads nothing.
  static std::optional<int32_t> type_of(const std::string& name);
  bool operator==(const Device& o) const { return device_type == o.device_type && device_id == o.device_id; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

enum class AnyKind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kDataType, kDevice, kObject, kFunction, kOpaquePtr };
const char* any_kind_name(AnyKind kind);

class String;
class Function;

class Any {
 public:
  Any() = default;
  Any(std::nullptr_t) {}                                 // NOLINT
  Any(bool v) : kind_(AnyKind::kBool) { value_.b = v; }  // NOLINT
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Any(T v) : kind_(AnyKind::kInt) {  // NOLINT
    value_.i = static_cast<int64_t>(v);
  }
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Any(T v) : kind_(AnyKind::kFloat) {  // NOLINT
    value_.f = static_cast<double>(v);
  }
  Any(const std::string& v);                                         // NOLINT
  Any(const char* v) : Any(std::string(v)) {}                        // NOLINT
  Any(DataType v) : kind_(AnyKind::kDataType) { value_.dtype = v; }  // NOLINT
  Any(Device v) : kind_(AnyKind::kDevice) { value_.device = v; }     // NOLINT
  Any(void* v) : kind_(AnyKind::kOpaquePtr) { value_.ptr = v; }      // NOLINT
  // Any object handle; strings and functions get their own kind.
  template <class R, std::enable_if_t<std::is_base_of_v<ObjectRef, R>, int> = 0>
  Any(const R& ref) {  // NOLINT
    set_object(ref.object_ptr().get());
  }
  explicit Any(const ObjectPtr<Object>& object) { set_object(object.get()); }

  Any(const Any& other);
  Any(Any&& other) noexcept;
  Any& operator=(Any other) noexcept;
  ~Any();

  AnyKind kind() const { return kind_; }
  const char* kind_name() const { return any_kind_name(kind_); }
  bool is_none() const { return kind_ == AnyKind::kNone; }
  bool is_object_like() const {
    return kind_ == AnyKind::kObject || kind_ == AnyKind::kStr || kind_ == AnyKind::kFunction;
  }
  // The object of an object, str or function value; nullptr otherwise.
  const Object* object() const { return is_object_like() ? value_.object : nullptr; }
  ObjectRef as_object_ref() const;

  bool as_bool() const;
  int64_t as_int() const;
  double as_float() const;  // accepts int too
  const std::string& as_string() const;
  DataType as_dtype() const;
  Device as_device() const;
  void* as_opaque_ptr() const;  // accepts none as nullptr

  // Strict cast to T (see the file comment).
  template <class T>
  T cast() const;

  // A short description for messages: "int 3", "str 'x'", "object ir.Var".
  std::string describe() const;

 private:
  void set_object(Object* object);
  [[noreturn]] void fail_cast(const char* expected) const;
  AnyKind kind_ = AnyKind::kNone;
  union {
    bool b;
    int64_t i;
    double f;
    DataType dtype;
    Device device;
    Object* object;
    void* ptr;
  } value_{};
};

namespace detail {
template <class T, class = void>
struct AnyCaster;
}  // namespace detail

template <class T>
T Any::cast() const {
  return detail::AnyCaster<std::decay_t<T>>::cast(*this);
}

namespace detail {
template <>
struct AnyCaster<Any> {
  static Any cast(const Any& a) { return a; }
};
template <>
struct AnyCaster<bool> {
  static bool cast(const Any& a) { return a.as_bool(); }
};
template <class T>
struct AnyCaster<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static T cast(const Any& a) { return static_cast<T>(a.as_int()); }
};
template <class T>
struct AnyCaster<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static T cast(const Any& a) { return static_cast<T>(a.as_float()); }
};
template <>
struct AnyCaster<std::string> {
  static std::string cast(const Any& a) { return a.as_string(); }
};
template <>
struct AnyCaster<DataType> {
  static DataType cast(const Any& a) { return a.as_dtype(); }
};
template <>
struct AnyCaster<Device> {
  static Device cast(const Any& a) { return a.as_device(); }
};
template <>
struct AnyCaster<void*> {
  static void* cast(const Any& a) { return a.as_opaque_ptr(); }
};
// Object handles: none gives an undefined handle; anything else must be an
// object of the handle's node type (or a subtype).
template <class R>
struct AnyCaster<R, std::enable_if_t<std::is_base_of_v<ObjectRef, R>>> {
  static R cast(const Any& a) {
    if (a.is_none()) return R();
    if (!a.is_object_like()) {
      LOOM_THROW(TypeError) << "expected " << R::ContainerType::_type_key << ", got " << a.describe();
    }
    return downcast<R>(a.as_object_ref());
  }
};
}  // namespace detail

}  // namespace loom

#endif  // LOOM_OBJECT_ANY_H_
