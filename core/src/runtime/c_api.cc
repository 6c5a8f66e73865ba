// The runtime table of the C API (loom/c_api.h, docs/c-api.md): each entry
// converts between LoomValue and Any, runs the C++ runtime call inside
// c_api::guard (no exception crosses the boundary) and returns a status.
#include "loom/c_api.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "c_api_internal.h"
#include "loom/object/function.h"
#include "loom/object/reflection.h"
#include "loom/runtime/device_api.h"
#include "loom/runtime/library.h"
#include "loom/runtime/ndarray.h"
#include "loom/version.h"

namespace loom::c_api {

namespace {
thread_local std::string last_error_message;

DataType data_type(DLDataType t) { return DataType(static_cast<DataType::Code>(t.code), t.bits, t.lanes); }

Device device(DLDevice d) { return Device{static_cast<int32_t>(d.device_type), d.device_id}; }

// A caller's DLTensor as an NDArray over its memory (no copy).
runtime::NDArray wrap_dltensor(const DLTensor* t) {
  if (!t) throw Error("a LOOM_DLTENSOR argument is NULL");
  if (t->ndim < 0) throw Error("a LOOM_DLTENSOR argument has ndim " + std::to_string(t->ndim));
  std::vector<int64_t> shape(t->shape, t->shape + t->ndim);
  if (!runtime::is_compact(*t)) {
    std::string strides;
    for (int32_t k = 0; k < t->ndim; ++k) strides += (k ? ", " : "") + std::to_string(t->strides[k]);
    throw Error("a LOOM_DLTENSOR argument is not compact (strides (" + strides + ") for a shape of " +
                std::to_string(t->ndim) + " dimensions); pass a compact tensor or copy it first");
  }
  return runtime::NDArray::wrap(static_cast<char*>(t->data) + t->byte_offset, shape, data_type(t->dtype),
                                device(t->device));
}

char* copy_string(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (!out) throw Error("out of memory copying a string of " + std::to_string(s.size()) + " bytes");
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}
}  // namespace

LoomStatus fail(const std::string& message) {
  last_error_message = message;
  return LOOM_ERROR;
}

const char* last_error() { return last_error_message.c_str(); }

void set_last_error(const char* message) { last_error_message = message ? message : ""; }

Object* object_of(LoomObject* handle, const char* what) {
  if (!handle) throw Error(std::string(what) + " is NULL");
  return reinterpret_cast<Object*>(handle);
}

LoomObject* give(const ObjectRef& ref) {
  Object* o = ref.object_ptr().get();
  if (!o) return nullptr;
  o->inc_ref();
  return reinterpret_cast<LoomObject*>(o);
}

ObjectRef ref_of(LoomObject* handle) { return ObjectRef(ObjectPtr<Object>(reinterpret_cast<Object*>(handle))); }

ObjectRef take(LoomObject* handle) {
  if (!handle) return ObjectRef();
  ObjectRef ref = ref_of(handle);
  reinterpret_cast<Object*>(handle)->dec_ref();
  return ref;
}

std::shared_ptr<void> owned_resource(void* resource, void (*finalizer)(void*)) {
  return std::shared_ptr<void>(resource, [finalizer](void* r) {
    if (finalizer) finalizer(r);
  });
}

Any to_any(const LoomValue& v) {
  switch (v.kind) {
    case LOOM_NONE:
      return Any();
    case LOOM_BOOL:
      return Any(v.v.v_int != 0);
    case LOOM_INT:
      return Any(v.v.v_int);
    case LOOM_FLOAT:
      return Any(v.v.v_float);
    case LOOM_STR:
      if (!v.v.v_str) throw Error("a LOOM_STR value is NULL");
      return Any(std::string(v.v.v_str));
    case LOOM_OBJECT:
      return v.v.v_object ? Any(ObjectPtr<Object>(reinterpret_cast<Object*>(v.v.v_object))) : Any();
    case LOOM_DLTENSOR:
      return Any(wrap_dltensor(v.v.v_dltensor));
    case LOOM_DLMANAGED:
      if (!v.v.v_managed) throw Error("a LOOM_DLMANAGED argument is NULL");
      return Any(runtime::NDArray::from_dlpack(v.v.v_managed));
    default:
      throw Error("a LoomValue has kind " + std::to_string(v.kind) + ", which is none of LoomKind's");
  }
}

LoomValue to_value(const Any& a) {
  LoomValue out{};
  switch (a.kind()) {
    case AnyKind::kNone:
      out.kind = LOOM_NONE;
      break;
    case AnyKind::kBool:
      out.kind = LOOM_BOOL;
      out.v.v_int = a.as_bool() ? 1 : 0;
      break;
    case AnyKind::kInt:
      out.kind = LOOM_INT;
      out.v.v_int = a.as_int();
      break;
    case AnyKind::kFloat:
      out.kind = LOOM_FLOAT;
      out.v.v_float = a.as_float();
      break;
    case AnyKind::kStr:
      out.kind = LOOM_STR;
      out.v.v_str = copy_string(a.as_string());
      break;
    case AnyKind::kDataType:
      out.kind = LOOM_STR;
      out.v.v_str = copy_string(a.as_dtype().to_string());
      break;
    case AnyKind::kDevice:
      out.kind = LOOM_STR;
      out.v.v_str = copy_string(a.as_device().to_string());
      break;
    case AnyKind::kObject:
    case AnyKind::kFunction:
      out.kind = LOOM_OBJECT;
      out.v.v_object = give(a.as_object_ref());
      break;
    case AnyKind::kOpaquePtr:
      throw Error("the value is an opaque pointer, which cannot cross the C API");
  }
  return out;
}

void release_value(LoomValue* v) {
  if (!v) return;
  if (v->kind == LOOM_STR) std::free(const_cast<char*>(v->v.v_str));
  if (v->kind == LOOM_OBJECT && v->v.v_object) reinterpret_cast<Object*>(v->v.v_object)->dec_ref();
  *v = LoomValue{};
}

namespace {

template <class T>
T* out_pointer(T* out, const char* what) {
  if (!out) throw Error(std::string("the out-parameter ") + what + " is NULL");
  return out;
}

// The LoomValues of `args`, borrowed: strings point into the Anys, objects
// keep the Anys' references; dtype and device values become strings held
// in `strings`.
std::vector<LoomValue> borrowed_values(const Any* args, int32_t count, std::vector<std::string>& strings) {
  std::vector<LoomValue> out(static_cast<size_t>(count));
  strings.reserve(static_cast<size_t>(count));
  for (int32_t k = 0; k < count; ++k) {
    const Any& a = args[k];
    LoomValue& v = out[static_cast<size_t>(k)];
    switch (a.kind()) {
      case AnyKind::kStr:
        v.kind = LOOM_STR;
        v.v.v_str = a.as_string().c_str();
        break;
      case AnyKind::kDataType:
      case AnyKind::kDevice:
        strings.push_back(a.kind() == AnyKind::kDevice ? a.as_device().to_string() : a.as_dtype().to_string());
        v.kind = LOOM_STR;
        v.v.v_str = strings.back().c_str();
        break;
      case AnyKind::kObject:
      case AnyKind::kFunction:
        v.kind = LOOM_OBJECT;
        v.v.v_object = reinterpret_cast<LoomObject*>(const_cast<Object*>(a.object()));
        break;
      default:
        v = to_value(a);  // scalars: nothing to own
    }
  }
  return out;
}

const char* c_last_error() { return last_error(); }
void c_set_last_error(const char* message) { set_last_error(message); }

LoomStatus object_retain(LoomObject* object) {
  return guard([&] { object_of(object, "the object")->inc_ref(); });
}

LoomStatus object_release(LoomObject* object) {
  return guard([&] {
    if (object) reinterpret_cast<Object*>(object)->dec_ref();
  });
}

LoomStatus object_type_key(LoomObject* object, const char** out) {
  return guard([&] { *out_pointer(out, "out") = object_of(object, "the object")->type_key().c_str(); });
}

LoomStatus object_use_count(LoomObject* object, int32_t* out) {
  return guard([&] { *out_pointer(out, "out") = object_of(object, "the object")->use_count(); });
}

LoomStatus object_get_field(LoomObject* object, const char* name, LoomValue* out) {
  return guard([&] {
    out_pointer(out, "out");
    const Object* o = object_of(object, "the object");
    if (!name) throw Error("the field name is NULL");
    const TypeInfo& info = TypeRegistry::info(o->type_index());
    const FieldInfo* field = info.field(name);
    if (!field) {
      std::string names;
      for (const FieldInfo& f : info.fields) names += (names.empty() ? "" : ", ") + f.name;
      throw Error("object of type " + info.key + " has no field '" + name +
                  "' (its fields: " + (names.empty() ? "none" : names) + ")");
    }
    *out = to_value(field->get(o));
  });
}

LoomStatus value_release(LoomValue* value) {
  return guard([&] { release_value(value); });
}

LoomStatus module_load(const char* path, const LoomLoadOptions* options, LoomObject** out) {
  return guard([&] {
    out_pointer(out, "out");
    if (!path) throw Error("the library path is NULL");
    LoomLoadOptions o{sizeof(LoomLoadOptions), 0};
    if (options) o = with_defaults(options, o, "module_load's LoomLoadOptions");
    *out = give(o.inspect_only ? runtime::inspect_library(path) : runtime::load_module(path));
  });
}

runtime::Module module_of(LoomObject* handle) { return handle_as<runtime::Module>(handle, "a module"); }

LoomStatus module_get_function(LoomObject* module, const char* name, LoomObject** out) {
  return guard([&] {
    out_pointer(out, "out");
    if (!name) throw Error("the function name is NULL");
    *out = give(module_of(module).get_function(name));
  });
}

LoomStatus module_function_names(LoomObject* module, LoomValue* out) {
  return guard([&] {
    out_pointer(out, "out");
    std::string names;
    for (const std::string& n : module_of(module).node()->function_names()) names += n + "\n";
    out->kind = LOOM_STR;
    out->v.v_str = copy_string(names);
  });
}

Function function_of(LoomObject* handle) { return handle_as<Function>(handle, "a function"); }

// Calls the deleters of the LOOM_DLMANAGED arguments args[from, to): they
// belong to Loom once passed, also when the call fails before it takes them.
void release_managed(const LoomValue* args, int32_t from, int32_t to) {
  for (int32_t j = from; args && j < to; ++j)
    if (args[j].kind == LOOM_DLMANAGED && args[j].v.v_managed && args[j].v.v_managed->deleter)
      args[j].v.v_managed->deleter(args[j].v.v_managed);
}

LoomStatus function_call(LoomObject* function, const LoomValue* args, int32_t num_args, LoomValue* result) {
  std::vector<Any> packed;  // the arguments taken so far (their Anys own the DLPack tensors)
  return guard([&] {
    if (!result) {
      release_managed(args, 0, num_args);
      throw Error("the out-parameter result is NULL");
    }
    *result = LoomValue{};
    if (num_args < 0 || (num_args > 0 && !args))
      throw Error("function_call: " + std::to_string(num_args) + " arguments at " + (args ? "args" : "NULL"));
    packed.reserve(static_cast<size_t>(num_args));
    for (int32_t k = 0; k < num_args; ++k) {
      try {
        packed.push_back(to_any(args[k]));  // from_dlpack calls the deleter itself when it throws
      } catch (const std::exception& e) {
        release_managed(args, k + 1, num_args);
        throw Error("argument " + std::to_string(k) + ": " + e.what());
      }
    }
    Function f = function_of(function);
    *result = to_value(f.call(packed.data(), num_args));
  });
}

LoomStatus function_from_c(LoomCFunction fn, void* resource, void (*finalizer)(void*), LoomObject** out) {
  return guard([&] {
    out_pointer(out, "out");
    if (!fn) throw Error("the C function is NULL");
    std::shared_ptr<void> owned = owned_resource(resource, finalizer);
    Function f(
        [fn, owned](const Any* args, int32_t count) -> Any {
          std::vector<std::string> strings;
          std::vector<LoomValue> values = borrowed_values(args, count, strings);
          LoomValue result{};
          LoomStatus status = call_back([&] { return fn(owned.get(), values.data(), count, &result); });
          // An object it returns is passed to Loom with that reference; a
          // string stays the callback's (copied below); a DLPack tensor is
          // refused, and one passed with its ownership is given back.
          ObjectRef object = result.kind == LOOM_OBJECT ? take(result.v.v_object) : ObjectRef();
          if (result.kind == LOOM_DLMANAGED) release_managed(&result, 0, 1);
          if (status != LOOM_OK)
            throw Error(last_error_message.empty() ? "a C function failed without an error message"
                                                   : last_error_message);
          if (result.kind == LOOM_DLTENSOR || result.kind == LOOM_DLMANAGED)
            throw Error("a C function returned a DLPack tensor; return a tensor object (tensor_from_dlpack)");
          if (result.kind == LOOM_OBJECT) return object.defined() ? Any(object) : Any();
          return to_any(result);  // a scalar, or a copy of a string
        },
        "C function");
    *out = give(f);
  });
}

LoomStatus global_function_get(const char* name, LoomObject** out) {
  return guard([&] {
    out_pointer(out, "out");
    if (!name) throw Error("the function name is NULL");
    auto f = FunctionRegistry::find(name);
    *out = f ? give(*f) : nullptr;
  });
}

LoomStatus global_function_register(const char* name, LoomObject* function, int32_t allow_override) {
  return guard([&] {
    if (!name) throw Error("the function name is NULL");
    FunctionRegistry::register_function(name, function_of(function), "registered through the C API",
                                        allow_override != 0);
  });
}

runtime::NDArray tensor_of(LoomObject* handle) { return handle_as<runtime::NDArray>(handle, "a tensor"); }

LoomStatus tensor_empty(const int64_t* shape, int32_t ndim, DLDataType dtype, DLDevice dev, LoomObject** out) {
  return guard([&] {
    out_pointer(out, "out");
    if (ndim < 0 || (ndim > 0 && !shape))
      throw Error("tensor_empty: a shape of " + std::to_string(ndim) + " dimensions");
    *out = give(runtime::NDArray::empty(std::vector<int64_t>(shape, shape + ndim), data_type(dtype), device(dev)));
  });
}

LoomStatus tensor_from_dlpack(DLManagedTensor* managed, LoomObject** out) {
  return guard([&] {
    if (!out) {
      if (managed && managed->deleter) managed->deleter(managed);
      throw Error("the out-parameter out is NULL");
    }
    if (!managed) throw Error("the DLManagedTensor is NULL");
    *out = give(runtime::NDArray::from_dlpack(managed));
  });
}

LoomStatus tensor_to_dlpack(LoomObject* tensor, DLManagedTensor** out) {
  return guard([&] { *out_pointer(out, "out") = tensor_of(tensor).to_dlpack(); });
}

LoomStatus tensor_get_dltensor(LoomObject* tensor, const DLTensor** out) {
  return guard([&] { *out_pointer(out, "out") = &tensor_of(tensor)->dl_tensor(); });
}

LoomStatus tensor_copy(LoomObject* src, LoomObject* dst) {
  return guard([&] { tensor_of(dst).copy_from(tensor_of(src)); });
}

LoomStatus device_list(DLDevice* out, int32_t capacity, int32_t* count) {
  return guard([&] {
    out_pointer(count, "count");
    if (capacity > 0 && !out) throw Error("device_list: capacity " + std::to_string(capacity) + " but out is NULL");
    int32_t n = 0;
    for (const std::string& name : runtime::DeviceAPIRegistry::list()) {
      Device d = Device::parse(name);
      if (n < capacity) out[n] = DLDevice{static_cast<DLDeviceType>(d.device_type), 0};
      ++n;
    }
    *count = n;
  });
}

LoomStatus device_synchronize(DLDevice dev) {
  return guard([&] {
    Device d = device(dev);
    runtime::DeviceAPIRegistry::get(d).synchronize(d, nullptr);
  });
}

// A device API whose operations are a C plugin's callbacks.
class CDeviceAPI : public runtime::DeviceAPI {
 public:
  CDeviceAPI(std::string name, const LoomDeviceInterface& device, std::shared_ptr<void> resource)
      : name_(std::move(name)), device_(device), resource_(std::move(resource)) {}
  void* alloc(Device d, size_t bytes, size_t alignment) override {
    void* p = device_.alloc(resource_.get(), dl_device(d), bytes ? bytes : 1, alignment);
    if (!p)
      throw Error("device " + d.to_string() + " (" + name_ + "): out of memory allocating " + std::to_string(bytes) +
                  " bytes");
    return p;
  }
  void free(Device d, void* ptr) override { device_.free(resource_.get(), dl_device(d), ptr); }
  void copy(const DLTensor& from, DLTensor& to, void*) override {
    if (device_.copy(resource_.get(), &from, &to) != LOOM_OK)
      throw Error("device " + name_ + ": copy failed: " + last_error_message);
  }
  void synchronize(Device d, void*) override {
    if (device_.synchronize && device_.synchronize(resource_.get(), dl_device(d)) != LOOM_OK)
      throw Error("device " + d.to_string() + ": synchronize failed: " + last_error_message);
  }
  void* alloc_workspace(Device d, size_t bytes) override { return alloc(d, bytes, 64); }
  void free_workspace(Device d, void* ptr) override { free(d, ptr); }

 private:
  static DLDevice dl_device(Device d) { return DLDevice{static_cast<DLDeviceType>(d.device_type), d.device_id}; }
  std::string name_;
  LoomDeviceInterface device_;
  std::shared_ptr<void> resource_;
};

LoomStatus device_register(const char* name, int32_t type_code, const LoomDeviceInterface* device, void* resource,
                           void (*finalizer)(void*)) {
  return guard([&] {
    if (!name) throw Error("device_register: the device name is NULL");
    // The operations an older caller's struct does not know stay NULL.
    LoomDeviceInterface d = with_defaults(device, LoomDeviceInterface{},
                                          std::string("device_register('") + name + "')'s LoomDeviceInterface");
    if (!d.alloc || !d.free || !d.copy)
      throw Error(std::string("device_register('") + name + "'): alloc, free and copy are required");
    if (type_code != 0) {
      Device::register_type(name, type_code);
    } else if (!Device::type_of(name)) {
      throw Error(std::string("device_register('") + name +
                  "'): Loom knows no device of that name; give a vendor type code (64 to 127)");
    }
    runtime::DeviceAPIRegistry::register_api(
        name, std::make_shared<CDeviceAPI>(name, d, owned_resource(resource, finalizer)));
  });
}

// Version 1: frozen.  New entries go at the end of LoomApi, in a new version.
const LoomApi kApi = {
    sizeof(LoomApi),
    LOOM_API_VERSION,
    c_last_error,
    c_set_last_error,
    object_retain,
    object_release,
    object_type_key,
    object_use_count,
    object_get_field,
    value_release,
    module_load,
    module_get_function,
    module_function_names,
    function_call,
    function_from_c,
    global_function_get,
    global_function_register,
    tensor_empty,
    tensor_from_dlpack,
    tensor_to_dlpack,
    tensor_get_dltensor,
    tensor_copy,
    device_list,
    device_synchronize,
    device_register,
};
}  // namespace

bool version_supported(uint32_t version, const char* table) {
  if (version >= 1 && version <= LOOM_API_VERSION) return true;
  fail(std::string(table) + " version " + std::to_string(version) + " was asked for; this library (Loom " +
       LOOM_VERSION + ") has versions 1 to " + std::to_string(LOOM_API_VERSION) +
       (version > LOOM_API_VERSION ? ": the program was built against a newer Loom" : ""));
  return false;
}

}  // namespace loom::c_api

extern "C" {

const LoomApi* LoomGetApi(uint32_t version) {
  return loom::c_api::version_supported(version, "LoomApi") ? &loom::c_api::kApi : nullptr;
}

const char* LoomGetLastError(void) { return loom::c_api::last_error(); }

}  // extern "C"
