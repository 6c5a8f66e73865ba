// A plugin's declarations from the registries (loom/driver/declarations.h).
#include "loom/driver/declarations.h"

#include <set>

#include "loom/ir/op.h"
#include "loom/plugin/manifest.h"
#include "loom/support/registration.h"
#include "loom/target/target.h"
#include "loom/transform/pass.h"

namespace loom::driver {

std::string plugin_declarations(const std::string& owner) {
  PluginDeclarations d;
  std::set<std::string> pass_options;
  for (const std::string& name : transform::PassRegistry::list()) {
    auto entry = transform::PassRegistry::entry(name);
    if (!entry || entry->owner != owner) continue;
    const transform::PassInfo& info = entry->pass.info();
    DeclaredPass p{info.name,      info.summary, info.opt_level, info.required, info.needs, info.establishes,
                   info.preserves, {},           info.options};
    for (const ObjectRef& step : entry->pass->sequence)
      p.sequence.push_back(downcast<transform::Pass>(step).info().name);
    for (const std::string& step : entry->pass->sequence_names) p.sequence.push_back(step);
    for (const SchemaField& option : info.options) pass_options.insert(info.name + "." + option.name);
    d.passes.push_back(std::move(p));
  }
  for (const std::string& name : target::TargetKindRegistry::list()) {
    auto kind = target::TargetKindRegistry::entry(name);
    if (!kind || kind->owner != owner) continue;
    const target::TargetTraits& t = kind->traits;
    d.target_kinds.push_back(
        DeclaredTargetKind{kind->name, kind->doc, kind->attrs,
                           std::vector<std::string>(t.native_intrinsics.begin(), t.native_intrinsics.end()),
                           t.default_pipeline, t.codegen_needs, t.threads_attr, t.device_type});
  }
  for (const std::string& name : target::TargetTagRegistry::list()) {
    auto tag = target::TargetTagRegistry::entry(name);
    if (!tag || tag->owner != owner) continue;
    DeclaredTag t{tag->name, tag->kind, tag->doc, {}};
    for (const auto& item : tag->attrs->items) t.attrs.push_back(SchemaField{item.first, "Any", item.second, ""});
    d.tags.push_back(std::move(t));
  }
  for (const std::string& name : ir::OpRegistry::list()) {
    auto op = ir::OpRegistry::entry(name);
    if (!op || op->owner != owner) continue;
    d.ops.push_back(DeclaredOp{op->def.name, op->def.doc, ir::pattern_kind_name(op->def.pattern), op->def.num_inputs,
                               op->def.attrs});
  }
  for (const std::string& key : transform::ConfigRegistry::list()) {
    auto entry = transform::ConfigRegistry::entry(key);
    if (entry && entry->owner == owner && !pass_options.count(key)) d.config.push_back(entry->field);
  }
  return write_declarations(capabilities_owned_by(owner), d);
}

}  // namespace loom::driver
