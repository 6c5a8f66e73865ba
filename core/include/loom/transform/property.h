// IR properties: the vocabulary of pass contracts (docs/passes.md, "Pass
// contracts").  A pass declares the properties it needs, establishes and
// preserves on its PassInfo; Sequential tracks which hold of the module it
// transforms and, before each pass, makes sure its needs hold: known,
// seen by the property's check, or established by running the property's
// pass when the property allows it -- otherwise it stops with an error
// naming the pass, the property and the pass that establishes it.
//
// The core registers types_inferred, shared_values_bound, ops_lowered,
// fused, buffers_flat, intrinsics_lowered and kernels_split; plugins register more (a miss requests the
// capability "property:NAME").
#ifndef LOOM_TRANSFORM_PROPERTY_H_
#define LOOM_TRANSFORM_PROPERTY_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/module.h"
#include "loom/support/builder.h"

namespace loom::transform {

// Whether a property holds of a module: nullopt when it does, otherwise
// where it fails ("@main: buffer 'A' is accessed with 2 indices").
using PropertyCheck = std::function<std::optional<std::string>(const ir::IRModule&)>;

// Written with its builder:
//
//   PropertyInfo::named("fused").summary("...").level("graph").established_by("FuseOps")
struct PropertyInfo {
  std::string name;
  std::string summary;         // what holds, as a clause ("every ... is ...")
  std::string established_by;  // the pass that establishes it
  // The pass manager may run `established_by` itself when a pass needs
  // the property and it does not hold (an analysis-like pass without
  // choices: InferType); otherwise a missing property is an error.
  bool auto_establish = false;
  PropertyCheck check;  // may be empty: the property is only tracked
  std::string owner;    // set by the registry: the plugin (or "core") that registered it
  // The IR level whose functions it speaks of ("graph", "tir", "ir"); a
  // pass that changes only other levels keeps it (PassInfo::changes).
  // Empty: the whole module, which any change may break.
  std::string level;

  class Builder;
  static Builder named(std::string name);
};

class PropertyInfo::Builder : public FieldBuilder<PropertyInfo, PropertyInfo::Builder> {
 public:
  explicit Builder(std::string name) { value_.name = std::move(name); }
  Builder& summary(std::string text) { return set(&PropertyInfo::summary, std::move(text)); }
  Builder& established_by(std::string pass) { return set(&PropertyInfo::established_by, std::move(pass)); }
  // The pass manager may run established_by itself (see above).
  Builder& auto_establish() { return set(&PropertyInfo::auto_establish, true); }
  Builder& check(PropertyCheck check) { return set(&PropertyInfo::check, std::move(check)); }
  Builder& level(std::string level) { return set(&PropertyInfo::level, std::move(level)); }
};

inline PropertyInfo::Builder PropertyInfo::named(std::string name) { return Builder(std::move(name)); }

// The IR level of a function: the prefix of its node's type key ("graph"
// for graph.Function, "tir" for tir.PrimFunc, "ir" for ir.ExternFunc).
std::string function_level(const ir::BaseFunc& f);

// For checks: the first problem `check_one(name, function)` finds among the
// module's functions of one variant (a graph::FunctionNode, a
// tir::PrimFuncNode, ...), in name order.
template <class VariantNode, class CheckOne>
std::optional<std::string> first_problem(const ir::IRModule& module, CheckOne check_one) {
  for (const std::string& name : module.names()) {
    const auto* f = module.lookup(name).template as<VariantNode>();
    if (!f) continue;
    if (std::optional<std::string> problem = check_one(name, *f)) return problem;
  }
  return std::nullopt;
}

class PropertyRegistry {
 public:
  static void register_property(PropertyInfo info, bool allow_override = false);
  static std::optional<PropertyInfo> entry(const std::string& name);  // no loading
  static PropertyInfo get(const std::string& name);  // lazy ("property:NAME"); LookupError with a suggestion
  static std::vector<std::string> list();
};

// The properties the core registers.
namespace property {
inline constexpr const char* kTypesInferred = "types_inferred";
inline constexpr const char* kOpsLowered = "ops_lowered";
inline constexpr const char* kFused = "fused";
inline constexpr const char* kBuffersFlat = "buffers_flat";
inline constexpr const char* kIntrinsicsLowered = "intrinsics_lowered";
inline constexpr const char* kKernelsSplit = "kernels_split";
inline constexpr const char* kSharedValuesBound = "shared_values_bound";
// In `preserves`: every property.
inline constexpr const char* kAll = "*";
}  // namespace property

}  // namespace loom::transform

#endif  // LOOM_TRANSFORM_PROPERTY_H_
