// loomc: Loom's command line.  It manages, checks and tests plugins, lists
// what is registered (functions, passes, targets, operators), and checks,
// formats, optimizes, builds, imports, tunes, runs and inspects modules and
// libraries; kMainHelp below lists every command.
//
// Exit status: 0 success, 1 an error (message on stderr), 2 a usage error.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <iostream>
#include <string>
#include <vector>

#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/driver/declarations.h"
#include "loom/ir/analysis.h"
#include "loom/ir/op.h"
#include "loom/plugin/manifest.h"
#include "loom/ir/text.h"
#include "loom/object/function.h"
#include "loom/object/structural.h"
#include "loom/plugin/manager.h"
#include "loom/runtime/library.h"
#include "loom/runtime/vm.h"
#include "loom/support/json.h"
#include "loom/support/file.h"
#include "loom/support/registration.h"
#include "loom/support/strings.h"
#include "loom/version.h"
#include "import_command.h"
#include "plugin_tools.h"
#include "run_command.h"

namespace {

using loom::PluginManager;
using loom::PluginRecord;

constexpr const char* kMainHelp = R"(loomc -- the Loom compiler driver

Usage: loomc [--help] [--version] COMMAND [ARGS...]

Commands:
  plugins list [--json] [--load]
                              list discovered plugins and their state; --load
                              first tries to load each one (runs their init)
  plugins info NAME|PATH [--json]
                              show one plugin's manifest (does not load it)
  plugins load NAME|PATH      load a plugin (and what it requires), list its functions
                              and everything else it registered
  plugins declare NAME|PATH [-o FILE]
                              load a plugin and write its declarations (what it provides,
                              its passes', target kinds', operators' and config keys'
                              schemas) as JSON: what loom_add_plugin embeds after linking
  plugin doctor PATH.so [--timeout S]
                              explain why a plugin file does not load: manifest and
                              versions, missing libraries and symbols, conflicts with
                              installed plugins, then a load in a child process
  plugin test PATH.so [--json] [--seed N] [--only PREFIX] [--timeout S]
                              the conformance kit: manifest, init in a child process,
                              declarations, target kinds, every operator a target claims
                              against the reference interpreter, export round trip,
                              devices; a pass/fail table, exit 1 on any failure
                              ('plugin' and 'plugins' are the same command group)
  functions list [--json]     list registered functions (core and loaded plugins)
  passes list [--json]        registered passes: opt level, requirements, options, owner
  targets list [--json]       target kinds with their attributes, and tags
  ops list [--json]           operators (registered or declared by a plugin): owner,
                              inputs, pattern, documentation and attributes
  build INPUT.loom --config FILE.yaml [-o OUT] [--emit ir|lib] [--dump-ir DIR] [--timing]
                              store the config's target in the module, run its
                              pipeline and write the result: --emit ir, the
                              transformed module as text; --emit lib (the default
                              when OUT ends in .so), a library built by the target's
                              codegen and the VM, for 'loomc inspect' and load_module
  opt FILE.loom --passes A,B,... [--config FILE.yaml] [-o OUT]
                              run passes on a module and print the result (or the
                              diagnostics): the passes named, under the config's
                              target and context when given (its pipeline without
                              --passes); each pass's contract is checked
  check FILE.loom             parse a module, check it is well formed and infer its
                              types; exit 1 with every diagnostic
  check FILE.yaml             check a config (keys, types, plugins, passes and their
                              options, config keys, target attributes) without
                              loading any plugin: from the plugins' declarations
  import MODEL.onnx|MODEL.pt -o OUT.loom [--shape NAME=D0,D1,...]... [--report]
                              import an ONNX model or a TorchScript file (through the
                              Python package): the module as text to OUT.loom, weights
                              over 1 KiB as raw bytes to OUT.loom.weights; a dimension
                              given by a name stays symbolic (ONNX); TorchScript needs
                              every input's shape and keeps what Loom cannot compile as
                              torchscript functions (--report: which nodes went where)
  tune MODEL.loom --config FILE.yaml --trials N --database FILE.jsonl
       [--workers local:N|dask://HOST:PORT] [--strategy model|random]
                              search schedules for the model's prim functions (through
                              the Python package), measured in N local processes or on a
                              Dask cluster; results go to the database, which a config
                              uses with pipeline: {tuning: {database: FILE}}
  fmt FILE.loom [--check]     print the module in canonical form; --check exits 1
                              (printing nothing) if the file is not canonical
  run LIBRARY.so|MODEL.loom [--config FILE.yaml] [--function NAME] [--input X.npy]...
      [--seed N] [--output Y.npy]... [--bench N] [--profile]
                              run a function (default main) of a library, or of a model
                              built in memory with the config, on .npy inputs (in order)
                              or seeded random ones; print each output's type, write them
                              to the --output files (in order); --bench N times N runs
                              and prints the median latency; --profile prints what each
                              module records of its calls (the npu's cycle report)
  inspect LIBRARY.so [--source FORMAT]
                              read a library written by export_library, without loading
                              it or running any of its code, and print its module tree
                              (kind, functions, memory plans); --source
                              prints each module's source in FORMAT (bytecode, c, ...)
  call FUNCTION [ARG...]      call a registered function, loading its plugin on demand;
                              ARGs that read as integers, floats, true or false are
                              passed as such, anything else as a string

Plugins are searched in <libdir>/loom/plugins, <prefix>/lib/loom/plugins and the
absolute directories in LOOM_PLUGIN_PATH (':'-separated), never in the current
directory.  Run 'loomc plugins --help' for more.
)";

constexpr const char* kPluginsHelp = R"(loomc plugins -- discover, inspect and load plugins

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
      Loads the plugin named NAME (or the file PATH, when it contains a '/'),
      loading its requirements first, and prints the functions it registered.
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

int usage_error(const std::string& message) {
  std::cerr << "loomc: " << message << "\nTry 'loomc --help'.\n";
  return 2;
}

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
    json.begin_object().key("name").value(f.name).key("type").value(f.type).key("default").value(loom::repr(f.default_value));
    json.key("doc").value(f.doc);
    if (f.min) json.key("min").value(*f.min);
    if (f.max) json.key("max").value(*f.max);
    json.end_object();
  }
  json.end_array();
}

void write_record_json(loom::JsonWriter& json, const PluginRecord& r) {
  json.begin_object();
  json.key("name").value(r.name);
  json.key("version");
  if (r.manifest) json.value(r.manifest->version); else json.null();
  json.key("path").value(r.path);
  json.key("description").value(r.manifest ? r.manifest->description : std::string());
  json.key("provides").string_array(r.manifest ? r.manifest->provides : std::vector<std::string>{});
  json.key("requires").string_array(r.manifest ? r.manifest->requires_ : std::vector<std::string>{});
  json.key("state").value(loom::plugin_state_name(r.state));
  json.key("error");
  if (r.error.empty()) json.null(); else json.value(r.error);
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

// A plugin named by a path rather than a name: one with a '/' or ending in .so.
bool is_path(const std::string& target) { return target.find('/') != std::string::npos || loom::ends_with(target, ".so"); }

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
              << "built for:    Loom " << m.core_version << ", C++ ABI " << m.cxx_abi << "\n";
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
    for (const auto& k : d.target_kinds) std::cout << "target kind:  " << k.name << ": " << schema_text(k.attrs) << "\n";
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
  for (const auto& [kind, names] : by_kind) std::printf("  %-10s %s\n", (kind + ":").c_str(), loom::join(names, ", ").c_str());
  return 0;
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
    rows[name] = Row{name, e.owner, e.def.doc, loom::ir::pattern_kind_name(e.def.pattern), e.def.num_inputs, e.def.attrs};
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
      json.begin_object().key("name").value(name).key("owner").value(row.owner).key("inputs").value(int64_t{row.inputs});
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
    std::printf("%-22s from %-8s %s inputs, %s: %s\n", name.c_str(), row.owner.c_str(), arity.c_str(), row.pattern.c_str(),
                row.doc.c_str());
    if (!row.attrs.empty()) std::printf("%-22s attributes: %s\n", "", schema_text(row.attrs).c_str());
  }
  return 0;
}

// The declarations of the plugin at PATH (or named NAME), read off what
// its init registers: the text loom_add_plugin embeds as the plugin's
// .loom_declarations section after linking.
int plugins_declare(const std::string& target, const std::string& output) {
  PluginManager& manager = PluginManager::global();
  PluginRecord r = target.find('/') != std::string::npos ? manager.load_path(target) : manager.load(target);
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

std::string read_text_file(const std::string& path) {
  return loom::read_file(path);
}

// A .loom file, with its weights file when it has one.
loom::ir::IRModule parse_file(const std::string& path) { return loom::ir::load_module_file(path); }

// A transformed module: on stdout (constants inline), or to OUTPUT with
// large constants in OUTPUT.weights.
void write_module(const loom::ir::IRModule& module, const std::string& output) {
  if (output.empty()) {
    std::cout << loom::ir::print_module(module);
  } else {
    loom::ir::save_module_file(module, output);
  }
}

// A YAML config, checked without loading any plugin (names, keys, types,
// options, against the registries and the plugins' declarations).
int check_config(const std::string& path) {
  loom::config::ConfigCheck checked = loom::config::check_config_file(path);
  for (const auto& warning : checked.warnings) std::cerr << warning << "\n";
  std::cout << path << ": ok (passes: " << (checked.passes.empty() ? "none" : loom::join(checked.passes, ", ")) << ")\n";
  return 0;
}

int check(const std::string& path) {
  if (loom::ends_with(path, ".yaml") || loom::ends_with(path, ".yml")) return check_config(path);
  loom::ir::IRModule mod = parse_file(path);
  try {
    loom::ir::check_module(mod);
  } catch (const loom::Error& e) {
    std::cerr << path << ": " << e.what() << "\n";
    return 1;
  }
  std::cout << path << ": ok (" << mod.names().size() << " function" << (mod.names().size() == 1 ? "" : "s") << ")\n";
  return 0;
}

int fmt(const std::string& path, bool check_only) {
  std::string text = read_text_file(path);
  std::string weights;
  loom::ir::IRModule module = loom::ir::load_module_file(path, &weights);
  // A file with weights beside it is canonical with the references the
  // same module would be saved with.
  std::string canonical = weights.empty() ? loom::ir::print_module(module)
                                          : loom::ir::module_file_contents(module, weights).text;
  if (!check_only) {
    std::cout << canonical;
    return 0;
  }
  if (text == canonical) return 0;
  // Name the first line that differs.
  size_t line = 1;
  for (size_t i = 0; i < std::min(text.size(), canonical.size()) && text[i] == canonical[i]; ++i)
    if (text[i] == '\n') ++line;
  std::cerr << path << ":" << line << ": not in canonical form (run 'loomc fmt " << path << "')\n";
  return 1;
}

// Passes and target kinds are listed from the registries and from the
// declarations of discovered plugins, so listing loads no plugin.  A
// discovered plugin without declarations shows its names only.
std::vector<std::string> undeclared(const std::string& kind, const std::vector<std::string>& declared) {
  std::vector<std::string> out;
  for (const std::string& name : PluginManager::global().available(kind))
    if (std::find(declared.begin(), declared.end(), name) == declared.end()) out.push_back(name);
  return out;
}

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
    for (const auto& name : others) json.begin_object().key("name").value(name).key("declared").value(false).end_object();
    json.end_array();
    std::cout << json.str() << "\n";
    return 0;
  }
  for (const auto& p : passes) {
    const auto& info = p.info;
    std::printf("%-24s opt %d  from %-10s %s\n", info.name.c_str(), info.opt_level, p.owner.c_str(), info.summary.c_str());
    if (!info.required.empty()) std::printf("%-24s requires: %s\n", "", loom::join(info.required, ", ").c_str());
    if (!info.needs.empty()) std::printf("%-24s needs: %s\n", "", loom::join(info.needs, ", ").c_str());
    if (!info.establishes.empty()) std::printf("%-24s establishes: %s\n", "", loom::join(info.establishes, ", ").c_str());
    if (!info.preserves.empty()) std::printf("%-24s preserves: %s\n", "", loom::join(info.preserves, ", ").c_str());
    if (!info.options.empty()) std::printf("%-24s options: %s\n", "", schema_text(info.options).c_str());
  }
  for (const auto& name : others) std::printf("%-24s (its plugin declares no schema; load it to see one)\n", name.c_str());
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
      json.key("native_intrinsics").string_array(std::vector<std::string>(t.native_intrinsics.begin(), t.native_intrinsics.end()));
      json.key("threads_attr").value(t.threads_attr).key("device_type").value(int64_t{t.device_type});
      json.key("default_pipeline").string_array(t.default_pipeline).key("codegen_needs").string_array(t.codegen_needs);
      json.end_object();
      json.end_object();
    }
    for (const auto& name : others) json.begin_object().key("name").value(name).key("declared").value(false).end_object();
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
    for (const auto& name : other_tags) json.begin_object().key("name").value(name).key("declared").value(false).end_object();
    json.end_array().end_object();
    std::cout << json.str() << "\n";
    return 0;
  }
  for (const auto& kind : kinds) {
    std::printf("%-12s from %-10s %s\n", kind.name.c_str(), kind.owner.c_str(), kind.doc.c_str());
    std::printf("%-12s attributes: %s\n", "", schema_text(kind.attrs).c_str());
    const auto& t = kind.traits;
    std::printf("%-12s device: %s; threads: %s; default pipeline: %s\n", "",
                loom::Device{t.device_type, 0}.to_string().c_str(), t.threads_attr.empty() ? "-" : t.threads_attr.c_str(),
                t.default_pipeline.empty() ? "(none)" : loom::join(t.default_pipeline, ", ").c_str());
    if (!t.native_intrinsics.empty()) {
      std::vector<std::string> natives(t.native_intrinsics.begin(), t.native_intrinsics.end());
      std::printf("%-12s native intrinsics: %s\n", "", loom::join(natives, ", ").c_str());
    }
    if (!t.codegen_needs.empty()) std::printf("%-12s codegen needs: %s\n", "", loom::join(t.codegen_needs, ", ").c_str());
  }
  for (const auto& name : others) std::printf("%-12s (its plugin declares no schema; load it to see one)\n", name.c_str());
  for (const auto& tag : tags) {
    std::vector<std::string> attrs;
    for (const auto& item : tag.attrs->items) attrs.push_back(item.first + ": " + loom::repr(item.second));
    std::printf("tag %-10s kind %s {%s} from %s%s%s\n", tag.name.c_str(), tag.kind.c_str(), loom::join(attrs, ", ").c_str(),
                tag.owner.c_str(), tag.doc.empty() ? "" : ": ", tag.doc.c_str());
  }
  for (const auto& name : other_tags) std::printf("tag %-10s (its plugin declares no schema; load it to see one)\n", name.c_str());
  return 0;
}

struct BuildOptions {
  std::string input, config, output, emit, dump_ir;
  bool timing = false;
};

int build(const BuildOptions& o) {
  if (o.config.empty()) return usage_error("build needs --config FILE.yaml (for example configs/host.yaml)");
  // --emit: ir (the transformed module as text) or lib (a library, through
  // the target's codegen); by default lib when -o names a .so, else ir.
  std::string emit = o.emit;
  if (emit.empty()) emit = loom::ends_with(o.output, ".so") ? "lib" : "ir";
  if (emit != "ir" && emit != "lib") return usage_error("--emit takes ir or lib, got '" + emit + "'");
  if (emit == "lib" && o.output.empty()) return usage_error("--emit lib needs -o FILE.so");
  loom::config::Config config = loom::config::load_config(o.config);
  for (const auto& warning : config.warnings) std::cerr << warning << "\n";
  loom::ir::IRModule module = config.constrain(parse_file(o.input));
  auto timing = std::make_shared<loom::transform::TimingInstrument>();
  if (o.timing) config.context.instruments.push_back(timing);
  if (!o.dump_ir.empty()) config.context.instruments.push_back(std::make_shared<loom::transform::DumpIRInstrument>(o.dump_ir));
  if (emit == "lib") {
    loom::runtime::Module built = loom::driver::build(module, config);
    loom::runtime::export_library(built, o.output);
    if (o.timing) std::cerr << timing->report();
    return 0;
  }
  write_module(config.pipeline()(module, config.context), o.output);
  if (o.timing) std::cerr << timing->report();
  return 0;
}

// loomc opt: the module after the passes named by --passes (else the
// config's pipeline), under the config's target and context when one is
// given; the transformed module on stdout, or the diagnostics.
int opt(const std::string& input, const std::string& passes, const std::string& config_path, const std::string& output) {
  if (passes.empty() && config_path.empty()) return usage_error("opt needs --passes A,B,... or --config FILE.yaml");
  loom::ir::IRModule module = parse_file(input);
  loom::transform::PassContext context;
  std::vector<loom::transform::Pass> list;
  if (!config_path.empty()) {
    loom::config::Config config = loom::config::load_config(config_path);
    for (const auto& warning : config.warnings) std::cerr << warning << "\n";
    module = config.constrain(module);
    context = config.context;
    if (passes.empty()) list.push_back(config.pipeline());
  }
  for (const std::string& name : loom::split(passes, ',', false)) {
    if (!loom::trim(name).empty()) list.push_back(loom::transform::PassRegistry::get(loom::trim(name)));
  }
  write_module(loom::transform::sequential(list, "opt")(module, context), output);
  return 0;
}

int inspect(const std::string& path, const std::string& source_format) {
  try {
    loom::runtime::Module m = loom::runtime::inspect_library(path);  // runs none of the file's code
    std::cout << path << "\n";
    std::cout << loom::runtime::module_tree(m, source_format, 1);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "loomc: " << loom::error_message(e) << "\n";
    return 1;
  }
}

int run(std::vector<std::string> args) {
  // Everything after `call FUNCTION` is an argument of the call, verbatim
  // (negative numbers look like options).
  // `import`'s options are the Python importer's (it parses them).
  if (!args.empty() && args[0] == "import") return loomc::import_model({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "tune") return loomc::tune_model({args.begin() + 1, args.end()});
  std::vector<std::string> call_args;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "call") {
      call_args.assign(args.begin() + i + 2, args.end());
      args.resize(i + 2);
      break;
    }
  }
  std::vector<std::string> positional;
  bool help = false, version = false, as_json = false, load_all = false, check_only = false;
  BuildOptions build_options;
  std::map<std::string, std::string*> valued = {{"--config", &build_options.config},
                                                {"-o", &build_options.output},
                                                {"--emit", &build_options.emit},
                                                {"--dump-ir", &build_options.dump_ir}};
  std::string source_format, opt_passes;
  valued["--source"] = &source_format;
  valued["--passes"] = &opt_passes;
  loomc::RunOptions run_options;
  std::string run_input, run_output;
  valued["--function"] = &run_options.function;
  valued["--seed"] = &run_options.seed;
  valued["--bench"] = &run_options.bench;
  valued["--input"] = &run_input;
  valued["--output"] = &run_output;
  std::string kit_only, timeout_text = "30";
  valued["--only"] = &kit_only;
  valued["--timeout"] = &timeout_text;
  for (size_t k = 0; k < args.size(); ++k) {
    const std::string& a = args[k];
    auto option = valued.find(a);
    if (option != valued.end()) {
      if (k + 1 >= args.size()) return usage_error(a + " needs a value");
      *option->second = args[++k];
      if (a == "--input") run_options.inputs.push_back(run_input);
      if (a == "--output") run_options.outputs.push_back(run_output);
      continue;
    }
    if (a == "--timing") {
      build_options.timing = true;
      continue;
    }
    if (a == "--help" || a == "-h") help = true;
    else if (a == "--version") version = true;
    else if (a == "--json") as_json = true;
    else if (a == "--load") load_all = true;
    else if (a == "--check") check_only = true;
    else if (a == "--profile") run_options.profile = true;
    else if (!a.empty() && a[0] == '-') return usage_error("unknown option '" + a + "'");
    else positional.push_back(a);
  }

  if (positional.empty()) {
    if (version) {
      std::cout << "loomc " << LOOM_VERSION << "\n";
      return 0;
    }
    std::cout << kMainHelp;
    return help ? 0 : 2;
  }
  const std::string& command = positional[0];
  // Every command reports the ignored search-path entries and the refused
  // and shadowed plugins ('plugins list' prints them with its table).
  if (!help && !(command == "plugins" && positional.size() >= 2 && positional[1] == "list")) {
    print_warnings(PluginManager::global());
  }
  if (command == "plugins" || command == "plugin") {
    if (help || positional.size() < 2) {
      std::cout << kPluginsHelp;
      return help ? 0 : 2;
    }
    const std::string& sub = positional[1];
    if (sub == "list") return plugins_list(as_json, load_all);
    if (sub == "info") {
      if (positional.size() != 3) return usage_error("plugins info takes one plugin name or path");
      return plugins_info(positional[2], as_json);
    }
    if (sub == "load") {
      if (positional.size() != 3) return usage_error("plugins load takes one plugin name or path");
      return plugins_load(positional[2]);
    }
    if (sub == "declare") {
      if (positional.size() != 3) return usage_error("plugins declare takes one plugin name or path");
      return plugins_declare(positional[2], build_options.output);
    }
    if (sub == "doctor" || sub == "test") {
      if (positional.size() != 3) return usage_error("plugin " + sub + " takes one plugin file");
      int timeout_s = 0;
      try {
        timeout_s = std::stoi(timeout_text);
      } catch (const std::exception&) {
      }
      if (timeout_s < 1) return usage_error("--timeout takes a number of seconds, got '" + timeout_text + "'");
      if (sub == "doctor") return loomc::plugin_doctor(positional[2], timeout_s);
      loomc::KitOptions kit{as_json, 0, kit_only, timeout_s};
      try {
        kit.seed = std::stoull(run_options.seed);
      } catch (const std::exception&) {
        return usage_error("--seed takes a non-negative integer, got '" + run_options.seed + "'");
      }
      return loomc::plugin_test(positional[2], kit);
    }
    return usage_error("unknown plugins command '" + sub + "'" +
                       loom::did_you_mean(sub, {"list", "info", "load", "declare", "doctor", "test"}));
  }
  if (help) {
    std::cout << kMainHelp;
    return 0;
  }
  if (command == "ops") {
    if (positional.size() != 2 || positional[1] != "list") return usage_error("usage: loomc ops list [--json]");
    return ops_list(as_json);
  }
  if (command == "functions") {
    if (positional.size() == 2 && positional[1] == "list") return functions_list(as_json);
    return usage_error("usage: loomc functions list [--json]");
  }
  if (command == "passes" || command == "targets") {
    if (positional.size() != 2 || positional[1] != "list") return usage_error("usage: loomc " + command + " list [--json]");
    return command == "passes" ? passes_list(as_json) : targets_list(as_json);
  }
  if (command == "build") {
    if (positional.size() != 2) return usage_error("build takes one input file");
    build_options.input = positional[1];
    return build(build_options);
  }
  if (command == "opt") {
    if (positional.size() != 2) return usage_error("opt takes one input file");
    return opt(positional[1], opt_passes, build_options.config, build_options.output);
  }
  if (command == "check" || command == "fmt") {
    if (positional.size() != 2) return usage_error(command + " takes one file");
    return command == "check" ? check(positional[1]) : fmt(positional[1], check_only);
  }
  if (command == "inspect") {
    if (positional.size() != 2) return usage_error("inspect takes one library file");
    return inspect(positional[1], source_format);
  }
  if (command == "run") {
    if (positional.size() != 2) return usage_error("run takes one library or model file");
    run_options.input = positional[1];
    run_options.config = build_options.config;
    return loomc::run_model(run_options);
  }
  if (command == "call") {
    if (positional.size() < 2) return usage_error("call needs a function name");
    return call(positional[1], call_args);
  }
  return usage_error("unknown command '" + command + "'" +
                     loom::did_you_mean(command, {"plugins", "functions", "call", "check", "fmt", "passes",
                                                  "targets", "ops", "build", "opt", "inspect", "run", "import", "tune"}));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::cerr << "loomc: error: " << loom::error_message(e) << "\n";
    return 1;
  }
}
