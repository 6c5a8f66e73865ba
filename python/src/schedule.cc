// loom._core's schedule (docs/python.md, "Schedules"): tir::Schedule over
// one prim function, its primitives by loop and buffer name.  A failed
// primitive raises loom.ScheduleError and leaves the schedule as it was.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bind.h"
#include "loom/tir/function.h"
#include "loom/schedule/schedule.h"

namespace loom::python {

void bind_schedule(py::module_& m) {
  using tir::Schedule;
  py::class_<Schedule>(m, "Schedule", "loop transformations of one prim function (loops by name)")
      .def(py::init([](py::handle value) {
             Any func = to_any(value, "a Schedule's function");
             if (!func.is_object_like() || !func.as_object_ref().as<tir::PrimFuncNode>()) {
               throw TypeError("a Schedule takes a tir.PrimFunc, got " + func.describe());
             }
             return Schedule(func.cast<tir::PrimFunc>());
           }),
           py::arg("func"))
      .def_property_readonly(
          "func", [](const Schedule& s) { return to_py(Any(s.func())); }, "the function as scheduled so far")
      .def("loops", &Schedule::loops, "every loop's name, outermost first")
      .def_property_readonly(
          "trace", [](const Schedule& s) { return py::module_::import("json").attr("loads")(s.trace_json()); },
          "the primitives that succeeded, in order, as JSON-ready lists [primitive, args...] "
          "(docs/tuning.md, \"Traces\")")
      .def_static(
          "replay",
          [](py::handle value, py::object trace) {
            Any func = to_any(value, "replay's function");
            if (!func.is_object_like() || !func.as_object_ref().as<tir::PrimFuncNode>()) {
              throw TypeError("Schedule.replay takes a tir.PrimFunc, got " + func.describe());
            }
            std::string text = py::isinstance<py::str>(trace)
                                   ? trace.cast<std::string>()
                                   : py::module_::import("json").attr("dumps")(trace).cast<std::string>();
            py::gil_scoped_release release;
            return Schedule::replay(func.cast<tir::PrimFunc>(), text);
          },
          py::arg("func"), py::arg("trace"),
          "a Schedule of func with a trace's steps applied (a list, or its JSON text); ScheduleError names the "
          "first step that fails")
      .def("split", &Schedule::split, py::arg("loop"), py::arg("factor"))
      .def("partition", &Schedule::partition, py::arg("loop"), py::arg("factor"))
      .def("fuse", &Schedule::fuse, py::arg("outer"), py::arg("inner"))
      .def("reorder", &Schedule::reorder, py::arg("order"))
      .def("tile", &Schedule::tile, py::arg("x"), py::arg("y"), py::arg("fx"), py::arg("fy"))
      .def("parallel", &Schedule::parallel, py::arg("loop"))
      .def("vectorize", &Schedule::vectorize, py::arg("loop"))
      .def("bind", &Schedule::bind, py::arg("loop"), py::arg("axis"))
      .def("unroll", &Schedule::unroll, py::arg("loop"))
      .def("decompose_reduction", &Schedule::decompose_reduction, py::arg("loop"))
      .def("compute_inline", &Schedule::compute_inline, py::arg("buffer"))
      .def("reverse_compute_inline", &Schedule::reverse_compute_inline, py::arg("buffer"))
      .def(
          "cache_read",
          [](Schedule& s, const std::string& buffer, py::object layout, const std::string& scope) {
            if (layout.is_none()) {
              return s.cache_read(
                  buffer, [](const std::vector<tir::PrimExpr>& indices) { return indices; }, scope);
            }
            if (py::isinstance<py::list>(layout) || py::isinstance<py::tuple>(layout)) {
              return s.cache_read(buffer, layout.cast<std::vector<int>>(), scope);
            }
            if (!PyCallable_Check(layout.ptr())) {
              throw py::type_error("cache_read's layout is a list of axes or a function of the indices");
            }
            return s.cache_read(
                buffer,
                [&layout](const std::vector<tir::PrimExpr>& indices) {
                  py::tuple args(indices.size());
                  for (size_t i = 0; i < indices.size(); ++i) args[i] = to_py(Any(indices[i]));
                  std::vector<tir::PrimExpr> out;
                  for (py::handle item : layout(*args))
                    out.push_back(to_any(item, "a layout's index").cast<tir::PrimExpr>());
                  return out;
                },
                scope);
          },
          py::arg("buffer"), py::arg("layout") = py::none(), py::arg("scope") = "global",
          "a copy of a read-only parameter in a memory scope (global, shared, local): layout is the copy's "
          "axes as buffer axes, or a function from buffer indices to the copy's (v, v // c, v % c); None "
          "keeps the buffer's")
      .def("cache_write", &Schedule::cache_write, py::arg("buffer"), py::arg("scope") = "global")
      .def("compute_at", &Schedule::compute_at, py::arg("nest"), py::arg("loop"))
      .def("allocate_at", &Schedule::allocate_at, py::arg("buffer"), py::arg("loop"))
      .def(
          "rfactor",
          [](Schedule& s, const std::string& loop) {
            Schedule::RFactor r = s.rfactor(loop);
            return py::make_tuple(r.buffer, r.init, r.final);
          },
          py::arg("loop"), "(partial-sum buffer, init loop, final loop)");
}

}  // namespace loom::python
