// The operator and extern-kind registries.  The operators the graph IR
// itself needs (call_dps, call_packed, device_copy) are registered by the
// graph area (core/src/graph/core_ops.cc).
#include "loom/ir/op.h"

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

}  // namespace loom::ir
