// NDArray, runtime modules and building (docs/python.md): tensors cross
// between NumPy, PyTorch and Loom through DLPack without copies; compiled
// modules give Functions that take NumPy arrays or NDArrays.
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bind.h"
#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/ir/module.h"
#include "loom/runtime/library.h"
#include "loom/runtime/module.h"
#include "loom/runtime/profiler.h"
#include "loom/runtime/thread_pool.h"
#include "loom/runtime/time_evaluator.h"
#include "loom/transform/pass.h"

namespace loom::python {

using runtime::NDArray;

namespace {
constexpr const char* kCapsule = "dltensor";
constexpr const char* kUsedCapsule = "used_dltensor";

NDArray take_capsule(py::handle capsule, const char* what) {
  if (!PyCapsule_IsValid(capsule.ptr(), kCapsule)) {
    throw py::type_error(std::string(what) + ": __dlpack__ did not return a 'dltensor' capsule");
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsule));
  PyCapsule_SetName(capsule.ptr(), kUsedCapsule);  // ours now: from_dlpack calls the deleter
  return NDArray::from_dlpack(managed);
}

py::capsule make_capsule(const NDArray& array) {
  DLManagedTensor* managed = array.to_dlpack();
  return py::capsule(managed, kCapsule, [](PyObject* capsule) {
    // Not consumed: the capsule still owns the tensor.
    if (PyCapsule_IsValid(capsule, kCapsule)) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsule));
      if (m && m->deleter) m->deleter(m);
    }
  });
}

py::object numpy() { return py::module_::import("numpy"); }
}  // namespace

NDArray ndarray_from_dlpack(py::handle value, const char* what) {
  if (py::isinstance<NDArray>(value)) return value.cast<NDArray>();
  py::object source = py::reinterpret_borrow<py::object>(value);
  // Looked up once (this is on the path of every call with a NumPy
  // argument); kept for the life of the process.
  static py::handle ndarray_type = py::object(numpy().attr("ndarray")).release();
  bool is_bool = false;
  if (py::isinstance(source, ndarray_type)) {
    // NumPy's DLPack export refuses some dtypes with a BufferError that
    // names neither the dtype nor Loom's: check first.  NumPy 1.24 does
    // not export bool, which Loom takes as bytes: it goes as uint8 and is
    // relabelled (no copy).
    py::object dtype = source.attr("dtype");
    std::string kind = py::str(dtype.attr("kind"));
    if (kind == "b") {
      is_bool = true;
    } else if ((kind != "i" && kind != "u" && kind != "f") ||
               (kind == "f" && dtype.attr("itemsize").cast<int>() > 8)) {  // longdouble
      throw TypeError(std::string(what) + ": NumPy arrays of dtype " + std::string(py::str(dtype)) +
                      " are not supported (Loom takes bool, int8..int64, uint8..uint64, float16, float32 and "
                      "float64)");
    } else if (!dtype.attr("isnative").cast<bool>()) {
      std::string name = py::str(dtype);
      throw TypeError(std::string(what) + ": a NumPy array of dtype '" + name +
                      "' is not in this machine's byte order; convert it first, e.g. "
                      "array.astype(array.dtype.newbyteorder('='))");
    }
    // DLPack cannot export read-only arrays, and kernels take compact ones.
    bool compact = source.attr("flags").attr("c_contiguous").cast<bool>();
    bool writeable = source.attr("flags").attr("writeable").cast<bool>();
    if (!compact || !writeable) source = numpy().attr("array")(source, py::arg("copy") = true, py::arg("order") = "C");
    if (is_bool) source = source.attr("view")(numpy().attr("uint8"));
  }
  if (!py::hasattr(source, "__dlpack__")) {
    throw TypeError(std::string(what) + ": a " + std::string(py::str(py::type::of(source).attr("__name__"))) +
                    " is not a DLPack tensor (it has no __dlpack__)");
  }
  NDArray array = take_capsule(source.attr("__dlpack__")(), what);
  return is_bool ? array.view(array.shape_vector(), DataType::Bool()) : array;
}

// A NumPy array over `array`'s memory; bool goes through uint8 (NumPy
// 1.24's from_dlpack refuses DLPack's bool).
py::object to_numpy(const NDArray& array) {
  if (array->dtype == DataType::Bool()) {
    return numpy()
        .attr("from_dlpack")(array.view(array.shape_vector(), DataType::UInt(8)))
        .attr("view")(numpy().attr("bool_"));
  }
  return numpy().attr("from_dlpack")(array);
}

void bind_runtime(py::module_& m) {
  py::class_<NDArray, ObjectRef>(m, "NDArray", "a tensor (DLPack); .numpy() shares its memory")
      .def_property_readonly("shape", [](const NDArray& a) { return py::tuple(py::cast(a.shape_vector())); })
      .def_property_readonly("dtype", [](const NDArray& a) { return a->dtype; })
      .def_property_readonly("device", [](const NDArray& a) { return a->device; })
      .def(
          "numpy",
          [](const NDArray& self) {
            if (self->device.device_type != Device::kCPU) {
              throw Error("NDArray.numpy(): the array is on " + self->device.to_string() +
                          "; copy it to the host first (array.copyto(\"cpu\"))");
            }
            return to_numpy(self);
          },
          "a NumPy array over the same memory (no copy); the array must be on the CPU")
      .def(
          "copyto",
          [](const NDArray& self, const std::string& device) {
            py::gil_scoped_release release;
            return self.copy_to(Device::parse(device));
          },
          py::arg("device"), "a copy on `device` (\"cpu\", \"opencl\", \"opencl:1\", ...)")
      .def(
          "view",
          [](const NDArray& self, const DataType& dtype) {
            if (dtype.bits != self->dtype.bits || dtype.lanes != self->dtype.lanes) {
              throw TypeError("NDArray.view: " + dtype.to_string() + " is not as wide as " + self->dtype.to_string() +
                              " (a view keeps every element's bytes)");
            }
            return self.view(self.shape_vector(), dtype);
          },
          py::arg("dtype"),
          "the same memory as another dtype of the same width (bool as uint8, bfloat16 as int16): no copy")
      .def(
          "__dlpack__", [](const NDArray& a, py::object stream) { return make_capsule(a); },
          py::arg("stream") = py::none())
      .def("__dlpack_device__",
           [](const NDArray& a) { return py::make_tuple(a->device.device_type, a->device.device_id); });
  m.def(
      "ndarray_from_dlpack", [](py::handle v) { return ndarray_from_dlpack(v); }, py::arg("value"));
  m.def(
      "ndarray_empty",
      [](const std::vector<int64_t>& shape, const DataType& dtype) { return NDArray::empty(shape, dtype); },
      py::arg("shape"), py::arg("dtype"));
  m.def(
      "ndarray_zeros",
      [](const std::vector<int64_t>& shape, const DataType& dtype) { return NDArray::zeros(shape, dtype); },
      py::arg("shape"), py::arg("dtype"));

  py::class_<runtime::Module, ObjectRef>(m, "Module", "a compiled module: functions by name, imports")
      .def_property_readonly("kind", [](const runtime::Module& mod) { return mod.node()->type_key(); })
      .def("get_function", &runtime::Module::get_function, py::arg("name"))
      .def("__getitem__", &runtime::Module::get_function, py::arg("name"))
      .def("function_names", [](const runtime::Module& mod) { return mod.node()->function_names(); })
      .def_property_readonly("imports", &runtime::Module::imports)
      .def("profile_json", [](const runtime::Module& mod) { return mod.node()->profile(); })
      .def(
          "set_profiling", [](const runtime::Module& mod, bool on) { runtime::set_profiling(mod, on); },
          py::arg("on") = true,
          "starts (clearing what was recorded) or stops recording each kernel call of the tree (docs/rpc.md)")
      .def(
          "inspect_source",
          [](const runtime::Module& mod, const std::string& format) { return mod.node()->inspect_source(format); },
          py::arg("format"))
      .def("__str__",
           [](const runtime::Module& mod) {
             std::string tree = runtime::module_tree(mod);
             return tree.substr(0, tree.size() - 1);  // print() adds the newline
           })
      .def("__repr__",
           [](const runtime::Module& mod) {
             std::string tree = runtime::module_tree(mod);
             return "<loom.runtime.Module\n" + tree.substr(0, tree.size() - 1) + ">";
           })
      .def(
          "export_library",
          [](const runtime::Module& mod, const std::string& path) { runtime::export_library(mod, path); },
          py::arg("path"));
  m.def("load_module", &runtime::load_module, py::arg("path"));
  m.def(
      "set_num_threads",
      [](int64_t threads) {
        if (threads < 0)
          throw Error("set_num_threads: " + std::to_string(threads) + " is not a number of threads (0: one per CPU)");
        runtime::ThreadPool::global().set_num_threads(threads);
      },
      py::arg("threads"));
  m.def("num_threads", [] { return runtime::ThreadPool::global().num_threads(); });
  m.def(
      "time_evaluate",
      [](const Function& f, py::list args, const std::string& device, int64_t number, int64_t repeat,
         double min_repeat_ms, bool cache_flush) {
        std::vector<Any> values;
        for (py::handle a : args) values.push_back(to_any(a, "an argument"));
        runtime::TimeEvaluation t =
            runtime::time_evaluate(f, values, Device::parse(device), {number, repeat, min_repeat_ms, cache_flush});
        return py::make_tuple(t.number, t.seconds);
      },
      py::arg("function"), py::arg("args"), py::arg("device"), py::arg("number"), py::arg("repeat"),
      py::arg("min_repeat_ms"), py::arg("cache_flush"));

  py::class_<config::Config>(m, "Config", "a YAML config: the target (C1) and the pipeline (C0)")
      .def_static("load", &config::load_config, py::arg("path"))
      .def_static("parse", &config::parse_config, py::arg("text"), py::arg("source") = "<config>")
      .def_property_readonly("target", [](const config::Config& c) { return to_py(Any(c.target)); });
  m.def(
      "build",
      [](const ObjectRef& module, const config::Config& config, bool verbose) {
        auto mod = downcast<ir::IRModule>(module);
        config::Config with_log = config;
        if (verbose) with_log.context.instruments.push_back(std::make_shared<transform::LogInstrument>());
        py::gil_scoped_release release;
        return driver::build(mod, with_log);
      },
      py::arg("module"), py::arg("config"), py::arg("verbose") = false);
}

}  // namespace loom::python
