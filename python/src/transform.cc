// loom._core's passes (docs/python.md, "Passes"): Pass objects and the
// pass registry, passes whose body is Python, PassContext as a Python
// context manager, and instruments written in Python.  A Python pass is an
// ordinary transform::Pass whose body takes the GIL and calls the Python
// function; so it runs in a Sequential, under a YAML pipeline and with
// every instrument exactly as a C++ pass does.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bind.h"
#include "loom/ir/module.h"
#include "loom/support/registration.h"
#include "loom/transform/pass.h"
#include "loom/transform/property.h"

namespace loom::python {
namespace {

using transform::Pass;
using transform::PassContext;
using transform::PassInfo;

// An instrument written in Python: any object with some of the methods
// should_run(info, module) -> bool, before(info, module), after(info, module).
class PyInstrument : public transform::PassInstrument {
 public:
  explicit PyInstrument(py::object object) : object_(keep(std::move(object))) {
    py::handle type = py::type::of(*object_);
    name_ = py::str(type.attr("__name__"));
  }
  std::string name() const override { return name_; }
  bool should_run(const PassInfo& info, const ir::IRModule& module) override {
    py::gil_scoped_acquire gil;
    py::object result = call("should_run", info, module);
    if (result.is_none()) return true;  // a method that returns nothing keeps the pass
    if (!py::isinstance<py::bool_>(result)) {
      throw TypeError("instrument " + name_ + ".should_run returned " +
                      std::string(py::str(py::type::of(result).attr("__name__"))) + ", not a bool");
    }
    return result.cast<bool>();
  }
  void before(const PassInfo& info, const ir::IRModule& module) override {
    py::gil_scoped_acquire gil;
    call("before", info, module);
  }
  void after(const PassInfo& info, const ir::IRModule& module) override {
    py::gil_scoped_acquire gil;
    call("after", info, module);
  }
  const py::object& object() const { return *object_; }

 private:
  py::object call(const char* method, const PassInfo& info, const ir::IRModule& module) {
    if (!py::hasattr(*object_, method)) return py::none();
    try {
      return object_->attr(method)(info, to_py(Any(module)));
    } catch (py::error_already_set& e) {
      throw PythonError(e);
    }
  }
  std::shared_ptr<py::object> object_;
  std::string name_;
};

// A PassContext for Python: the C++ context, the scopes entered with
// `with`, and the instruments as the Python objects they were given as.
struct PyPassContext {
  PassContext context;
  // Scopes entered by `with` (the innermost last), each on its thread:
  // the C++ context stack is per thread.
  std::vector<std::pair<std::thread::id, std::unique_ptr<PassContext::Scope>>> entered;

  PyPassContext() = default;
  PyPassContext(PyPassContext&&) = default;
  PyPassContext(const PyPassContext&) = delete;

  static PyPassContext of(const PassContext& context) {
    PyPassContext out;
    out.context = context;
    return out;
  }
  py::list instruments() const {
    py::list out;
    for (const auto& instrument : context.instruments) {
      if (auto* p = dynamic_cast<PyInstrument*>(instrument.get())) {
        out.append(p->object());
      } else {
        out.append(py::cast(instrument));  // its most derived bound class
      }
    }
    return out;
  }
  void set_instruments(const py::iterable& items) {
    std::vector<std::shared_ptr<transform::PassInstrument>> made;
    for (py::handle item : items) {
      if (py::isinstance<transform::PassInstrument>(item)) {
        made.push_back(item.cast<std::shared_ptr<transform::PassInstrument>>());
      } else if (py::isinstance<py::str>(item) || item.is_none()) {
        throw py::type_error(
            "an instrument is an object with should_run/before/after methods or one of "
            "loom.transform's TimingInstrument, DumpIR and LogInstrument, got " +
            std::string(py::str(py::type::of(item).attr("__name__"))));
      } else {
        made.push_back(std::make_shared<PyInstrument>(py::reinterpret_borrow<py::object>(item)));
      }
    }
    context.instruments = std::move(made);
  }
};

ir::IRModule module_argument(py::handle value) {
  Any v = to_any(value, "a pass's module");
  if (!v.is_object_like() || !v.as_object_ref().as<ir::IRModuleNode>()) {
    throw TypeError("a pass runs on an ir.IRModule, got " + v.describe());
  }
  return v.cast<ir::IRModule>();
}

// A pass body's arguments in Python: IR values, and the context.
py::object py_arg(const Any& value) { return to_py(value); }
py::object py_arg(const PassContext& context) { return py::cast(PyPassContext::of(context)); }

// Calls a Python pass body under the GIL and returns its result as a T
// (an IRModule or a function); its exception crosses as a PythonError.
template <class T, class... Args>
T run_body(const py::object& body, const std::string& pass, const char* expected, const Args&... args) {
  py::gil_scoped_acquire gil;
  py::object result;
  try {
    result = body(py_arg(args)...);
  } catch (py::error_already_set& e) {
    throw PythonError(e);
  }
  if (result.is_none()) {
    throw TypeError("pass '" + pass + "' returned None; it must return the " + expected +
                    " (the one it was given when it changes nothing)");
  }
  Any value = to_any(result, "a pass's result");
  if (!value.is_object_like() || !value.as_object_ref()->is_instance<typename T::ContainerType>()) {
    throw TypeError("pass '" + pass + "' returned " + value.describe() + "; it must return the " + expected);
  }
  return value.cast<T>();
}

Pass make_module_pass(py::object body, PassInfo info) {
  std::shared_ptr<py::object> f = keep(std::move(body));
  std::string name = info.name;
  return transform::module_pass(std::move(info), [f, name](const ir::IRModule& mod, const PassContext& context) {
    return run_body<ir::IRModule>(*f, name, "module (an ir.IRModule)", Any(mod), context);
  });
}

Pass make_function_pass(py::object body, PassInfo info, const std::string& variant) {
  std::shared_ptr<py::object> f = keep(std::move(body));
  std::string name = info.name;
  const TypeInfo& type = TypeRegistry::info(variant);
  if (!TypeRegistry::is_derived_from(type.index, ir::BaseFuncNode::runtime_type_index())) {
    throw TypeError(
        "a function pass applies to a function variant (graph.Function, tir.PrimFunc, ir.ExternFunc), "
        "got '" +
        variant + "'");
  }
  return transform::function_pass(
      std::move(info), type.index,
      [f, name](const ir::BaseFunc& func, const ir::IRModule& mod, const PassContext& context) {
        return run_body<ir::BaseFunc>(*f, name, "function", Any(func), Any(mod), context);
      });
}

PassInfo make_info(const std::string& name, int opt_level, std::vector<std::string> required, std::string summary,
                   const py::list& options, std::vector<std::string> needs, std::vector<std::string> establishes,
                   std::vector<std::string> preserves) {
  PassInfo info = PassInfo::named(name)
                      .summary(std::move(summary))
                      .opt_level(opt_level)
                      .required(std::move(required))
                      .needs(std::move(needs))
                      .establishes(std::move(establishes))
                      .preserves(std::move(preserves));
  for (py::handle option : options) {
    auto t = option.cast<py::tuple>();
    if (t.size() != 4) throw py::type_error("a pass option is (name, type, default, doc)");
    info.options.push_back(SchemaField{t[0].cast<std::string>(), t[1].cast<std::string>(),
                                       to_any(t[2], "an option's default"), t[3].cast<std::string>()});
  }
  return info;
}

}  // namespace

void bind_transform(py::module_& m) {
  py::class_<PassInfo>(m, "PassInfo",
                       "a pass's declaration: name, summary, opt level, required passes, options, and its contract "
                       "(the IR properties it needs, establishes and preserves)")
      .def_readonly("name", &PassInfo::name)
      .def_readonly("summary", &PassInfo::summary)
      .def_readonly("opt_level", &PassInfo::opt_level)
      .def_readonly("required", &PassInfo::required)
      .def_readonly("needs", &PassInfo::needs)
      .def_readonly("establishes", &PassInfo::establishes)
      .def_readonly("preserves", &PassInfo::preserves)
      .def_readonly("changes", &PassInfo::changes)
      .def_property_readonly("options",
                             [](const PassInfo& info) {
                               py::list out;
                               for (const SchemaField& f : info.options)
                                 out.append(py::make_tuple(f.name, f.type, to_py(f.default_value), f.doc));
                               return out;
                             })
      .def("__repr__", [](const PassInfo& info) {
        return "PassInfo(name='" + info.name + "', opt_level=" + std::to_string(info.opt_level) + ")";
      });

  // The C++ instruments: a PassContext takes any of them as it is.
  py::class_<transform::PassInstrument, std::shared_ptr<transform::PassInstrument>>(
      m, "PassInstrument", "an instrument written in C++ (TimingInstrument, DumpIR, LogInstrument)")
      .def_property_readonly("name", &transform::PassInstrument::name);
  py::class_<transform::DumpIRInstrument, transform::PassInstrument, std::shared_ptr<transform::DumpIRInstrument>>(
      m, "DumpIR",
      "writes the module before and after every pass into a folder: NNN_PASS_before.loom, "
      "NNN_PASS_after.loom (created if missing)")
      .def(py::init<std::string>(), py::arg("folder"));
  py::class_<transform::LogInstrument, transform::PassInstrument, std::shared_ptr<transform::LogInstrument>>(
      m, "LogInstrument", "prints one line per pass on stderr as it ends, with its time")
      .def(py::init<>());
  py::class_<transform::TimingInstrument, transform::PassInstrument, std::shared_ptr<transform::TimingInstrument>>(
      m, "TimingInstrument", "times every pass; report() after the passes ran")
      .def(py::init<>())
      .def("report", &transform::TimingInstrument::report)
      .def(
          "rows",
          [](const transform::TimingInstrument& t) {
            py::list out;
            for (const auto& row : t.rows()) out.append(py::make_tuple(row.pass, row.calls, row.total_ms));
            return out;
          },
          "(pass, calls, total ms) in order of first start");

  py::class_<PyPassContext>(m, "PassContext",
                            "how to compile (C0): opt level, disabled and required passes, config, instruments; "
                            "`with` enters it")
      .def(py::init([](int opt_level, std::vector<std::string> disabled, std::vector<std::string> required,
                       const py::dict& config, const py::iterable& instruments, py::object check_well_formed) {
             auto out = std::make_unique<PyPassContext>();
             out->context.opt_level = opt_level;
             out->context.disabled = std::move(disabled);
             out->context.required = std::move(required);
             for (auto [k, v] : config) out->context.set_config(py::str(k), to_any(v, "a config value"));
             out->set_instruments(instruments);
             if (!check_well_formed.is_none()) out->context.check_well_formed = check_well_formed.cast<bool>();
             return out;
           }),
           py::arg("opt_level") = 2, py::arg("disabled") = std::vector<std::string>{},
           py::arg("required") = std::vector<std::string>{}, py::arg("config") = py::dict(),
           py::arg("instruments") = py::list(), py::arg("check_well_formed") = py::none())
      .def_property(
          "opt_level", [](const PyPassContext& c) { return c.context.opt_level; },
          [](PyPassContext& c, int level) { c.context.opt_level = level; })
      .def_property(
          "disabled", [](const PyPassContext& c) { return c.context.disabled; },
          [](PyPassContext& c, std::vector<std::string> v) { c.context.disabled = std::move(v); })
      .def_property(
          "required", [](const PyPassContext& c) { return c.context.required; },
          [](PyPassContext& c, std::vector<std::string> v) { c.context.required = std::move(v); })
      .def_property(
          "check_well_formed", [](const PyPassContext& c) { return c.context.check_well_formed; },
          [](PyPassContext& c, bool v) { c.context.check_well_formed = v; })
      .def_property("instruments", &PyPassContext::instruments, &PyPassContext::set_instruments)
      .def_property_readonly(
          "config",
          [](const PyPassContext& c) {
            py::dict out;
            for (const auto& [k, v] : c.context.config()) out[py::str(k)] = to_py(v);
            return out;
          },
          "the keys set (get_config gives a key's default too)")
      .def(
          "set_config",
          [](PyPassContext& c, const std::string& key, py::handle value) {
            c.context.set_config(key, to_any(value, "a config value"));
          },
          py::arg("key"), py::arg("value"))
      .def(
          "get_config", [](const PyPassContext& c, const std::string& key) { return to_py(c.context.get_config(key)); },
          py::arg("key"))
      .def("__enter__",
           [](py::object self) {
             auto& c = self.cast<PyPassContext&>();
             c.entered.emplace_back(std::this_thread::get_id(), std::make_unique<PassContext::Scope>(c.context));
             return self;
           })
      .def("__exit__",
           [](PyPassContext& c, py::args) {
             if (c.entered.empty()) return false;
             if (c.entered.back().first != std::this_thread::get_id()) {
               throw Error("a PassContext is left on the thread that entered it");
             }
             c.entered.pop_back();
             return false;
           })
      .def_static(
          "current", [] { return PyPassContext::of(PassContext::current()); },
          "a copy of the innermost entered context (or the default one)");

  py::class_<Pass, ObjectRef>(m, "Pass", "a pass: call it on an IRModule")
      .def_property_readonly("info", [](const Pass& p) { return p.info(); })
      .def_property_readonly("name", [](const Pass& p) { return p.info().name; })
      .def(
          "__call__",
          [](const Pass& p, py::handle mod, const PyPassContext* context) {
            ir::IRModule module = module_argument(mod);
            Any result;
            {
              py::gil_scoped_release release;
              result = context ? p(module, context->context) : p(module);
            }
            return to_py(result);
          },
          py::arg("module"), py::arg("context") = nullptr, "runs the pass under `context`, or the entered PassContext")
      .def("__repr__", [](const Pass& p) { return "loom.transform.Pass('" + p.info().name + "')"; });

  m.def("make_pass_info", &make_info, py::arg("name"), py::arg("opt_level"), py::arg("required"), py::arg("summary"),
        py::arg("options"), py::arg("needs") = std::vector<std::string>{},
        py::arg("establishes") = std::vector<std::string>{}, py::arg("preserves") = std::vector<std::string>{});
  m.def(
      "list_properties",
      [] {
        py::list out;
        for (const std::string& name : transform::PropertyRegistry::list()) {
          transform::PropertyInfo p = transform::PropertyRegistry::get(name);
          py::dict d;
          d["name"] = p.name;
          d["summary"] = p.summary;
          d["established_by"] = p.established_by;
          d["auto_establish"] = p.auto_establish;
          d["checked"] = static_cast<bool>(p.check);
          d["owner"] = p.owner;
          d["level"] = p.level;
          out.append(d);
        }
        return out;
      },
      "the IR properties pass contracts name (docs/passes.md, \"Pass contracts\")");
  m.def("make_module_pass", &make_module_pass, py::arg("body"), py::arg("info"));
  m.def("make_function_pass", &make_function_pass, py::arg("body"), py::arg("info"), py::arg("variant"));
  m.def(
      "register_pass",
      [](const Pass& pass, bool allow_override) {
        RegistrationScope scope("python");  // the owner that messages and `passes list` show
        transform::PassRegistry::register_pass(pass, allow_override);
        scope.commit();
      },
      py::arg("pass"), py::arg("override") = false);
  m.def("get_pass", &transform::PassRegistry::get, py::arg("name"));
  m.def("list_passes", [] { return with_available(transform::PassRegistry::list(), "pass"); });
  m.def("sequential", &transform::sequential, py::arg("passes"), py::arg("name") = "Sequential");
}

}  // namespace loom::python
