// loomc plugins list, info, load and declare: the plugins on the search
// path, read without loading them, or loaded (docs/architecture.md, "The
// command line"; doctor and test are plugin_tools.cc).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "commands.h"
#include "loom/driver/declarations.h"
#include "loom/object/function.h"
#include "loom/object/structural.h"
#include "loom/plugin/manifest.h"
#include "loom/support/error.h"
#include "loom/support/registration.h"
#include "loom/support/strings.h"

namespace loomc {

using loom::PluginManager;
using loom::PluginRecord;

const char* const kPluginsHelp = R"(loomc plugins -- discover, inspect and load plugins

Usage:
  loomc plugins list [--json]
      One row per plugin file found on the search path: name, version, state and
      what it provides.  State is 'discovered' (manifest read, not loaded),
      'loaded', or 'failed' with the reason (not a plugin, ABI mismatch,
      duplicate name, capability conflict, ...).  Listing never runs plugin code.
      --json prints {search_path, warnings, plugins: [{name, version, path,
      description, provides, requires, state, error, functions}]}.
      --load tries to load every discovered plugin first, so each ends
      'loaded' (with the functions it registered) or 'failed' (with why).
  loomc plugins info NAME|PATH [--json]
      The manifest of the plugin named NAME, without loading it.
  loomc plugins load NAME|PATH
      Loads the plugin named NAME (or the file PATH, when it contains a '/' or
      ends in .so), loading its requirements first, and prints the functions
      it registered.
  loomc plugins declare NAME|PATH [-o FILE]
      Loads the plugin and writes its declarations as JSON (to FILE, else
      stdout): the capabilities its init registered and the schemas of its
      passes, target kinds, operators and config keys.  loom_add_plugin runs
      this after linking and embeds the text as the plugin's
      .loom_declarations section, which listings and the config validator
      read without loading the plugin.
  loomc plugin doctor PATH.so [--timeout S]
      Why the plugin file does not load, without risking this process: its
      manifest against this core (plugin ABI, core version, C++ ABI), the
      shared libraries and symbols it needs that do not resolve (ldd -r),
      installed plugins with its name or capabilities, then a load in a child
      process (S seconds, default 30).  Exit 0 when it loads.
  loomc plugin test PATH.so [--json] [--seed N] [--only PREFIX] [--timeout S]
      The conformance kit (docs/plugin-tools.md): one row per check, pass,
      fail with the reason, or skip with why; exit 1 when any check fails.

Environment:
  LOOM_PLUGIN_PATH   extra plugin directories, absolute, ':'-separated
)";

namespace {

void write_record_json(loom::JsonWriter& json, const PluginRecord& r) {
  json.begin_object();
  json.key("name").value(r.name);
  json.key("version");
  if (r.manifest)
    json.value(r.manifest->version);
  else
    json.null();
  json.key("path").value(r.path);
  json.key("description").value(r.manifest ? r.manifest->description : std::string());
  json.key("provides").string_array(r.manifest ? r.manifest->provides : std::vector<std::string>{});
  json.key("requires").string_array(r.manifest ? r.manifest->requires_ : std::vector<std::string>{});
  json.key("state").value(loom::plugin_state_name(r.state));
  json.key("error");
  if (r.error.empty())
    json.null();
  else
    json.value(r.error);
  json.key("functions").string_array(r.functions);
  json.key("declarations");
  if (r.manifest && r.manifest->declarations) {
    const auto& d = *r.manifest->declarations;
    std::vector<std::string> passes, kinds, ops, config;
    for (const auto& p : d.passes) passes.push_back(p.name);
    for (const auto& k : d.target_kinds) kinds.push_back(k.name);
    for (const auto& op : d.ops) ops.push_back(op.name);
    for (const auto& c : d.config) config.push_back(c.name);
    json.begin_object().key("passes").string_array(passes).key("target_kinds").string_array(kinds);
    json.key("ops").string_array(ops).key("config").string_array(config).end_object();
  } else {
    json.null();
  }
  json.end_object();
}

}  // namespace

void print_warnings(const PluginManager& manager) {
  for (const auto& warning : manager.warnings()) std::cerr << "loomc: warning: " << warning << "\n";
}

int plugins_list(bool as_json, bool load_all) {
  PluginManager& manager = PluginManager::global();
  if (load_all) {
    for (const auto& r : manager.list()) {
      if (r.state != loom::PluginState::kDiscovered) continue;
      try {
        manager.load_path(r.path);
      } catch (const loom::PluginError&) {
        // recorded as failed with its reason; listed below
      }
    }
  }
  std::vector<PluginRecord> records = manager.list();
  if (as_json) {
    loom::JsonWriter json;
    json.begin_object();
    json.key("search_path").string_array(manager.search_path());
    json.key("warnings").string_array(manager.warnings());
    json.key("plugins").begin_array();
    for (const auto& r : records) write_record_json(json, r);
    json.end_array().end_object();
    std::cout << json.str() << "\n";
    return 0;
  }
  print_warnings(manager);
  if (records.empty()) {
    std::cout << "no plugins found; searched: " << loom::join(manager.search_path(), ":") << "\n";
    return 0;
  }
  size_t name_width = 4, version_width = 7;
  for (const auto& r : records) {
    name_width = std::max(name_width, r.name.size());
    if (r.manifest) version_width = std::max(version_width, r.manifest->version.size());
  }
  std::printf("%-*s  %-*s  %-10s  %s\n", int(name_width), "NAME", int(version_width), "VERSION", "STATE", "PROVIDES");
  for (const auto& r : records) {
    std::string version = r.manifest ? r.manifest->version : "-";
    std::string provides = r.manifest ? loom::join(r.manifest->provides, ",") : "";
    std::printf("%-*s  %-*s  %-10s  %s\n", int(name_width), r.name.c_str(), int(version_width), version.c_str(),
                loom::plugin_state_name(r.state), provides.c_str());
    std::printf("%*s  %s\n", int(name_width), "", r.path.c_str());
    if (!r.error.empty()) std::printf("%*s  reason: %s\n", int(name_width), "", r.error.c_str());
  }
  return 0;
}

namespace {
// A plugin named by a path rather than a name: one with a '/' or ending in .so.
bool is_path(const std::string& target) {
  return target.find('/') != std::string::npos || loom::ends_with(target, ".so");
}
}  // namespace

int plugins_info(const std::string& name, bool as_json) {
  PluginManager& manager = PluginManager::global();
  if (is_path(name) && !std::filesystem::exists(name)) {
    std::cerr << "loomc: error: no file " << name << "\n";
    return 1;
  }
  auto record = is_path(name) ? std::optional<PluginRecord>(manager.read_path(name)) : manager.info(name);
  if (!record) {
    std::vector<std::string> names;
    for (const auto& r : manager.list()) names.push_back(r.name);
    std::cerr << "loomc: error: no plugin named '" << name << "'" << loom::did_you_mean(name, names)
              << " (run 'loomc plugins list')\n";
    return 1;
  }
  const PluginRecord& r = *record;
  if (as_json) {
    loom::JsonWriter json;
    write_record_json(json, r);
    std::cout << json.str() << "\n";
    return 0;
  }
  std::cout << "name:         " << r.name << "\n"
            << "path:         " << r.path << "\n"
            << "state:        " << loom::plugin_state_name(r.state) << "\n";
  if (!r.error.empty()) std::cout << "reason:       " << r.error << "\n";
  if (r.manifest) {
    const auto& m = *r.manifest;
    std::cout << "version:      " << m.version << "\n"
              << "description:  " << m.description << "\n"
              << "provides:     " << loom::join(m.provides, ", ") << "\n"
              << "requires:     " << loom::join(m.requires_, ", ") << "\n"
              << "plugin ABI:   " << m.abi_major << "." << m.abi_minor << "\n"
              << "built for:    Loom " << m.core_version
              << (m.c_api ? ", C API " + std::to_string(m.c_api) + " (a plugin written in C)"
                          : ", C++ ABI " + m.cxx_abi)
              << "\n";
    if (!m.declarations) {
      std::cout << "declarations: none (built without them; load the plugin to see its schemas)\n";
      return 0;
    }
    const auto& d = *m.declarations;
    for (const auto& p : d.passes) {
      std::cout << "pass:         " << p.name << " (opt " << p.opt_level << ")";
      if (!p.options.empty()) std::cout << ", options: " << schema_text(p.options);
      std::cout << "\n";
    }
    for (const auto& k : d.target_kinds)
      std::cout << "target kind:  " << k.name << ": " << schema_text(k.attrs) << "\n";
    if (!d.ops.empty()) {
      std::vector<std::string> ops;
      for (const auto& op : d.ops) ops.push_back(op.name);
      std::cout << "operators:    " << ops.size() << ": " << loom::join(ops, ", ") << "\n";
    }
    for (const auto& c : d.config) std::cout << "config key:   " << schema_text({c}) << "\n";
  }
  return 0;
}

int plugins_load(const std::string& target) {
  PluginManager& manager = PluginManager::global();
  PluginRecord r = is_path(target) ? manager.load_path(target) : manager.load(target);
  std::printf("loaded %s %s from %s in %.2f ms\n", r.name.c_str(), r.manifest->version.c_str(), r.path.c_str(),
              r.load_ms);
  for (const auto& name : r.functions) {
    auto entry = loom::FunctionRegistry::entry(name);
    std::printf("  %-24s %s\n", name.c_str(), entry ? entry->doc.c_str() : "");
  }
  // Everything else it registered, by kind (what its init recorded).
  std::vector<std::string> provides;
  loom::parse_declarations(loom::driver::plugin_declarations(r.name), r.path, &provides);
  std::map<std::string, std::vector<std::string>> by_kind;
  for (const std::string& capability : provides) {
    size_t colon = capability.find(':');
    std::string kind = capability.substr(0, colon);
    if (kind != "function") by_kind[kind].push_back(capability.substr(colon + 1));
  }
  for (const auto& [kind, names] : by_kind)
    std::printf("  %-10s %s\n", (kind + ":").c_str(), loom::join(names, ", ").c_str());
  return 0;
}

// The declarations of the plugin at PATH (or named NAME), read off what
// its init registers: the text loom_add_plugin embeds as the plugin's
// .loom_declarations section after linking.
int plugins_declare(const std::string& target, const std::string& output) {
  PluginManager& manager = PluginManager::global();
  manager.declare_only();  // its init may skip probing hardware the build machine lacks
  PluginRecord r = is_path(target) ? manager.load_path(target) : manager.load(target);
  std::string text = loom::driver::plugin_declarations(r.name);
  if (output.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream out(output, std::ios::binary);
  out << text;
  if (!out) LOOM_THROW(Error) << "cannot write " << output;
  return 0;
}

}  // namespace loomc
