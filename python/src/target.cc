// loom.target (docs/python.md, "Targets"): targets made and checked by the
// core (schema, validation), the registered target kinds with their
// attribute schemas and traits.
#include <pybind11/stl.h>

#include "bind.h"
#include "loom/support/registration.h"
#include "loom/target/target.h"

namespace loom::python {
namespace {

py::dict kind_info(const std::string& name) {
  target::TargetKindEntry kind = target::TargetKindRegistry::get(name);
  py::dict out;
  out["name"] = kind.name;
  out["doc"] = kind.doc;
  out["owner"] = kind.owner;
  py::list attrs;
  for (const SchemaField& f : kind.attrs) attrs.append(py::make_tuple(f.name, f.type, to_py(f.default_value), f.doc));
  out["attributes"] = attrs;
  const target::TargetTraits& t = kind.traits;
  py::dict traits;
  traits["native_intrinsics"] = std::vector<std::string>(t.native_intrinsics.begin(), t.native_intrinsics.end());
  traits["threads_attr"] = t.threads_attr;
  traits["device"] = Device{t.device_type, 0}.to_string();
  traits["default_pipeline"] = t.default_pipeline;
  traits["codegen_needs"] = t.codegen_needs;
  out["traits"] = traits;
  return out;
}

}  // namespace

void bind_target(py::module_& m) {
  m.def(
      "make_target",
      [](const std::string& kind, py::dict attrs) {
        return to_py(Any(target::Target(kind, to_any(attrs, "the target's attributes").cast<Map>())));
      },
      py::arg("kind"), py::arg("attrs"));
  m.def("target_host", [] { return to_py(Any(target::Target::host())); });
  m.def("list_target_kinds", [] { return with_available(target::TargetKindRegistry::list(), "target"); });
  m.def("target_kind_info", &kind_info, py::arg("kind"));
  m.def("target_vector_bits",
        [](py::handle t) { return target::vector_bits(to_any(t, "target").cast<target::Target>()); });
  m.def("target_num_threads",
        [](py::handle t) { return target::num_threads(to_any(t, "target").cast<target::Target>()); });
  m.def("target_native_intrinsics", [](py::handle t) {
    std::set<std::string> names = target::native_intrinsics(to_any(t, "target").cast<target::Target>());
    return std::vector<std::string>(names.begin(), names.end());
  });
  m.def("target_cpu_features", [](py::handle t) {
    std::set<std::string> names = target::cpu_features(to_any(t, "target").cast<target::Target>());
    return std::vector<std::string>(names.begin(), names.end());
  });
}

}  // namespace loom::python
