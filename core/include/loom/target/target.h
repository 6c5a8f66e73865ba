// Targets (docs/configuration.md): a target kind is registered with a typed
// attribute schema (loom/object/schema.h) and an optional validation hook;
// a Target is a kind plus attributes, validated when it is created, and is
// a C1 constraint (what must hold on the platform): it is stored in the module's
// attributes ("target", "host", "device_placement") where every later pass reads it.
//
// The core registers the kind "cpu" (the machine it runs on); plugins add
// theirs (a miss requests the capability "target:KIND").  Tags are named
// presets (kind + attributes), also registered.
#ifndef LOOM_TARGET_TARGET_H_
#define LOOM_TARGET_TARGET_H_

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loom/ir/module.h"
#include "loom/object/function.h"
#include "loom/object/schema.h"
#include "loom/support/builder.h"
#include "loom/support/cpu.h"

namespace loom::target {

class Target;

// What passes, the driver and the runtime ask of a target kind, declared
// once on its registry entry and read through the helpers below
// (docs/configuration.md, "Target traits").
struct TargetTraits {
  // The widest vector register of a target of this kind, in bits (0: no
  // vector unit); may depend on the target's attributes.  Empty: 128.
  std::function<int64_t(const Target&)> vector_bits;
  // The intrinsics its codegen implements natively; LowerIntrinsics
  // expands the others into them (a kind that declares none has only the
  // primitives every codegen implements).
  std::set<std::string> native_intrinsics;
  // Those it implements natively on some targets of the kind only (an
  // instruction some CPUs have: the llvm kind's dot2_bf16 where the CPU
  // has AVX-512 BF16): the ones `target` has, added to native_intrinsics.
  // Empty: none.
  std::function<std::set<std::string>(const Target&)> target_intrinsics;
  // The CPU features of `target` that graph passes choose kernels by
  // (x86: amx-tile, amx-bf16, amx-int8, by LLVM's names), of those the
  // kind knows; empty: none.
  std::function<std::set<std::string>(const Target&)> cpu_features;
  // The attribute that sets the threads for parallel loops and the VM's
  // host pool (0: one per core); empty: the kind has none.
  std::string threads_attr;
  // Where its code runs: a DLPack device type (kDLCPU = 1).
  int device_type = 1;
  // Its codegen compiles only the regions partitioning gives it (an
  // accelerator's: docs/partitioning.md), so it is never a module's target.
  bool partition_only = false;
  // The passes a config that lists none runs (`pipeline.passes` absent).
  std::vector<std::string> default_pipeline;
  // IR properties its codegen needs of the module it builds, checked by
  // driver::build before codegen (loom/transform/property.h).
  std::vector<std::string> codegen_needs;
  // Which device of its device type a target of this kind runs on (the DLPack
  // device id; may depend on the target's attributes).  Empty: 0.
  std::function<int(const Target&)> device_id;

  // A vector_bits trait that reads an int attribute (-1: this machine's
  // width, detect_vector_bits()).
  static std::function<int64_t(const Target&)> vector_bits_from_attr(std::string attr);
};

// Written with its builder:
//
//   TargetKindEntry::named("npu").doc("...").attrs({...}).traits(traits)
struct TargetKindEntry {
  std::string name;
  std::vector<SchemaField> attrs;
  // (attrs: Map, defaults filled) -> none; throws with a message when the
  // combination is invalid.  May be undefined.
  Function validate;
  std::string doc;
  std::string owner;  // set by the registry: the plugin (or "core") that registered it
  TargetTraits traits;

  class Builder;
  static Builder named(std::string name);
};

class TargetKindEntry::Builder : public FieldBuilder<TargetKindEntry, TargetKindEntry::Builder> {
 public:
  explicit Builder(std::string name) { value_.name = std::move(name); }
  Builder& attrs(std::vector<SchemaField> fields) { return set(&TargetKindEntry::attrs, std::move(fields)); }
  Builder& validate(Function check) { return set(&TargetKindEntry::validate, std::move(check)); }
  Builder& doc(std::string text) { return set(&TargetKindEntry::doc, std::move(text)); }
  Builder& traits(TargetTraits traits) { return set(&TargetKindEntry::traits, std::move(traits)); }
};

inline TargetKindEntry::Builder TargetKindEntry::named(std::string name) { return Builder(std::move(name)); }

class TargetKindRegistry {
 public:
  // Every kind registered or declared by a discovered plugin that is not
  // loaded (attributes and the traits data can carry; no validation hook
  // or vector_bits), by name; no plugin is loaded.
  static std::vector<TargetKindEntry> declarations();
  static std::optional<TargetKindEntry> declaration(const std::string& name);
  static void register_kind(TargetKindEntry entry);
  static std::optional<TargetKindEntry> entry(const std::string& name);  // no loading
  static TargetKindEntry get(const std::string& name);                   // lazy; LookupError with a suggestion
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
  static TargetTag get(const std::string& name);                   // LookupError with a suggestion
  static std::optional<TargetTag> entry(const std::string& name);  // no loading
  static std::vector<std::string> list();
  // Every tag registered or declared by a discovered plugin that is not
  // loaded, by name (what `loomc targets list` shows); loads nothing.
  static std::vector<TargetTag> declarations();
};

// The module with its C1 constraints set: "target", optionally "host", and
// optionally "device_placement" (function name -> Target or device).  A
// device entry must be the device of one of the module's targets (the
// target, the host, or a target of another entry); an Error otherwise.
ir::IRModule with_target(const ir::IRModule& module, const Target& target, const Target& host = Target(),
                         const Map& device_placement = Map());

// loom/support/cpu.h, where the runtime finds them too.
using loom::detect_cpu;
using loom::detect_vector_bits;

// The traits of `target`'s kind, read by passes and the driver.
TargetTraits traits_of(const Target& target);
// The target's vector width (its kind's vector_bits trait; 128 without
// one).  Asked once per target object and thread (the llvm plugin builds
// a target machine to answer).
int64_t vector_bits(const Target& target);
// The device `target`'s code runs on: its kind's device type and id.
Device device_of(const Target& target);
// Whether `a` and `b` are the same target: the same kind and attributes
// (structural equality); two undefined targets are the same.
bool same_target(const Target& a, const Target& b);
// The target a device-placement entry stands for: the entry itself when it
// is a target; for a device, the first of `target`, `host` and the
// placement's targets that runs there (undefined when none does).
Target placement_target(const Any& entry, const Target& target, const Target& host, const Map& placement);
// The target function `name` of `module` was placed on (docs/devices.md,
// "One module, several devices"): its attribute "target" when it has one,
// else its entry in the module's "device_placement"; undefined otherwise.
Target placed_target(const ir::IRModule& module, const std::string& name);
// The target function `name` of `module` is built for: placed_target, else
// the module's (undefined without either).
Target function_target(const ir::IRModule& module, const std::string& name);
// Filters for transform::prim_pass and rewrite_prim_funcs: whether
// function `name` runs on a CPU target, or on a device target
// (function_target; a function with no target passes both).
bool on_cpu_target(const ir::IRModule& module, const std::string& name);
bool on_device_target(const ir::IRModule& module, const std::string& name);
// The target the host code runs on: the module's attribute "host", else the
// module's target when it is a CPU (undefined otherwise).
Target host_target(const ir::IRModule& module);
// The codegens the module partitions for (its attribute partition, set by
// the config's target.partition: docs/partitioning.md), in priority
// order.  Each entry is a codegen's name or a target of its kind (with
// attributes for the codegen).
std::vector<std::string> partition_codegens(const ir::IRModule& module);
// The target driver::build gives codegen `name`: its partition entry's
// target, or one of kind `name` with default attributes.
Target partition_target(const ir::IRModule& module, const std::string& name);
// Where a call_dps of @name runs (PlanDevices and the VM compiler agree
// through this): a prim function on its target's device, an extern
// function (or a name the module lacks) on the host.
Device call_device(const ir::IRModule& module, const std::string& name);
// The target's thread count (its kind's threads attribute; 0 without one).
int64_t num_threads(const Target& target);
// The intrinsics the codegen of `target` implements natively: its kind's
// native_intrinsics and target_intrinsics (none for an undefined target).
// target_intrinsics is asked once per target object and thread.
std::set<std::string> native_intrinsics(const Target& target);
// The CPU features of `target` its kind reports (TargetTraits::
// cpu_features; none for an undefined target or a kind without them).
std::set<std::string> cpu_features(const Target& target);
// The module's target (attribute "target"), or an undefined Target.
Target target_of(const ir::IRModule& module);

}  // namespace loom::target

#endif  // LOOM_TARGET_TARGET_H_
