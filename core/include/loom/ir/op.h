// The operator registry (see docs/ir.md, "Operators").  An operator is
// declared once (by the core or a plugin) with its arity, attribute schema,
// type-inference function and fusion pattern; any plugin may then attach
// named properties to it ("FLower", "FLayout", ...).  All registry rules of
// NamedRegistry apply; a miss requests the capability "op:NAME".
#ifndef LOOM_IR_OP_H_
#define LOOM_IR_OP_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/expr.h"
#include "loom/object/function.h"
#include "loom/object/schema.h"

namespace loom::ir {

enum class PatternKind : int64_t {
  kElementwise = 0,
  kBroadcast = 1,
  kInjective = 2,
  kReduction = 3,
  kOutputFusable = 4,
  kOpaque = 8,
};
const char* pattern_kind_name(PatternKind kind);

// One attribute of an operator's schema (loom/object/schema.h).
using OpAttrField = SchemaField;

struct OpDef {
  std::string name;
  int num_inputs = -1;  // -1: any number
  std::vector<OpAttrField> attrs;
  // (call: graph.Call, module: ir.IRModule or none) -> ir.Type; throws
  // with a message on a type error.  Empty: the operator cannot be typed.
  Function infer_type;
  PatternKind pattern = PatternKind::kOpaque;
  std::string doc;
};

struct OpEntry {
  std::string name;
  OpDef def;
  std::map<std::string, Any> properties;
  std::string owner;
};

class OpRegistry {
 public:
  static void register_op(OpDef def);
  static std::optional<OpEntry> entry(const std::string& name);  // no loading
  static OpEntry get(const std::string& name);                   // lazy; LookupError with a suggestion
  static std::vector<std::string> list();
  // Attaches a named property; an existing one needs allow_override.
  static void set_property(const std::string& op, const std::string& key, Any value, bool allow_override = false);
  static std::optional<Any> property(const std::string& op, const std::string& key);
  // The call's attributes checked against the schema, with defaults filled
  // in.  Throws TypeError naming the operator and the attribute for an
  // unknown key (with a suggestion), a missing required one or a wrong type.
  static Map check_attrs(const std::string& op, const Map& attrs);
};

// Extern kinds (asm, torchscript, ...): each validates its functions and
// may build them.
// validate: (function: ir.ExternFunc, name: str) -> none, throwing with a
//   message when invalid; `name` is the function's global name.
// build: (module: ir.IRModule, target: Target) -> runtime.Module, given the
//   module's functions of this kind (with the module's attributes); the
//   result defines a function of each name in destination-passing style.
//   Undefined: the target's codegen receives them with the prim functions.
struct ExternKindEntry {
  std::string name;
  Function validate;
  std::string doc;
  std::string owner;
  Function build;
};

class ExternKindRegistry {
 public:
  static void register_kind(const std::string& name, Function validate, std::string doc = "",
                            Function build = Function());
  static std::optional<ExternKindEntry> entry(const std::string& name);  // no loading
  static ExternKindEntry get(const std::string& name);                   // lazy ("extern:NAME"); LookupError
  static std::vector<std::string> list();
};

}  // namespace loom::ir

#endif  // LOOM_IR_OP_H_
