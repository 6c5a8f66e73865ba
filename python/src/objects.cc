// Objects in Python through reflection (docs/python.md): one Object class
// whose attributes are the reflected fields of whatever node it holds, so
// every node type, a plugin's included, works without bindings of its own;
// containers as sequences and mappings; functions as callables; and the
// conversions between Python values and Any.
#include <pybind11/stl.h>

#include <map>
#include <set>
#include <memory>
#include <typeinfo>
#include <string>
#include <vector>

#include "bind.h"
#include "loom/text/text.h"
#include "loom/object/containers.h"
#include "loom/object/reflection.h"
#include "loom/object/structural.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"
#include "loom/support/strings.h"
#include "loom/transform/pass.h"

namespace loom::python {

namespace {
const TypeInfo& info_of(const ObjectRef& ref) { return TypeRegistry::info(ref->type_index()); }

std::vector<std::string> field_names(const ObjectRef& ref) {
  std::vector<std::string> names;
  for (const FieldInfo& f : info_of(ref).fields) names.push_back(f.name);
  return names;
}

py::list map_keys(const Map& map) {
  py::list keys;
  if (map.get())
    for (const auto& [k, v] : map.get()->items) keys.append(k);
  return keys;
}

// Constants larger than this print as a description unless show_meta
// (docs/python.md, "IR"): an imported model's weights are megabytes.
constexpr uint64_t kElideConstantsOver = 1024;

// The text form for IR nodes; the generic repr for the rest.
std::string text_of(const ObjectRef& ref, bool show_meta = false) {
  try {
    // A module prints in its canonical form (free variables declared with
    // their types, a meta section), parseable when nothing is elided; any
    // other node on its own.
    if (ref.as<ir::IRModuleNode>()) {
      auto module = downcast<ir::IRModule>(ref);
      return show_meta ? text::print_module(module) : text::print_module(module, kElideConstantsOver);
    }
    return ir::to_text(Any(ref));
  } catch (const Error&) {
    return repr(Any(ref));
  }
}

}  // namespace

std::shared_ptr<py::object> keep(py::object value) {
  return std::shared_ptr<py::object>(new py::object(std::move(value)), [](py::object* held) {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      delete held;
    } else {
      held->release();  // the interpreter is gone: nothing to drop
      delete held;
    }
  });
}

namespace {
std::string describe_exception(const py::error_already_set& e) {
  std::string type = py::str(e.type().attr("__name__"));
  std::string value = e.value() ? std::string(py::str(e.value())) : "";
  return value.empty() ? type : type + ": " + value;
}
}  // namespace

PythonError::PythonError(py::error_already_set& e)
    : Error(describe_exception(e)), type_(keep(e.type())), value_(keep(e.value())), trace_(keep(e.trace())) {}

void PythonError::restore() const {
  PyErr_Restore(type_->inc_ref().ptr(), value_->inc_ref().ptr(), trace_->inc_ref().ptr());
}

Any call_python(const py::object& f, const Any* args, int32_t count, const char* what) {
  py::gil_scoped_acquire gil;
  py::tuple py_args(count);
  for (int32_t i = 0; i < count; ++i) py_args[i] = to_py(args[i]);
  try {
    return to_any(f(*py_args), what);
  } catch (py::error_already_set& e) {
    throw PythonError(e);
  } catch (py::builtin_exception& e) {  // a conversion of the result
    throw TypeError(e.what());
  }
}

Any to_any(py::handle value, const char* what) {
  if (value.is_none()) return Any();
  if (py::isinstance<py::bool_>(value)) return Any(value.cast<bool>());
  if (py::isinstance<py::int_>(value)) {
    try {
      return Any(value.cast<int64_t>());
    } catch (const py::cast_error&) {
      throw py::value_error(std::string(what) + ": the int " + py::str(value).cast<std::string>() +
                            " does not fit in 64 bits");
    }
  }
  if (py::isinstance<py::float_>(value)) return Any(value.cast<double>());
  if (py::isinstance<py::str>(value)) return Any(value.cast<std::string>());
  // bytes arrive as a str holding them (a command stream, a payload).
  if (py::isinstance<py::bytes>(value)) return Any(value.cast<std::string>());
  if (py::isinstance<ObjectRef>(value)) return Any(value.cast<ObjectRef>());
  if (py::isinstance<DataType>(value)) return Any(value.cast<DataType>());
  if (py::isinstance<Device>(value)) return Any(value.cast<Device>());
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    std::vector<Any> items;
    for (py::handle item : value) items.push_back(to_any(item, what));
    return Any(Array(items));
  }
  if (py::isinstance<py::dict>(value)) {
    std::map<std::string, Any> items;
    for (auto [k, v] : value.cast<py::dict>()) {
      if (!py::isinstance<py::str>(k)) {
        throw TypeError(std::string(what) + ": a dict's keys must be str, got " +
                        py::str(py::type::of(k).attr("__name__")).cast<std::string>());
      }
      items[k.cast<std::string>()] = to_any(v, what);
    }
    return Any(Map(items));
  }
  if (py::hasattr(value, "__dlpack__")) return Any(ndarray_from_dlpack(value, what));
  if (PyCallable_Check(value.ptr())) {
    std::shared_ptr<py::object> f = keep(py::reinterpret_borrow<py::object>(value));
    std::string name = py::hasattr(value, "__name__") ? py::str(value.attr("__name__")).cast<std::string>() : "";
    return Any(
        Function([f](const Any* args,
                     int32_t count) { return call_python(*f, args, count, "the return value of a Python function"); },
                 name));
  }
  throw TypeError(std::string(what) + ": cannot pass a Python " +
                  py::str(py::type::of(value).attr("__name__")).cast<std::string>() + " to Loom");
}

py::object to_py(const Any& value) {
  switch (value.kind()) {
    case AnyKind::kNone:
      return py::none();
    case AnyKind::kBool:
      return py::bool_(value.as_bool());
    case AnyKind::kInt:
      return py::int_(value.as_int());
    case AnyKind::kFloat:
      return py::float_(value.as_float());
    case AnyKind::kStr:
      return py::str(value.as_string());
    case AnyKind::kDataType:
      return py::cast(value.as_dtype());
    case AnyKind::kDevice:
      return py::cast(value.as_device());
    case AnyKind::kOpaquePtr:
      return py::capsule(value.as_opaque_ptr(), "loom.handle");
    case AnyKind::kFunction:
      return py::cast(value.cast<Function>());
    case AnyKind::kObject:
      break;
  }
  ObjectRef ref = value.as_object_ref();
  if (ref.as<runtime::NDArrayNode>()) return py::cast(runtime::NDArray(ref.object_ptr()));
  if (ref.as<ArrayNode>()) return py::cast(Array(ref.object_ptr()));
  if (ref.as<MapNode>()) return py::cast(Map(ref.object_ptr()));
  if (ref.as<runtime::ModuleNode>()) return py::cast(runtime::Module(ref.object_ptr()));
  if (ref.as<transform::PassNode>()) return py::cast(transform::Pass(ref.object_ptr()));
  return py::cast(ref);
}

void bind_objects(py::module_& m) {
  py::class_<DataType>(m, "DataType", "an element type: float32, int8x4, bool, ...")
      .def(py::init([](const std::string& text) { return DataType::parse(text); }), py::arg("text"))
      .def_readonly("bits", &DataType::bits)
      .def_readonly("lanes", &DataType::lanes)
      .def("__str__", &DataType::to_string)
      .def("__repr__", [](const DataType& t) { return "loom.DataType('" + t.to_string() + "')"; })
      .def("__eq__", [](const DataType& a, const DataType& b) { return a == b; })
      .def("__eq__", [](const DataType& a, const std::string& b) { return a.to_string() == b; })
      .def("__hash__", [](const DataType& t) { return py::hash(py::str(t.to_string())); });
  py::implicitly_convertible<std::string, DataType>();

  py::class_<Device>(m, "Device", "a device: cpu:0, opencl:1, ...")
      .def(py::init([](const std::string& text) { return Device::parse(text); }), py::arg("text"))
      .def_readonly("device_type", &Device::device_type)
      .def_readonly("device_id", &Device::device_id)
      .def("__str__", &Device::to_string)
      .def("__repr__", [](const Device& d) { return "loom.Device('" + d.to_string() + "')"; })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__hash__", [](const Device& d) { return py::hash(py::str(d.to_string())); });

  py::class_<ObjectRef>(m, "Object",
                        "any Loom object; its attributes are the fields its type reflects (type_info().fields)")
      .def_property_readonly("type_key", [](const ObjectRef& o) { return o->type_key(); })
      .def("fields", &field_names, "the names of the reflected fields, inherited first")
      .def("__getattr__",
           [](const ObjectRef& o, const std::string& name) -> py::object {
             const FieldInfo* f = info_of(o).field(name);
             if (!f) {
               std::vector<std::string> names = field_names(o);
               throw py::attribute_error("'" + o->type_key() + "' has no field '" + name + "'" +
                                         did_you_mean(name, names) + " (fields: " + join(names, ", ") + ")");
             }
             return to_py(f->get(o.get()));
           })
      .def("__dir__",
           [](py::object self) {
             py::list names = py::module_::import("builtins").attr("object").attr("__dir__")(self);
             for (const std::string& n : field_names(self.cast<ObjectRef>())) names.append(n);
             return names;
           })
      .def("same_as", &ObjectRef::same_as, "whether both are the same object (identity)")
      .def(
          "is_instance",
          [](const ObjectRef& o, const std::string& type_key) {
            return o->is_instance_of(TypeRegistry::info(type_key).index);
          },
          py::arg("type_key"), "whether the node's type is `type_key` or derives from it")
      .def("__eq__", &ObjectRef::same_as)
      .def("__hash__", [](const ObjectRef& o) { return reinterpret_cast<intptr_t>(o.get()); })
      .def("__repr__", [](const ObjectRef& ref) { return text_of(ref); })
      .def(
          "script",
          [](const ObjectRef& ref, bool show_meta, const std::string& format) -> py::object {
            if (format == "text") return py::str(text_of(ref, show_meta));
            if (format == "python") {
              if (!ref.as<ir::IRModuleNode>()) throw TypeError("script(format=\"python\") prints an IRModule");
              return py::module_::import("loom.script").attr("script")(ref);  // docs/hybrid-script.md
            }
            throw TypeError("script's format is \"text\" or \"python\", got \"" + format + "\"");
          },
          py::arg("show_meta") = false, py::arg("format") = "text",
          "the text format of this node; a module's constants over 1 KiB are described, not written, unless "
          "show_meta=True (only then does the text parse back); format=\"python\": a module as hybrid script, "
          "everything written (docs/hybrid-script.md)");

  py::class_<Array, ObjectRef>(m, "Array", "an immutable sequence of values")
      .def("__len__", &Array::size)
      .def("__getitem__",
           [](const Array& a, int64_t i) {
             int64_t n = static_cast<int64_t>(a.size());
             if (i < 0) i += n;
             if (i < 0 || i >= n)
               throw py::index_error("index " + std::to_string(i) + " out of range for " + std::to_string(n));
             return to_py(a[static_cast<size_t>(i)]);
           })
      .def("__iter__", [](const Array& a) {
        py::list items;
        for (const Any& v : a) items.append(to_py(v));
        return py::iter(items);
      });

  py::class_<Map, ObjectRef>(m, "Map", "an immutable mapping from str to values")
      .def("__len__", &Map::size)
      .def("__iter__", [](const Map& map) { return py::iter(map_keys(map)); })
      .def("__contains__", &Map::contains)
      .def("__getitem__",
           [](const Map& map, const std::string& key) {
             if (!map.contains(key)) throw py::key_error(key);
             return to_py(map.at(key));
           })
      .def("keys", &map_keys)
      .def("items", [](const Map& map) {
        py::list items;
        if (map.get())
          for (const auto& [k, v] : map.get()->items) items.append(py::make_tuple(k, to_py(v)));
        return items;
      });

  py::class_<Function, ObjectRef>(m, "Function", "a Loom function: call it with Python values")
      .def_property_readonly("name", [](const Function& f) { return f->name; })
      .def("__call__", [](const Function& f, py::args args) {
        std::vector<Any> packed;
        packed.reserve(args.size());
        for (size_t i = 0; i < args.size(); ++i) packed.push_back(to_any(args[i], "argument"));
        Any result;
        std::string failure;
        {
          py::gil_scoped_release release;
          try {
            result = f.call(packed.data(), static_cast<int32_t>(packed.size()));
          } catch (const Error& e) {
            // A plain Error is a failure while the function ran; the
            // subclasses (a wrong argument, an unknown name, a Python
            // exception, ...) keep their own Python class.
            if (typeid(e) != typeid(Error)) throw;
            failure = e.what();
          }
        }
        if (!failure.empty()) raise_runtime_error(failure);
        return to_py(result);
      });

  m.def(
      "make_node",
      [](const std::string& type_key, py::kwargs fields) {
        const TypeInfo& info = TypeRegistry::info(type_key);
        if (!info.create) throw py::type_error("'" + type_key + "' is abstract: it cannot be created");
        ObjectPtr<Object> node = info.create();
        std::vector<std::string> names;
        for (const FieldInfo& x : info.fields) names.push_back(x.name);
        std::set<std::string> given;
        for (auto [k, v] : fields) {
          std::string name = k.cast<std::string>();
          const FieldInfo* f = info.field(name);
          if (!f) throw TypeError("'" + type_key + "' has no field '" + name + "'" + did_you_mean(name, names));
          f->set(node.get(), to_any(v, name.c_str()));
          given.insert(name);
        }
        // Fields not given: an empty Array or Map; any other node field that
        // is not optional is required (code reading the node relies on it).
        for (const FieldInfo& f : info.fields) {
          if (given.count(f.name) || (f.flags & kOptional) || !f.get(node.get()).is_none()) continue;
          if (f.type == "Array") {
            f.set(node.get(), Any(Array(std::vector<Any>{})));
          } else if (f.type == "Map") {
            f.set(node.get(), Any(Map::empty()));
          } else if (TypeRegistry::find(f.type)) {
            throw TypeError("'" + type_key + "' needs field '" + f.name + "' (" + f.type + ")");
          }
        }
        return to_py(Any(node));
      },
      py::arg("type_key"), "creates a node of any registered type from its fields (by reflection)");
  m.def("type_keys", &TypeRegistry::list_keys, "every registered object type");
  m.def(
      "type_fields",
      [](const std::string& type_key) {
        py::list out;
        for (const FieldInfo& f : TypeRegistry::info(type_key).fields)
          out.append(py::make_tuple(f.name, f.type, f.doc));
        return out;
      },
      "(name, type, doc) of each reflected field");
}

}  // namespace loom::python
