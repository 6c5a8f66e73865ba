// Target kinds, targets and tags, and the core's own kind "cpu".
#include "loom/target/target.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "loom/object/structural.h"
#include "loom/object/traversal.h"
#include "loom/plugin/manager.h"
#include "loom/runtime/thread_pool.h"
#include "loom/support/registry.h"
#include "loom/support/strings.h"
#include "loom/tir/function.h"
#include "loom/tir/intrinsic.h"
#include "loom/transform/property.h"

namespace loom::target {

LOOM_REGISTER_OBJECT(TargetNode);

namespace {
NamedRegistry<TargetKindEntry>& kinds() {
  static auto* instance = new NamedRegistry<TargetKindEntry>("target kind", "target");
  return *instance;
}
NamedRegistry<TargetTag>& tags() {
  static auto* instance = new NamedRegistry<TargetTag>("target tag", "tag");
  return *instance;
}
}  // namespace

void TargetKindRegistry::register_kind(TargetKindEntry entry) {
  std::string where = "target kind '" + entry.name + "'";
  check_schema(entry.attrs, where);
  const TargetTraits& t = entry.traits;
  if (!t.threads_attr.empty()) {
    auto attr = std::find_if(entry.attrs.begin(), entry.attrs.end(),
                             [&](const SchemaField& f) { return f.name == t.threads_attr; });
    if (attr == entry.attrs.end() || attr->type != "int") {
      LOOM_THROW(Error) << where << ": its threads attribute '" << t.threads_attr
                        << "' is not an int attribute of the kind";
    }
  }
  for (const std::string& property : t.codegen_needs) {
    try {
      transform::PropertyRegistry::get(property);
    } catch (const LookupError& e) {
      LOOM_THROW(LookupError) << where << ": " << e.what();
    }
  }
  kinds().add(std::move(entry));
}
std::optional<TargetKindEntry> TargetKindRegistry::entry(const std::string& name) { return kinds().entry(name); }

std::vector<TargetKindEntry> TargetKindRegistry::declarations() {
  std::map<std::string, TargetKindEntry> out;
  for (const std::string& name : list()) out.emplace(name, *entry(name));
  for_each_declaring_plugin([&](const std::string& owner, const PluginDeclarations& d) {
    for (const DeclaredTargetKind& k : d.target_kinds) {
      TargetTraits traits;
      traits.native_intrinsics = std::set<std::string>(k.native_intrinsics.begin(), k.native_intrinsics.end());
      traits.threads_attr = k.threads_attr;
      traits.device_type = k.device_type;
      traits.default_pipeline = k.default_pipeline;
      traits.codegen_needs = k.codegen_needs;
      TargetKindEntry entry = TargetKindEntry::named(k.name).attrs(k.attrs).doc(k.doc).traits(traits);
      entry.owner = owner;  // declared by that plugin, not registered
      out.emplace(k.name, std::move(entry));
    }
  });
  std::vector<TargetKindEntry> list;
  for (auto& item : out) list.push_back(std::move(item.second));
  return list;
}

std::optional<TargetKindEntry> TargetKindRegistry::declaration(const std::string& name) {
  for (TargetKindEntry& e : declarations())
    if (e.name == name) return std::move(e);
  return std::nullopt;
}
TargetKindEntry TargetKindRegistry::get(const std::string& name) { return kinds().get(name); }
std::vector<std::string> TargetKindRegistry::list() { return kinds().names(); }

Target::Target(const std::string& kind, const Map& attrs) {
  TargetKindEntry entry = TargetKindRegistry::get(kind);
  Map full = apply_schema(entry.attrs, attrs, "target '" + kind + "'", "attribute");
  if (entry.validate.defined()) {
    try {
      entry.validate(full);
    } catch (const Error& e) {
      LOOM_THROW(Error) << "target '" << kind << "': " << e.what();
    }
  }
  auto node = make_object<TargetNode>();
  node->kind = kind;
  node->attrs = full;
  data_ = node;
}

Target Target::from_tag(const std::string& tag, const Map& attrs) {
  TargetTag preset = TargetTagRegistry::get(tag);
  std::map<std::string, Any> merged = preset.attrs->items;
  if (attrs.defined())
    for (const auto& item : attrs->items) merged[item.first] = item.second;
  return Target(preset.kind, Map(merged));
}

Target Target::host() { return Target("cpu", Map({{"mcpu", "native"}})); }

void TargetTagRegistry::register_tag(TargetTag tag) {
  Target(tag.kind, tag.attrs);  // a tag must make a valid target
  tags().add(std::move(tag));
}
TargetTag TargetTagRegistry::get(const std::string& name) { return tags().get(name); }
std::optional<TargetTag> TargetTagRegistry::entry(const std::string& name) { return tags().entry(name); }

std::vector<TargetTag> TargetTagRegistry::declarations() {
  std::map<std::string, TargetTag> out;
  for (const std::string& name : list()) out.emplace(name, *entry(name));
  for_each_declaring_plugin([&](const std::string& owner, const PluginDeclarations& d) {
    for (const DeclaredTag& t : d.tags) {
      std::map<std::string, Any> attrs;
      for (const SchemaField& f : t.attrs) attrs[f.name] = f.default_value;
      out.emplace(t.name, TargetTag{t.name, t.kind, Map(attrs), t.doc, owner});
    }
  });
  std::vector<TargetTag> list;
  for (auto& item : out) list.push_back(std::move(item.second));
  return list;
}
std::vector<std::string> TargetTagRegistry::list() { return tags().names(); }

bool same_target(const Target& a, const Target& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  return a.same_as(b) || structural_equal(Any(a), Any(b));
}

Target placement_target(const Any& entry, const Target& target, const Target& host, const Map& placement) {
  if (entry.kind() != AnyKind::kDevice) return entry.cast<Target>();
  Device wanted = entry.as_device();
  std::vector<Target> candidates{target, host};
  if (placement.defined())
    for (const auto& item : placement->items)
      if (item.second.kind() != AnyKind::kDevice) candidates.push_back(item.second.cast<Target>());
  for (const Target& t : candidates)
    if (t.defined() && device_of(t) == wanted) return t;
  return Target();
}

ir::IRModule with_target(const ir::IRModule& module, const Target& target, const Target& host,
                         const Map& device_placement) {
  ir::IRModule out = module.with_attr("target", target);
  if (host.defined()) out = out.with_attr("host", host);
  if (device_placement.defined() && device_placement.size()) {
    for (const auto& item : device_placement->items) {
      if (!module.contains(item.first)) {
        LOOM_THROW(LookupError) << "device placement names @" << item.first << ", which the module does not define"
                                << did_you_mean(item.first, module.names());
      }
      if (!placement_target(item.second, target, host, device_placement).defined()) {
        std::string device = item.second.as_device().to_string();
        LOOM_THROW(Error) << "device placement puts @" << item.first << " on " << device
                          << ", where none of the module's targets runs: give a target instead (for example {kind: "
                          << device.substr(0, device.find(':')) << "})";
      }
    }
    out = out.with_attr("device_placement", device_placement);
  }
  return out;
}

std::function<int64_t(const Target&)> TargetTraits::vector_bits_from_attr(std::string attr) {
  return [attr](const Target& target) {
    int64_t bits = target->attrs.at(attr).as_int();
    return bits < 0 ? detect_vector_bits() : bits;
  };
}

TargetTraits traits_of(const Target& target) { return TargetKindRegistry::get(target->kind).traits; }

int64_t vector_bits(const Target& target) {
  thread_local Target asked;
  thread_local int64_t answer = 0;
  if (asked.same_as(target)) return answer;
  TargetTraits traits = traits_of(target);
  answer = traits.vector_bits ? traits.vector_bits(target) : 128;
  asked = target;
  return answer;
}

Device device_of(const Target& target) {
  TargetTraits traits = traits_of(target);
  Device device;
  device.device_type = traits.device_type;
  device.device_id = traits.device_id ? traits.device_id(target) : 0;
  return device;
}

Target placed_target(const ir::IRModule& module, const std::string& name) {
  if (!module.contains(name)) return Target();
  ir::BaseFunc f = module.lookup(name);
  if (f->attrs.contains("target")) return f->attrs.at("target").cast<Target>();
  if (!module->attrs.contains("device_placement")) return Target();
  Map placement = module->attrs.at("device_placement").cast<Map>();
  if (!placement.contains(name)) return Target();
  return placement_target(placement.at(name), target_of(module), host_target(module), placement);
}

Target function_target(const ir::IRModule& module, const std::string& name) {
  Target placed = placed_target(module, name);
  return placed.defined() ? placed : target_of(module);
}

bool on_cpu_target(const ir::IRModule& module, const std::string& name) {
  Target t = function_target(module, name);
  return !t.defined() || traits_of(t).device_type == Device::kCPU;
}

bool on_device_target(const ir::IRModule& module, const std::string& name) {
  Target t = function_target(module, name);
  return !t.defined() || traits_of(t).device_type != Device::kCPU;
}

Target host_target(const ir::IRModule& module) {
  if (module->attrs.contains("host")) return module->attrs.at("host").cast<Target>();
  Target target = target_of(module);
  if (target.defined() && traits_of(target).device_type == Device::kCPU) return target;
  return Target();
}

std::vector<std::string> partition_codegens(const ir::IRModule& module) {
  std::vector<std::string> out;
  if (!module->attrs.defined() || !module->attrs.contains("partition")) return out;
  for (const Any& entry : module->attrs.at("partition").cast<Array>()) {
    out.push_back(entry.kind() == AnyKind::kStr ? entry.as_string() : entry.cast<Target>()->kind);
  }
  return out;
}

Target partition_target(const ir::IRModule& module, const std::string& name) {
  if (module->attrs.defined() && module->attrs.contains("partition")) {
    for (const Any& entry : module->attrs.at("partition").cast<Array>()) {
      if (entry.kind() != AnyKind::kStr && entry.cast<Target>()->kind == name) return entry.cast<Target>();
    }
  }
  return Target(name, Map::empty());
}

Device call_device(const ir::IRModule& module, const std::string& name) {
  if (!module.contains(name) || !module.lookup(name).as<tir::PrimFuncNode>()) return Device();
  Target t = function_target(module, name);
  return t.defined() ? device_of(t) : Device();
}

int64_t num_threads(const Target& target) {
  std::string attr = traits_of(target).threads_attr;
  return attr.empty() ? 0 : target->attrs.at(attr).as_int();
}

std::set<std::string> native_intrinsics(const Target& target) {
  if (!target.defined()) return {};
  TargetTraits traits = traits_of(target);
  if (!traits.target_intrinsics) return traits.native_intrinsics;
  thread_local Target asked;
  thread_local std::set<std::string> answer;
  if (!asked.same_as(target)) {
    answer = traits.target_intrinsics(target);
    asked = target;
  }
  std::set<std::string> all = traits.native_intrinsics;
  all.insert(answer.begin(), answer.end());
  return all;
}

std::set<std::string> cpu_features(const Target& target) {
  if (!target.defined()) return {};
  TargetTraits traits = traits_of(target);
  if (!traits.cpu_features) return {};
  thread_local Target asked;
  thread_local std::set<std::string> answer;
  if (!asked.same_as(target)) {
    answer = traits.cpu_features(target);
    asked = target;
  }
  return answer;
}

Target target_of(const ir::IRModule& module) {
  if (!module->attrs.contains("target")) return Target();
  return module->attrs.at("target").cast<Target>();
}

namespace {
// intrinsics_lowered: every intrinsic call is one the function's target
// implements natively, or a primitive every target implements.
// buffers_flat: every buffer a CPU function allocates or accesses is
// one-dimensional and compact (FlattenBuffer flattens CPU functions only;
// a device's codegen takes buffers with their shapes).
std::optional<std::string> structured_buffer(const ir::IRModule& module) {
  return transform::first_problem<tir::PrimFuncNode>(
      module, [&module](const std::string& name, const tir::PrimFuncNode& f) {
        std::optional<std::string> found;
        if (!on_cpu_target(module, name)) return found;  // a device's code keeps its buffers' shapes
        auto flat = [&](const tir::BufferNode* b, const std::string& how) {
          if (found || (b->shape.size() == 1 && b->strides.size() == 0)) return;
          found = "@" + name + ": buffer '" + b->name + "' is " + how + " with " + std::to_string(b->shape.size()) +
                  (b->strides.size() ? " dimensions and strides" : " dimensions");
        };
        Visitor v;
        v.on<tir::BufferLoadNode>([&](const tir::BufferLoadNode* l) {
          flat(l->buffer.get(), "read");
          v.visit_children(l);
        });
        v.on<tir::BufferStoreNode>([&](const tir::BufferStoreNode* s) {
          flat(s->buffer.get(), "written");
          v.visit_children(s);
        });
        v.on<tir::AllocateNode>([&](const tir::AllocateNode* a) {
          flat(a->buffer.get(), "allocated");
          v.visit_children(a);
        });
        v.visit(Any(f.body));
        return found;
      });
}

std::optional<std::string> unlowered_intrinsic(const ir::IRModule& module) {
  return transform::first_problem<tir::PrimFuncNode>(module, [&](const std::string& name, const tir::PrimFuncNode& f) {
    Target target = function_target(module, name);
    std::string kind = target.defined() ? target->kind : "";
    std::set<std::string> native = native_intrinsics(target);
    std::optional<std::string> found;
    Visitor v;
    v.on<tir::CallNode>([&](const tir::CallNode* call) {
      auto entry = tir::IntrinsicRegistry::entry(call->op);
      if (!found && !native.count(call->op) && !(entry && !entry->expand)) {
        found = "@" + name + " calls the intrinsic '" + call->op + "', which " +
                (kind.empty() ? std::string("is not a primitive and the module has no target")
                              : "target kind '" + kind + "' does not implement natively");
      }
      v.visit_children(call);
    });
    v.visit(Any(f.body));
    return found;
  });
}

// kernels_split: every prim function built for a device target is a
// kernel, or host code that launches kernels (SplitHostDevice's output).
std::optional<std::string> unsplit_device_function(const ir::IRModule& module) {
  return transform::first_problem<tir::PrimFuncNode>(module, [&](const std::string& name, const tir::PrimFuncNode& f) {
    std::optional<std::string> problem;
    if (f.attrs.contains("device_kernel") || f.attrs.contains("device_type")) return problem;
    if (!on_cpu_target(module, name))
      problem =
          "@" + name + " runs on target '" + function_target(module, name)->kind + "' but is not split into kernels";
    return problem;
  });
}

const bool target_properties_registered = [] {
  using transform::PropertyInfo;
  transform::PropertyRegistry::register_property(
      PropertyInfo::named(transform::property::kIntrinsicsLowered)
          .summary(
              "every intrinsic call in a prim function is one the module's target implements natively, or a primitive")
          .level("tir")
          .established_by("LowerIntrinsics")
          .check(unlowered_intrinsic));
  transform::PropertyRegistry::register_property(
      PropertyInfo::named(transform::property::kBuffersFlat)
          .summary("every buffer a prim function for a CPU target allocates or accesses is one-dimensional and compact")
          .level("tir")
          .established_by("FlattenBuffer")
          .check(structured_buffer));
  transform::PropertyRegistry::register_property(
      PropertyInfo::named(transform::property::kKernelsSplit)
          .summary("every prim function on a device target is a kernel or the host code that launches kernels")
          .level("tir")
          .established_by("device_kernels")
          .check(unsplit_device_function));
  return true;
}();

// The machine Loom runs on.  vector-bits: -1 means "detect"; 0 means no
// vector unit (a constraint every pass must respect).
const bool cpu_kind_registered = [] {
  TargetTraits cpu_traits;
  cpu_traits.vector_bits = TargetTraits::vector_bits_from_attr("vector-bits");
  cpu_traits.threads_attr = "num-threads";
  TargetKindRegistry::register_kind(
      TargetKindEntry::named("cpu")
          .attrs({{"mcpu", "str", "native", "CPU model, or 'native' for the machine Loom runs on"},
                  SchemaField{"num-threads", "int", int64_t{0}, "threads for parallel loops; 0: one per core"}.between(
                      0, runtime::kMaxThreads),
                  SchemaField{"vector-bits", "int", int64_t{-1},
                              "vector register width in bits; -1: detect, 0: no vector unit"}
                      .between(-1, 512)})
          .validate(Function::typed(
              [](Map attrs) {
                int64_t bits = attrs.at("vector-bits").as_int();
                if (bits != -1 && bits != 0 && bits != 64 && bits != 128 && bits != 256 && bits != 512) {
                  LOOM_THROW(Error) << "vector-bits must be -1 (detect), 0, 64, 128, 256 or 512, got " << bits;
                }
              },
              "cpu.validate"))
          .doc("the CPU of the machine Loom runs on")
          .traits(cpu_traits));
  return true;
}();
}  // namespace

}  // namespace loom::target
