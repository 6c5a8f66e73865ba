// loomc functions list, call, passes list, targets list and ops list: what
// the registries hold and the discovered plugins declare, listed without
// loading any plugin; call loads the one that provides the function.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "commands.h"
#include "loom/driver/declarations.h"
#include "loom/ir/op.h"
#include "loom/object/function.h"
#include "loom/object/structural.h"
#include "loom/plugin/manifest.h"
#include "loom/support/registration.h"
#include "loom/support/strings.h"
#include "loom/target/target.h"
#include "loom/transform/pass.h"

namespace loomc {

using loom::PluginManager;
using loom::PluginRecord;

std::string schema_text(const std::vector<loom::SchemaField>& fields) {
  std::vector<std::string> parts;
  for (const auto& f : fields) {
    std::string bounds = loom::bounds_text(f);
    parts.push_back(f.name + ": " + f.type + (bounds.empty() ? "" : " (" + bounds + ")") +
                    (f.default_value.is_none() ? " (required)" : " = " + loom::repr(f.default_value)));
  }
  return loom::join(parts, ", ");
}

void write_schema_listing(loom::JsonWriter& json, const std::vector<loom::SchemaField>& fields) {
  json.begin_array();
  for (const auto& f : fields) {
    json.begin_object().key("name").value(f.name).key("type").value(f.type).key("default").value(
        loom::repr(f.default_value));
    json.key("doc").value(f.doc);
    if (f.min) json.key("min").value(*f.min);
    if (f.max) json.key("max").value(*f.max);
    json.end_object();
  }
  json.end_array();
}

// Every operator: the registered ones (their plugins loaded) and those the
// discovered plugins declare, each with its owner, arity, pattern and
// attribute schema.  Loads nothing.
int ops_list(bool as_json) {
  struct Row {
    std::string name, owner, doc, pattern;
    int inputs;
    std::vector<loom::SchemaField> attrs;
  };
  std::map<std::string, Row> rows;
  for (const std::string& name : loom::ir::OpRegistry::list()) {
    loom::ir::OpEntry e = *loom::ir::OpRegistry::entry(name);
    rows[name] =
        Row{name, e.owner, e.def.doc, loom::ir::pattern_kind_name(e.def.pattern), e.def.num_inputs, e.def.attrs};
  }
  for (const PluginRecord& r : PluginManager::global().list()) {
    if (!r.manifest || !r.manifest->declarations) continue;
    for (const auto& op : r.manifest->declarations->ops)
      rows.emplace(op.name, Row{op.name, r.name, op.doc, op.pattern, op.num_inputs, op.attrs});
  }
  if (as_json) {
    loom::JsonWriter json;
    json.begin_array();
    for (const auto& [name, row] : rows) {
      json.begin_object().key("name").value(name).key("owner").value(row.owner).key("inputs").value(
          int64_t{row.inputs});
      json.key("pattern").value(row.pattern).key("doc").value(row.doc).key("attributes");
      write_schema_listing(json, row.attrs);
      json.end_object();
    }
    json.end_array();
    std::cout << json.str() << "\n";
    return 0;
  }
  for (const auto& [name, row] : rows) {
    std::string arity = row.inputs < 0 ? "any" : std::to_string(row.inputs);
    std::printf("%-22s from %-8s %s inputs, %s: %s\n", name.c_str(), row.owner.c_str(), arity.c_str(),
                row.pattern.c_str(), row.doc.c_str());
    if (!row.attrs.empty()) std::printf("%-22s attributes: %s\n", "", schema_text(row.attrs).c_str());
  }
  return 0;
}

int functions_list(bool as_json) {
  std::vector<std::string> names = loom::FunctionRegistry::list();
  if (as_json) {
    loom::JsonWriter json;
    json.begin_array();
    for (const auto& name : names) {
      auto entry = loom::FunctionRegistry::entry(name);
      json.begin_object().key("name").value(name).key("owner").value(entry->owner).key("doc").value(entry->doc);
      json.end_object();
    }
    json.end_array();
    std::cout << json.str() << "\n";
    return 0;
  }
  for (const auto& name : names) {
    auto entry = loom::FunctionRegistry::entry(name);
    std::printf("%-28s %-10s %s\n", name.c_str(), entry->owner.c_str(), entry->doc.c_str());
  }
  return 0;
}

namespace {
loom::Any parse_argument(const std::string& text) {
  if (text == "true") return loom::Any(true);
  if (text == "false") return loom::Any(false);
  try {
    size_t used = 0;
    long long value = std::stoll(text, &used);
    if (used == text.size()) return loom::Any(static_cast<int64_t>(value));
  } catch (const std::exception&) {
  }
  try {
    size_t used = 0;
    double value = std::stod(text, &used);
    if (used == text.size()) return loom::Any(value);
  } catch (const std::exception&) {
  }
  return loom::Any(text);
}
}  // namespace

int call(const std::string& name, const std::vector<std::string>& texts) {
  loom::Function function = loom::FunctionRegistry::get(name);
  std::vector<loom::Any> args;
  for (const auto& text : texts) args.push_back(parse_argument(text));
  loom::Any result = function.call(args.data(), static_cast<int32_t>(args.size()));
  if (result.kind() == loom::AnyKind::kStr) {
    std::cout << result.as_string() << "\n";
  } else if (!result.is_none()) {
    std::cout << loom::repr(result) << "\n";
  }
  return 0;
}

// Passes and target kinds are listed from the registries and from the
// declarations of discovered plugins, so listing loads no plugin.  A
// discovered plugin without declarations shows its names only.
namespace {
std::vector<std::string> undeclared(const std::string& kind, const std::vector<std::string>& declared) {
  std::vector<std::string> out;
  for (const std::string& name : PluginManager::global().available(kind))
    if (std::find(declared.begin(), declared.end(), name) == declared.end()) out.push_back(name);
  return out;
}
}  // namespace

int passes_list(bool as_json) {
  using loom::transform::PassRegistry;
  std::vector<loom::transform::PassDeclaration> passes = PassRegistry::declarations();
  std::vector<std::string> names;
  for (const auto& p : passes) names.push_back(p.info.name);
  std::vector<std::string> others = undeclared("pass", names);
  if (as_json) {
    loom::JsonWriter json;
    json.begin_array();
    for (const auto& p : passes) {
      const auto& info = p.info;
      json.begin_object().key("name").value(info.name).key("summary").value(info.summary);
      json.key("opt_level").value(int64_t{info.opt_level}).key("required").string_array(info.required);
      json.key("needs").string_array(info.needs).key("establishes").string_array(info.establishes);
      json.key("preserves").string_array(info.preserves);
      if (!p.sequence.empty()) json.key("passes").string_array(p.sequence);
      json.key("options");
      write_schema_listing(json, info.options);
      json.key("owner").value(p.owner).key("loaded").value(p.loaded).end_object();
    }
    for (const auto& name : others)
      json.begin_object().key("name").value(name).key("declared").value(false).end_object();
    json.end_array();
    std::cout << json.str() << "\n";
    return 0;
  }
  for (const auto& p : passes) {
    const auto& info = p.info;
    std::printf("%-24s opt %d  from %-10s %s\n", info.name.c_str(), info.opt_level, p.owner.c_str(),
                info.summary.c_str());
    if (!info.required.empty()) std::printf("%-24s requires: %s\n", "", loom::join(info.required, ", ").c_str());
    if (!info.needs.empty()) std::printf("%-24s needs: %s\n", "", loom::join(info.needs, ", ").c_str());
    if (!info.establishes.empty())
      std::printf("%-24s establishes: %s\n", "", loom::join(info.establishes, ", ").c_str());
    if (!info.preserves.empty()) std::printf("%-24s preserves: %s\n", "", loom::join(info.preserves, ", ").c_str());
    if (!info.options.empty()) std::printf("%-24s options: %s\n", "", schema_text(info.options).c_str());
  }
  for (const auto& name : others)
    std::printf("%-24s (its plugin declares no schema; load it to see one)\n", name.c_str());
  return 0;
}

int targets_list(bool as_json) {
  using loom::target::TargetKindRegistry;
  std::vector<loom::target::TargetKindEntry> kinds = TargetKindRegistry::declarations();
  std::vector<std::string> names;
  for (const auto& k : kinds) names.push_back(k.name);
  std::vector<std::string> others = undeclared("target", names);
  std::vector<loom::target::TargetTag> tags = loom::target::TargetTagRegistry::declarations();
  std::vector<std::string> tag_names;
  for (const auto& t : tags) tag_names.push_back(t.name);
  std::vector<std::string> other_tags = undeclared("tag", tag_names);
  if (as_json) {
    loom::JsonWriter json;
    json.begin_object().key("kinds").begin_array();
    for (const auto& kind : kinds) {
      json.begin_object().key("name").value(kind.name).key("doc").value(kind.doc).key("owner").value(kind.owner);
      json.key("attributes");
      write_schema_listing(json, kind.attrs);
      const auto& t = kind.traits;
      json.key("traits").begin_object();
      json.key("native_intrinsics")
          .string_array(std::vector<std::string>(t.native_intrinsics.begin(), t.native_intrinsics.end()));
      json.key("threads_attr").value(t.threads_attr).key("device_type").value(int64_t{t.device_type});
      json.key("default_pipeline").string_array(t.default_pipeline).key("codegen_needs").string_array(t.codegen_needs);
      json.end_object();
      json.end_object();
    }
    for (const auto& name : others)
      json.begin_object().key("name").value(name).key("declared").value(false).end_object();
    json.end_array().key("tags").begin_array();
    for (const auto& tag : tags) {
      json.begin_object().key("name").value(tag.name).key("kind").value(tag.kind).key("doc").value(tag.doc);
      json.key("owner").value(tag.owner).key("attributes").begin_object();
      for (const auto& item : tag.attrs->items) {
        json.key(item.first);
        loom::write_value(json, item.second);
      }
      json.end_object().end_object();
    }
    for (const auto& name : other_tags)
      json.begin_object().key("name").value(name).key("declared").value(false).end_object();
    json.end_array().end_object();
    std::cout << json.str() << "\n";
    return 0;
  }
  for (const auto& kind : kinds) {
    std::printf("%-12s from %-10s %s\n", kind.name.c_str(), kind.owner.c_str(), kind.doc.c_str());
    std::printf("%-12s attributes: %s\n", "", schema_text(kind.attrs).c_str());
    const auto& t = kind.traits;
    std::printf("%-12s device: %s; threads: %s; default pipeline: %s\n", "",
                loom::Device{t.device_type, 0}.to_string().c_str(),
                t.threads_attr.empty() ? "-" : t.threads_attr.c_str(),
                t.default_pipeline.empty() ? "(none)" : loom::join(t.default_pipeline, ", ").c_str());
    if (!t.native_intrinsics.empty()) {
      std::vector<std::string> natives(t.native_intrinsics.begin(), t.native_intrinsics.end());
      std::printf("%-12s native intrinsics: %s\n", "", loom::join(natives, ", ").c_str());
    }
    if (!t.codegen_needs.empty())
      std::printf("%-12s codegen needs: %s\n", "", loom::join(t.codegen_needs, ", ").c_str());
  }
  for (const auto& name : others)
    std::printf("%-12s (its plugin declares no schema; load it to see one)\n", name.c_str());
  for (const auto& tag : tags) {
    std::vector<std::string> attrs;
    for (const auto& item : tag.attrs->items) attrs.push_back(item.first + ": " + loom::repr(item.second));
    std::printf("tag %-10s kind %s {%s} from %s%s%s\n", tag.name.c_str(), tag.kind.c_str(),
                loom::join(attrs, ", ").c_str(), tag.owner.c_str(), tag.doc.empty() ? "" : ": ", tag.doc.c_str());
  }
  for (const auto& name : other_tags)
    std::printf("tag %-10s (its plugin declares no schema; load it to see one)\n", name.c_str());
  return 0;
}

}  // namespace loomc
