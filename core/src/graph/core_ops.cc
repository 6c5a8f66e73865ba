// The operators that connect a graph function to the rest of the module
// and to devices: call_dps and call_packed (typed from their type_args;
// checked against the callee by the well-formedness check, which knows the
// module) and device_copy.
#include "loom/graph/expr.h"
#include "loom/ir/op.h"
#include "loom/ir/text.h"

namespace loom::graph {

using namespace loom::ir;  // NOLINT: the operator registry and types

namespace {
// call_dps(@f, (args...)) with type_args [out_type]; call_packed((args...))
// with attrs {name} and type_args [out_type].  Both are typed from
// type_args; checking against the callee needs the module and is done by
// the well-formedness check.
const bool core_ops_registered = [] {
  Function from_type_args = Function::typed(
      [](ObjectRef call_ref, Any) -> ObjectRef {
        const auto* call = call_ref.as<CallNode>();
        if (!call || call->type_args.size() != 1) {
          LOOM_THROW(TypeError) << "needs exactly one output type";
        }
        return call->type_args[0].cast<Type>();
      },
      "infer_from_type_args");
  OpRegistry::register_op(OpDef{"call_dps",
                                2,
                                {},
                                from_type_args,
                                PatternKind::kOpaque,
                                "call_dps(@f, (args...), out_type): call a prim or extern function in "
                                "destination-passing style"});
  // device_copy(x, src=device("cpu:0"), dst=device("opencl:0")): the
  // tensor x, which lives on src, copied to dst (PlanDevices inserts it;
  // the VM runs it through the devices' DeviceAPI).  Same type as x.
  OpRegistry::register_op(OpDef{"device_copy",
                                1,
                                {{"src", "device", Any(), "the device the tensor lives on"},
                                 {"dst", "device", Any(), "the device to copy it to"}},
                                Function::typed(
                                    [](ObjectRef call_ref, Any) -> ObjectRef {
                                      const auto* call = call_ref.as<CallNode>();
                                      Type t =
                                          call->args.size() == 1 ? call->args[0].cast<Expr>()->checked_type : Type();
                                      if (!t.as<TensorTypeNode>()) {
                                        LOOM_THROW(TypeError)
                                            << "device_copy copies a tensor, got "
                                            << (t.defined() ? to_text(Any(t)) : std::string("an untyped value"));
                                      }
                                      return t;
                                    },
                                    "device_copy.infer_type"),
                                PatternKind::kOpaque,
                                "device_copy(x, src=device, dst=device): x copied from device src to device dst"});
  OpRegistry::register_op(OpDef{"call_packed",
                                1,
                                {{"name", "str", Any(), "registry function to call"}},
                                from_type_args,
                                PatternKind::kOpaque,
                                "call_packed(\"name\", (args...), out_type): call a global registry function"});
  return true;
}();
}  // namespace

}  // namespace loom::graph
