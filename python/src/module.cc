// loom._core (docs/python.md): the error classes, the IR text and
// structural functions, the function registry and the plugin manager.
// The package (python/loom) arranges these into loom.ir, loom.plugins, ...
#include <pybind11/stl.h>

#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "bind.h"
#include "loom/ir/module.h"
#include "loom/text/text.h"
#include "loom/object/serialization.h"
#include "loom/object/structural.h"
#include "loom/object/traversal.h"
#include "loom/plugin/manager.h"
#include "loom/schedule/schedule.h"

namespace loom::python {
namespace {

// Python exception classes, made once at import.
struct Errors {
  py::object loom, parse, config, plugin, type_inference, runtime, type, lookup, schedule;
};
Errors* errors = nullptr;

py::object make_error(py::module_& m, const char* name, py::handle bases, const char* doc) {
  std::string qualified = std::string("loom.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!type) throw py::error_already_set();
  py::object cls = py::reinterpret_steal<py::object>(type);
  m.attr(name) = cls;
  return cls;
}

// Raises `cls` with `message`.  Messages quote input, which need not be
// valid UTF-8 (a byte of a multi-byte character, a binary file): such
// bytes are shown as \xNN instead of the message being lost (PyErr_SetString
// raised with an empty message then).
void raise(const py::object& cls, const std::string& message) {
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "backslashreplace");
  if (!text) return;  // (out of memory: that error stands)
  PyErr_SetObject(cls.ptr(), text);
  Py_DECREF(text);
}

void translate(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const PythonError& e) {
    e.restore();
  } catch (const ConfigError& e) {
    raise(errors->config, e.what());
  } catch (const ParseError& e) {
    raise(errors->parse, e.what());
  } catch (const PluginError& e) {
    raise(errors->plugin, e.what());
  } catch (const TypeInferenceError& e) {
    raise(errors->type_inference, e.what());
  } catch (const ScheduleError& e) {
    raise(errors->schedule, e.what());
  } catch (const TypeError& e) {
    raise(errors->type, e.what());
  } catch (const LookupError& e) {
    raise(errors->lookup, e.what());
  } catch (const Error& e) {
    raise(errors->loom, e.what());
  } catch (const std::bad_alloc& e) {  // (pybind11 would say "std::bad_alloc")
    raise(py::reinterpret_borrow<py::object>(PyExc_MemoryError), error_message(e));
  } catch (const std::length_error& e) {  // ("basic_string::_M_create")
    raise(py::reinterpret_borrow<py::object>(PyExc_MemoryError), error_message(e));
  } catch (const std::system_error& e) {
    raise(errors->loom, error_message(e));
  }
}

py::dict plugin_dict(const PluginRecord& r) {
  py::dict d;
  d["name"] = r.name;
  d["path"] = r.path;
  d["state"] = std::string(plugin_state_name(r.state));
  d["error"] = r.error;
  d["functions"] = r.functions;
  d["version"] = r.manifest ? r.manifest->version : "";
  d["description"] = r.manifest ? r.manifest->description : "";
  d["provides"] = r.manifest ? r.manifest->provides : std::vector<std::string>{};
  d["requires"] = r.manifest ? r.manifest->requires_ : std::vector<std::string>{};
  return d;
}

ir::IRModule as_module(const ObjectRef& ref) { return downcast<ir::IRModule>(ref); }
}  // namespace

void raise_runtime_error(const std::string& message) {
  raise(errors->runtime, message);
  throw py::error_already_set();
}

}  // namespace loom::python

PYBIND11_MODULE(_core, m) {
  namespace py = pybind11;
  using namespace loom;          // NOLINT
  using namespace loom::python;  // NOLINT
  m.doc() = "Loom's C++ core (use the loom package)";

  static Errors made;
  errors = &made;
  made.loom = make_error(m, "LoomError", PyExc_Exception, "an error from Loom; the message says what and where");
  made.parse = make_error(m, "ParseError", made.loom, "malformed text: the message starts with file:line:col");
  made.config = make_error(m, "ConfigError", made.parse, "a wrong YAML config (file:line:col)");
  made.plugin = make_error(m, "PluginError", made.loom, "a plugin that cannot be found or loaded (file and reason)");
  made.type_inference = make_error(m, "TypeInferenceError", made.loom, "type inference found problems");
  made.runtime = make_error(m, "RuntimeError", py::make_tuple(made.loom, py::handle(PyExc_RuntimeError)),
                            "an error while running compiled code");
  made.type = make_error(m, "TypeError", py::make_tuple(made.loom, py::handle(PyExc_TypeError)),
                         "a value of the wrong type crossed into Loom");
  made.lookup = make_error(m, "LookupError", py::make_tuple(made.loom, py::handle(PyExc_LookupError)),
                           "a name that is not registered (function, type, plugin, ...)");
  made.schedule = make_error(m, "ScheduleError", made.loom, "a schedule primitive's precondition failed");
  py::register_exception_translator(&translate);

  bind_objects(m);
  bind_runtime(m);
  bind_target(m);
  bind_transform(m);
  bind_schedule(m);

  // IR text, structure, JSON.
  m.def(
      "parse",
      [](const std::string& text, const std::string& source) { return to_py(Any(text::parse_module(text, source))); },
      py::arg("text"), py::arg("source") = "<string>");
  m.def(
      "print_module", [](const ObjectRef& mod) { return text::print_module(as_module(mod)); }, py::arg("module"));
  m.def(
      "save_module_file",
      [](const ObjectRef& mod, const std::string& path) {
        py::gil_scoped_release release;
        text::save_module_file(as_module(mod), path);
      },
      py::arg("module"), py::arg("path"));
  m.def(
      "load_module_file",
      [](const std::string& path) {
        ir::IRModule module;
        {
          py::gil_scoped_release release;
          module = text::load_module_file(path);
        }
        return to_py(Any(module));
      },
      py::arg("path"));
  m.def(
      "to_text", [](py::handle node) { return ir::to_text(to_any(node)); }, py::arg("node"));
  m.def("structural_equal", [](py::handle a, py::handle b) { return structural_equal(to_any(a), to_any(b)); });
  m.def("structural_hash", [](py::handle a) { return structural_hash(to_any(a)); });
  m.def("structural_difference",
        [](py::handle a, py::handle b) { return structural_difference(to_any(a), to_any(b)); });
  m.def("save_json", [](py::handle a) { return save_json(to_any(a)); });
  m.def(
      "load_json", [](const std::string& text) { return to_py(load_json(text)); }, py::arg("text"));

  m.def(
      "rewrite",
      [](py::handle root, py::function fn, const std::string& type_key) {
        // Post-order: children first, then fn(node) on each node of
        // type_key (or a subtype); fn returns the replacement or None.
        uint32_t index = TypeRegistry::info(type_key).index;
        Mutator mutator;
        mutator.on<Object>([&](const Object*, const ObjectRef& self) -> Any {
          ObjectRef node = mutator.mutate_children(self);
          if (!node->is_instance_of(index)) return Any(node);
          py::object replacement = fn(to_py(Any(node)));
          if (replacement.is_none()) return Any(node);
          Any out = to_any(replacement, "a rewrite's replacement");
          if (out.kind() != AnyKind::kObject) {
            throw TypeError("rewrite: the function returned " + out.describe() + " for a " + node->type_key() +
                            "; return a node, or None to keep it");
          }
          return out;
        });
        return to_py(mutator.mutate(to_any(root, "the node to rewrite")));
      },
      py::arg("node"), py::arg("fn"), py::arg("type_key"));

  // The global function registry.
  m.def(
      "get_global_func", [](const std::string& name) { return FunctionRegistry::get(name); }, py::arg("name"));
  m.def("list_global_funcs", &FunctionRegistry::list);
  m.def(
      "register_global_func",
      [](const std::string& name, py::object fn, bool allow_override) {
        if (!PyCallable_Check(fn.ptr())) throw TypeError("register_func('" + name + "'): the function is not callable");
        FunctionRegistry::register_function(name, to_any(fn, "the function to register").cast<Function>(),
                                            "registered from Python", allow_override);
      },
      py::arg("name"), py::arg("fn"), py::arg("allow_override") = false);

  // The plugin manager.
  m.def("plugins_available", [] {
    py::list out;
    for (const PluginRecord& r : PluginManager::global().list()) out.append(plugin_dict(r));
    return out;
  });
  m.def(
      "plugin_info",
      [](const std::string& name) -> py::object {
        auto r = PluginManager::global().info(name);
        if (!r) return py::none();
        return plugin_dict(*r);
      },
      py::arg("name"));
  m.def(
      "plugin_load", [](const std::string& name) { return plugin_dict(PluginManager::global().load(name)); },
      py::arg("name"));
  m.def(
      "plugin_load_path", [](const std::string& path) { return plugin_dict(PluginManager::global().load_path(path)); },
      py::arg("path"));
  m.def("plugin_search_path", [] { return PluginManager::global().search_path(); });
}
