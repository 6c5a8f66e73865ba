// The operator and extern-kind registries, and the core operators that
// connect the IR variants: call_dps and call_packed (typed by the
// well-formedness/type-inference pass, which knows the module).
#include "loom/ir/op.h"

#include "loom/graph/expr.h"
#include "loom/ir/text.h"
#include "loom/support/registry.h"

namespace loom::ir {

const char* pattern_kind_name(PatternKind kind) {
  switch (kind) {
    case PatternKind::kElementwise:
      return "elementwise";
    case PatternKind::kBroadcast:
      return "broadcast";
    case PatternKind::kInjective:
      return "injective";
    case PatternKind::kReduction:
      return "reduction";
    case PatternKind::kOutputFusable:
      return "output_fusable";
    case PatternKind::kOpaque:
      return "opaque";
  }
  return "?";
}

namespace {
NamedRegistry<OpEntry>& ops() {
  static auto* instance = new NamedRegistry<OpEntry>("operator", "op");
  return *instance;
}
NamedRegistry<ExternKindEntry>& extern_kinds() {
  static auto* instance = new NamedRegistry<ExternKindEntry>("extern kind", "extern");
  return *instance;
}

}  // namespace

void OpRegistry::register_op(OpDef def) {
  check_schema(def.attrs, "operator '" + def.name + "'");
  std::string name = def.name;
  ops().add(OpEntry{name, std::move(def), {}, ""});
}

std::optional<OpEntry> OpRegistry::entry(const std::string& name) { return ops().entry(name); }
OpEntry OpRegistry::get(const std::string& name) { return ops().get(name); }
std::vector<std::string> OpRegistry::list() { return ops().names(); }

void OpRegistry::set_property(const std::string& op, const std::string& key, Any value, bool allow_override) {
  get(op);  // loads the operator's provider, or fails with a suggestion
  ops().update(op, [&](OpEntry& entry) {
    if (entry.properties.count(key) && !allow_override) {
      LOOM_THROW(Error) << "operator '" << op << "' already has property '" << key
                        << "'; pass allow_override=true to replace it deliberately";
    }
    entry.properties[key] = value;
  });
}

std::optional<Any> OpRegistry::property(const std::string& op, const std::string& key) {
  auto e = ops().find(op);
  if (!e) return std::nullopt;
  auto found = e->properties.find(key);
  if (found == e->properties.end()) return std::nullopt;
  return found->second;
}

Map OpRegistry::check_attrs(const std::string& op, const Map& attrs) {
  return apply_schema(get(op).def.attrs, attrs, "operator '" + op + "'", "attribute");
}

void ExternKindRegistry::register_kind(const std::string& name, Function validate, std::string doc, Function build) {
  if (!validate.defined()) LOOM_THROW(Error) << "extern kind '" << name << "' needs a validation function";
  extern_kinds().add(ExternKindEntry{name, std::move(validate), std::move(doc), "", std::move(build)});
}

std::optional<ExternKindEntry> ExternKindRegistry::entry(const std::string& name) { return extern_kinds().entry(name); }
ExternKindEntry ExternKindRegistry::get(const std::string& name) { return extern_kinds().get(name); }
std::vector<std::string> ExternKindRegistry::list() { return extern_kinds().names(); }

Op Op::get(const std::string& name) {
  OpRegistry::get(name);
  auto node = make_object<OpNode>();
  node->name = name;
  return Op(node);
}

namespace {
// call_dps(@f, (args...)) with type_args [out_type]; call_packed((args...))
// with attrs {name} and type_args [out_type].  Both are typed from
// type_args; checking against the callee needs the module and is done by
// the well-formedness check.
const bool core_ops_registered = [] {
  Function from_type_args = Function::typed(
      [](ObjectRef call_ref, Any) -> ObjectRef {
        const auto* call = call_ref.as<graph::CallNode>();
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
                                      const auto* call = call_ref.as<graph::CallNode>();
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

}  // namespace loom::ir
