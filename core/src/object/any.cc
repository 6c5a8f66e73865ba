#include "loom/object/any.h"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "loom/object/containers.h"
#include "loom/object/function.h"
#include "loom/support/registration.h"
#include "loom/support/strings.h"

namespace loom {

// ---------------------------------------------------------------------------
// DataType
// ---------------------------------------------------------------------------
namespace {
struct DTypeName {
  const char* prefix;
  DataType::Code code;
};
// Longest prefixes first so that "uint" is not read as "int".
constexpr DTypeName kDTypeNames[] = {{"bfloat", DataType::kBFloat}, {"float", DataType::kFloat},
                                     {"uint", DataType::kUInt},     {"int", DataType::kInt},
                                     {"bool", DataType::kBool},     {"handle", DataType::kHandle}};

bool valid_bits(DataType::Code code, int bits) {
  switch (code) {
    case DataType::kInt:
    case DataType::kUInt:
      return bits == 1 || bits == 4 || bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case DataType::kFloat:
      return bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case DataType::kBFloat:
      return bits == 16;
    case DataType::kBool:
      return bits == 8;
    case DataType::kHandle:
      return bits == 64;
  }
  return false;
}
}  // namespace

std::string DataType::to_string() const {
  std::string out;
  switch (code) {
    case kInt:
      out = "int" + std::to_string(bits);
      break;
    case kUInt:
      out = "uint" + std::to_string(bits);
      break;
    case kFloat:
      out = "float" + std::to_string(bits);
      break;
    case kBFloat:
      out = "bfloat" + std::to_string(bits);
      break;
    case kBool:
      out = "bool";
      break;
    case kHandle:
      out = "handle";
      break;
    default:
      out = "unknown" + std::to_string(code) + "_" + std::to_string(bits);
  }
  if (lanes != 1) out += "x" + std::to_string(lanes);
  return out;
}

DataType DataType::parse(const std::string& text) {
  auto fail = [&]() -> DataType {
    static const std::vector<std::string> common = {"int8",    "int16",    "int32",  "int64",   "uint8",
                                                    "uint16",  "uint32",   "uint64", "float16", "float32",
                                                    "float64", "bfloat16", "bool",   "handle"};
    LOOM_THROW(Error) << "invalid data type '" << text << "'" << did_you_mean(text, common)
                      << (did_you_mean(text, common).empty() ? "; expected" : " (expected")
                      << " int8/16/32/64, uint.., float16/32/64, bfloat16, bool or handle, optionally followed by "
                         "xLANES, e.g. float32x4"
                      << (did_you_mean(text, common).empty() ? "" : ")");
  };
  for (const auto& name : kDTypeNames) {
    if (!starts_with(text, name.prefix)) continue;
    std::string rest = text.substr(std::strlen(name.prefix));
    std::string bits_text = rest, lanes_text;
    size_t x = rest.find('x');
    if (x != std::string::npos) {
      bits_text = rest.substr(0, x);
      lanes_text = rest.substr(x + 1);
      if (lanes_text.empty()) return fail();
    }
    auto digits = [](const std::string& s) {
      return !s.empty() && s.size() <= 5 && s.find_first_not_of("0123456789") == std::string::npos;
    };
    int bits = 0;
    if (name.code == kBool) {
      if (!bits_text.empty()) return fail();
      bits = 8;
    } else if (name.code == kHandle) {
      if (!bits_text.empty()) return fail();
      bits = 64;
    } else {
      if (!digits(bits_text)) return fail();
      bits = std::stoi(bits_text);
    }
    int lanes = 1;
    if (!lanes_text.empty()) {
      if (!digits(lanes_text)) return fail();
      lanes = std::stoi(lanes_text);
      if (lanes < 1 || lanes > 65535) return fail();
    }
    if (!valid_bits(name.code, bits)) return fail();
    return DataType(name.code, bits, lanes);
  }
  return fail();
}

// ---------------------------------------------------------------------------
// Device
// ---------------------------------------------------------------------------
namespace {
struct DeviceName {
  const char* name;
  int32_t type;
};
constexpr DeviceName kDeviceNames[] = {
    {"cpu", Device::kCPU},       {"cuda", Device::kCUDA},     {"cuda_host", Device::kCUDAHost},
    {"opencl", Device::kOpenCL}, {"vulkan", Device::kVulkan}, {"metal", Device::kMetal},
    {"ext_dev", Device::kExtDev}};

// Vendor devices, by registration.
struct VendorDevice {
  std::string name;
  int32_t type;
  std::string owner;
};
std::mutex& vendor_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::vector<VendorDevice>& vendor_devices() {
  static auto* v = new std::vector<VendorDevice>;
  return *v;
}

}  // namespace

std::optional<int32_t> Device::type_of(const std::string& name) {
  for (const auto& entry : kDeviceNames)
    if (name == entry.name) return entry.type;
  std::lock_guard<std::mutex> lock(vendor_mutex());
  for (const VendorDevice& v : vendor_devices())
    if (v.name == name) return v.type;
  return std::nullopt;
}

namespace {
std::vector<std::string> device_names() {
  std::vector<std::string> names;
  for (const auto& entry : kDeviceNames) names.push_back(entry.name);
  std::lock_guard<std::mutex> lock(vendor_mutex());
  for (const VendorDevice& v : vendor_devices()) names.push_back(v.name);
  return names;
}
}  // namespace

std::string Device::to_string() const {
  std::string id = ":" + std::to_string(device_id);
  for (const auto& entry : kDeviceNames)
    if (entry.type == device_type) return std::string(entry.name) + id;
  {
    std::lock_guard<std::mutex> lock(vendor_mutex());
    for (const VendorDevice& v : vendor_devices())
      if (v.type == device_type) return v.name + id;
  }
  return "device" + std::to_string(device_type) + id;
}

void Device::register_type(const std::string& name, int32_t type) {
  bool well_formed = !name.empty() && name[0] >= 'a' && name[0] <= 'z' &&
                     name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
  if (!well_formed) {
    LOOM_THROW(Error) << "device name '" << name << "': use lower-case letters, digits and '_', starting with a letter";
  }
  for (const auto& entry : kDeviceNames) {
    if (name == entry.name) LOOM_THROW(Error) << "device name '" << name << "' is built in (DLPack's own device)";
  }
  if (type < kVendorFirst || type > kVendorLast) {
    LOOM_THROW(Error) << "device '" << name << "': code " << type << " is not a vendor device code (" << kVendorFirst
                      << " to " << kVendorLast << "; the codes below are DLPack's)";
  }
  std::string owner = RegistrationScope::current_owner();
  {
    std::lock_guard<std::mutex> lock(vendor_mutex());
    for (const VendorDevice& v : vendor_devices()) {
      if (v.name == name && v.type == type) return;
      if (v.name == name || v.type == type) {
        LOOM_THROW(Error) << "device '" << name << "' (code " << type
                          << "): " << (v.name == name ? "the name" : "the code") << " is already registered by "
                          << v.owner << " as '" << v.name << "' (code " << v.type << ")";
      }
    }
    vendor_devices().push_back(VendorDevice{name, type, owner});
  }
  RegistrationScope::record_undo([name] {
    std::lock_guard<std::mutex> lock(vendor_mutex());
    auto& all = vendor_devices();
    for (auto it = all.begin(); it != all.end(); ++it) {
      if (it->name == name) {
        all.erase(it);
        return;
      }
    }
  });
}

Device Device::parse(const std::string& text) {
  std::string name = text, id_text;
  size_t colon = text.find(':');
  if (colon != std::string::npos) {
    name = text.substr(0, colon);
    id_text = text.substr(colon + 1);
  }
  std::optional<int32_t> type = type_of(name);
  // A vendor's device comes with its plugin.
  if (!type && !name.empty() && request_capability("device:" + name)) type = type_of(name);
  if (!type) {
    std::vector<std::string> names = with_available(device_names(), "device");
    LOOM_THROW(Error) << "unknown device '" << name << "' in '" << text << "'" << did_you_mean(name, names)
                      << " (known: " << join(names, ", ") << ")" << unknown_providers_note();
  }
  int id = 0;
  if (colon != std::string::npos) {
    if (id_text.empty() || id_text.size() > 6 || id_text.find_first_not_of("0123456789") != std::string::npos)
      LOOM_THROW(Error) << "invalid device '" << text << "': the id after ':' must be a number";
    id = std::stoi(id_text);
  }
  Device device;
  device.device_type = *type;
  device.device_id = id;
  return device;
}

// ---------------------------------------------------------------------------
// Any
// ---------------------------------------------------------------------------
const char* any_kind_name(AnyKind kind) {
  switch (kind) {
    case AnyKind::kNone:
      return "none";
    case AnyKind::kBool:
      return "bool";
    case AnyKind::kInt:
      return "int";
    case AnyKind::kFloat:
      return "float";
    case AnyKind::kStr:
      return "str";
    case AnyKind::kDataType:
      return "dtype";
    case AnyKind::kDevice:
      return "device";
    case AnyKind::kObject:
      return "object";
    case AnyKind::kFunction:
      return "function";
    case AnyKind::kOpaquePtr:
      return "handle";
  }
  return "?";
}

Any::Any(const std::string& v) { set_object(make_object<StringNode>(v).get()); }

void Any::set_object(Object* object) {
  if (!object) {
    kind_ = AnyKind::kNone;
    return;
  }
  if (object->type_index() == StringNode::runtime_type_index()) {
    kind_ = AnyKind::kStr;
  } else if (object->is_instance<FunctionNode>()) {
    kind_ = AnyKind::kFunction;
  } else {
    kind_ = AnyKind::kObject;
  }
  value_.object = object;
  object->inc_ref();
}

Any::Any(const Any& other) : kind_(other.kind_), value_(other.value_) {
  if (is_object_like()) value_.object->inc_ref();
}

Any::Any(Any&& other) noexcept : kind_(other.kind_), value_(other.value_) { other.kind_ = AnyKind::kNone; }

Any& Any::operator=(Any other) noexcept {
  std::swap(kind_, other.kind_);
  std::swap(value_, other.value_);
  return *this;
}

Any::~Any() {
  if (is_object_like()) value_.object->dec_ref();
}

ObjectRef Any::as_object_ref() const {
  if (is_none()) return ObjectRef();
  if (!is_object_like()) fail_cast("object");
  return ObjectRef(ObjectPtr<Object>(value_.object));
}

void Any::fail_cast(const char* expected) const {
  LOOM_THROW(TypeError) << "expected " << expected << ", got " << describe();
}

bool Any::as_bool() const {
  if (kind_ != AnyKind::kBool) fail_cast("bool");
  return value_.b;
}

int64_t Any::as_int() const {
  if (kind_ != AnyKind::kInt) fail_cast("int");
  return value_.i;
}

double Any::as_float() const {
  if (kind_ == AnyKind::kInt) return static_cast<double>(value_.i);
  if (kind_ != AnyKind::kFloat) fail_cast("float");
  return value_.f;
}

const std::string& Any::as_string() const {
  if (kind_ != AnyKind::kStr) fail_cast("str");
  return static_cast<const StringNode*>(value_.object)->value;
}

DataType Any::as_dtype() const {
  if (kind_ != AnyKind::kDataType) fail_cast("dtype");
  return value_.dtype;
}

Device Any::as_device() const {
  if (kind_ != AnyKind::kDevice) fail_cast("device");
  return value_.device;
}

void* Any::as_opaque_ptr() const {
  if (kind_ == AnyKind::kNone) return nullptr;
  if (kind_ != AnyKind::kOpaquePtr) fail_cast("handle");
  return value_.ptr;
}

std::string Any::describe() const {
  switch (kind_) {
    case AnyKind::kNone:
      return "none";
    case AnyKind::kBool:
      return value_.b ? "bool true" : "bool false";
    case AnyKind::kInt:
      return "int " + std::to_string(value_.i);
    case AnyKind::kFloat: {
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), "%g", value_.f);
      return std::string("float ") + buffer;
    }
    case AnyKind::kStr: {
      const std::string& s = as_string();
      return "str '" + (s.size() > 40 ? s.substr(0, 37) + "..." : s) + "'";
    }
    case AnyKind::kDataType:
      return "dtype " + value_.dtype.to_string();
    case AnyKind::kDevice:
      return "device " + value_.device.to_string();
    case AnyKind::kObject:
      return "object " + value_.object->type_key();
    case AnyKind::kFunction: {
      const auto* f = static_cast<const FunctionNode*>(value_.object);
      return f->name.empty() ? "function" : "function " + f->name;
    }
    case AnyKind::kOpaquePtr:
      return "handle";
  }
  return "?";
}

}  // namespace loom
