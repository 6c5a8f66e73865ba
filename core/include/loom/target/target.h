// Targets (docs/configuration.md): a target kind is registered with a typed
// attribute schema (loom/object/schema.h) and an optional validation hook;
// a Target is a kind plus attributes, validated when it is created, and is
// a C1 constraint: it is stored in the module's attributes ("target",
// "host", "device_placement") where every later pass can read it.
//
// The core registers the kind "cpu" (the machine it runs on); plugins add
// theirs (a miss requests the capability "target:KIND").  Tags are named
// presets (kind + attributes), also registered.
#ifndef LOOM_TARGET_TARGET_H_
#define LOOM_TARGET_TARGET_H_

#include <optional>
#include <string>
#include <vector>

#include "loom/ir/module.h"
#include "loom/object/function.h"
#include "loom/object/schema.h"

namespace loom::target {

struct TargetKindEntry {
  std::string name;
  std::vector<SchemaField> attrs;
  // (attrs: Map, defaults filled) -> none; throws with a message when the
  // combination is invalid.  May be undefined.
  Function validate;
  std::string doc;
  std::string owner;
};

class TargetKindRegistry {
 public:
  static void register_kind(TargetKindEntry entry);
  static std::optional<TargetKindEntry> entry(const std::string& name);  // no loading
  static TargetKindEntry get(const std::string& name);  // lazy; LookupError with a suggestion
  static std::vector<std::string> list();
};

class TargetNode : public Object {
 public:
  std::string kind;
  Map attrs;  // every attribute of the kind's schema, defaults filled
  LOOM_OBJECT(TargetNode, Object, "target.Target");
  static void reflect(ReflectionBuilder<TargetNode>& r) {
    r.field("kind", &TargetNode::kind).field("attrs", &TargetNode::attrs);
  }
};

class Target : public ObjectRef {
 public:
  LOOM_OBJECT_REF(Target, ObjectRef, TargetNode)
  // Checks `attrs` against the kind's schema (unknown attributes suggest,
  // wrong types name the expected type, defaults fill in) and runs its
  // validation.  Throws TypeError / Error.
  Target(const std::string& kind, const Map& attrs = Map::empty());
  // A registered tag (named preset), with attributes overridden by `attrs`.
  static Target from_tag(const std::string& tag, const Map& attrs = Map::empty());
  // The machine Loom runs on: kind "cpu" with mcpu "native".
  static Target host();
  Any attr(const std::string& name) const { return get()->attrs.at(name); }
};

struct TargetTag {
  std::string name;
  std::string kind;
  Map attrs;
  std::string doc;
  std::string owner;
};

class TargetTagRegistry {
 public:
  static void register_tag(TargetTag tag);
  static TargetTag get(const std::string& name);  // LookupError with a suggestion
  static std::vector<std::string> list();
};

// The module with its C1 constraints set: "target", optionally "host", and
// optionally "device_placement" (function name -> Target or device).
ir::IRModule with_target(const ir::IRModule& module, const Target& target, const Target& host = Target(),
                         const Map& device_placement = Map());

// The CPU's vector width in bits as detected at run time (0 if none known).
int64_t detect_vector_bits();

}  // namespace loom::target

#endif  // LOOM_TARGET_TARGET_H_
