// The pieces of loom._core (docs/python.md): conversions between Python
// values and Any, shared by the object, runtime and module bindings.
#ifndef LOOM_PYTHON_BIND_H_
#define LOOM_PYTHON_BIND_H_

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "loom/object/any.h"
#include "loom/object/function.h"
#include "loom/runtime/ndarray.h"

namespace loom::python {
namespace py = pybind11;

// Python -> Any: None, bool, int, float, str, loom objects (and DataType,
// Device), lists and tuples (Array), dicts with str keys (Map), objects
// with __dlpack__ (NDArray, zero-copy; NumPy arrays that cannot be
// shared are copied), and callables (Function).  Anything else is a
// TypeError naming the Python type; `what` names the argument in it.
Any to_any(py::handle value, const char* what = "value");
// Any -> Python: the most specific wrapper (NDArray, Array, Map, Function,
// runtime Module, Object) or a Python scalar.
py::object to_py(const Any& value);
// An NDArray sharing the memory of a DLPack producer (a NumPy array, a
// torch tensor); a NumPy array that cannot export (read-only, not
// contiguous) is copied first.
runtime::NDArray ndarray_from_dlpack(py::handle value, const char* what = "value");

// A Python object kept by C++ (a callable inside a loom Function, a pass,
// an instrument): the last reference may go on a thread without the GIL
// (a registry, a build that released it), so it is dropped under the GIL.
std::shared_ptr<py::object> keep(py::object value);

// A Python exception raised inside a Python callable that Loom called: it
// crosses C++ as an Error and reaches Python again as itself (the
// exception translator restores it), so a pass's ValueError stays one.
class PythonError : public Error {
 public:
  explicit PythonError(py::error_already_set& e);
  void restore() const;

 private:
  std::shared_ptr<py::object> type_, value_, trace_;
};

// Calls a Python callable with Loom values, under the GIL.
Any call_python(const py::object& f, const Any* args, int32_t count, const char* what);

// Raises loom.RuntimeError (an error while compiled code or a function ran).
[[noreturn]] void raise_runtime_error(const std::string& message);

void bind_objects(py::module_& m);
void bind_runtime(py::module_& m);
void bind_transform(py::module_& m);
void bind_schedule(py::module_& m);
void bind_target(py::module_& m);

}  // namespace loom::python

#endif  // LOOM_PYTHON_BIND_H_
