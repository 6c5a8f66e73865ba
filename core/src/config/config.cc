// The YAML config loader (docs/configuration.md), on yaml-cpp.  Every error
// is located at the offending key or value.
#include "loom/config/config.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "loom/graph/pattern_table.h"
#include "loom/plugin/manager.h"
#include "loom/support/file.h"
#include "loom/support/registration.h"
#include "loom/support/strings.h"

namespace loom::config {

namespace {

// A C0 key the core owns: loop vectorization, which a target without a
// vector unit forbids (see reconcile()).
const bool core_config_registered = [] {
  transform::ConfigRegistry::register_option(
      SchemaField{"tir.vectorize", "bool", true, "vectorize loops marked vectorizable"});
  transform::ConfigRegistry::register_option(SchemaField{
      "tuning.database", "str", std::string(),
      "a tuning database (JSON lines, docs/tuning.md): AutoSchedule applies its best record per task and schedules "
      "the other functions itself; pipeline.tuning.database in a YAML config"});
  transform::ConfigRegistry::register_option(SchemaField{
      "tuning.cpu", "str", std::string(),
      "whose records of the tuning database apply: a record's cpu, such as the device's that tuning through an RPC "
      "device pool recorded (docs/rpc.md); empty: this machine's CPU; pipeline.tuning.cpu in a YAML config"});
  return true;
}();

std::string describe_node(const YAML::Node& n) {
  if (n.IsNull()) return "null (YAML reads null, ~ and an empty value as no value; quote text: \"null\")";
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

// One reader for both uses of a config: loading it (targets made and
// validated by their kind, plugins loaded as their passes and kinds are
// named) and checking it (validate_only: every name, key and type against
// the registries and the declarations of discovered plugins, loading none).
class Loader {
 public:
  Loader(const std::string& text, const std::string& source, bool validate_only = false)
      : text_(text), source_(source), validate_only_(validate_only) {}

  Config load() {
    (void)core_config_registered;
    YAML::Node loaded;
    try {
      loaded = YAML::Load(text_);
    } catch (const YAML::DeepRecursion& e) {  // (its message reads "bad file")
      fail_at(e.mark.line + 1, e.mark.column + 1,
              "nesting deeper than the YAML reader takes (" + std::to_string(e.depth()) + " levels)");
    } catch (const YAML::ParserException& e) {
      fail_at(e.mark.line + 1, e.mark.column + 1, "invalid YAML: " + e.msg);
    }
    const YAML::Node& root = loaded;  // const: lookups must not create keys
    check_unique_keys(root);
    Config config;
    config.source = source_;
    if (!root || root.IsNull()) fail_at(1, 1, "the config is empty; it needs at least a 'target'");
    if (!root.IsMap()) fail(root, "a config is a mapping with the keys target, pipeline and plugins");
    check_keys(root, {"target", "pipeline", "plugins"}, "the config");
    if (YAML::Node plugins = root["plugins"]) load_plugins(plugins, config);
    YAML::Node target = root["target"];
    if (!target) fail(root, "the config has no 'target' (the platform's constraints, e.g. target: {kind: cpu})");
    parse_target_section(target, config);
    if (YAML::Node pipeline = root["pipeline"]) parse_pipeline(pipeline, config);
    if (!passes_listed_) {
      for (const std::string& name : default_pipeline(config, target))
        config.passes.push_back(PassSpec{name, Map::empty()});
    }
    if (!validate_only_) reconcile(root, config);
    return config;
  }

 private:
  [[noreturn]] void fail_at(int line, int column, const std::string& message) {
    throw ConfigError(source_, line, column, message + source_excerpt(text_, line, column));
  }
  [[noreturn]] void fail(const YAML::Node& node, const std::string& message) {
    YAML::Mark m = node.Mark();
    if (m.is_null()) fail_at(1, 1, message);
    fail_at(m.line + 1, m.column + 1, message);
  }

  // A key given twice in one mapping is an error naming both places
  // (yaml-cpp keeps both; lookups took the first, iteration the last).
  // Each mapping is checked once, however many aliases share it (a node
  // is known by its mark), so a "billion laughs" document costs no more
  // than its text.
  void check_unique_keys(const YAML::Node& root) {
    std::set<std::pair<int, int>> seen_nodes;
    std::vector<YAML::Node> work{root};
    while (!work.empty()) {
      YAML::Node node = work.back();
      work.pop_back();
      if (!node.IsMap() && !node.IsSequence()) continue;
      YAML::Mark mark = node.Mark();
      if (!mark.is_null() && !seen_nodes.insert({mark.line, mark.column}).second) continue;
      std::map<std::string, YAML::Mark> keys;
      for (auto it = node.begin(); it != node.end(); ++it) {
        if (node.IsSequence()) {
          work.push_back(*it);
          continue;
        }
        work.push_back(it->first);
        work.push_back(it->second);
        if (!it->first.IsScalar()) continue;
        auto [first, inserted] = keys.emplace(it->first.Scalar(), it->first.Mark());
        if (!inserted) {
          fail(it->first, "duplicate key '" + it->first.Scalar() + "' (first at " + source_ + ":" +
                              std::to_string(first->second.line + 1) + ":" + std::to_string(first->second.column + 1) +
                              "); give each key once");
        }
      }
    }
  }

  void check_keys(const YAML::Node& map, const std::vector<std::string>& known, const std::string& where) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string key = it->first.Scalar();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        fail(it->first,
             "unknown key '" + key + "' in " + where + did_you_mean(key, known) + " (keys: " + join(known, ", ") + ")");
      }
    }
  }

  std::string scalar(const YAML::Node& node, const std::string& what) {
    if (!node.IsScalar()) fail(node, what + " must be a single value, got " + describe_node(node));
    return node.Scalar();
  }

  // A value of a schema type (loom/object/schema.h).
  // A value for a schema field: its type, then its bounds.
  Any convert_field(const YAML::Node& node, const SchemaField& field, const std::string& what) {
    Any value = convert(node, field.type, what);
    if (std::string why = bounds_problem(field, value); !why.empty()) fail(node, what + " " + why);
    return value;
  }

  Any convert(const YAML::Node& node, const std::string& type, const std::string& what) {
    auto expect = [&](const char* wanted) -> Any {
      fail(node, what + " must be " + wanted + ", got " + describe_node(node));
    };
    if (type == "Array") {
      if (!node.IsSequence()) return expect("a list");
      std::vector<Any> items;
      for (const auto& item : node) items.push_back(convert(item, "Any", what));
      return Array(items);
    }
    if (type == "Map") {
      if (!node.IsMap()) return expect("a mapping");
      std::map<std::string, Any> items;
      for (auto it = node.begin(); it != node.end(); ++it) items[it->first.Scalar()] = convert(it->second, "Any", what);
      return Map(items);
    }
    if (type == "Any") {
      if (node.IsSequence()) return convert(node, "Array", what);
      if (node.IsMap()) return convert(node, "Map", what);
    }
    if (!node.IsScalar()) return expect(type == "Any" ? "a value" : type.c_str());
    const std::string& s = node.Scalar();
    auto as_int = [&](int64_t& out) {
      if (s.empty()) return false;
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (*end != '\0' || errno == ERANGE) return false;
      out = v;
      return true;
    };
    auto as_float = [&](double& out) {
      if (s.empty()) return false;
      char* end = nullptr;
      out = std::strtod(s.c_str(), &end);
      return *end == '\0';
    };
    int64_t i;
    double d;
    if (type == "int") return as_int(i) ? Any(i) : expect("an integer");
    if (type == "float") return as_float(d) ? Any(d) : expect("a number");
    if (type == "bool") return s == "true" ? Any(true) : s == "false" ? Any(false) : expect("true or false");
    if (type == "str") return Any(s);
    try {
      if (type == "dtype") return Any(DataType::parse(s));
      if (type == "device") return Any(Device::parse(s));
    } catch (const Error& e) {
      fail(node, what + ": " + e.what());
    }
    // Any: the most specific reading of the scalar.
    if (as_int(i)) return Any(i);
    if (as_float(d)) return Any(d);
    if (s == "true" || s == "false") return Any(s == "true");
    return Any(s);
  }

  void load_plugins(const YAML::Node& node, Config& config) {
    if (!node.IsSequence()) fail(node, "plugins must be a list of plugin names, got " + describe_node(node));
    for (const auto& item : node) {
      std::string name = scalar(item, "a plugin name");
      try {
        if (!validate_only_) {
          PluginManager::global().load(name);
        } else if (auto record = PluginManager::global().info(name)) {
          if (record->state == PluginState::kFailed) throw PluginError(record->path, record->error);
        } else {
          std::vector<std::string> names;
          for (const PluginRecord& r : PluginManager::global().list()) names.push_back(r.name);
          LOOM_THROW(LookupError) << "no plugin named '" << name << "' in the search path" << did_you_mean(name, names);
        }
      } catch (const Error& e) {
        fail(item, e.what());
      }
      config.plugins.push_back(name);
    }
  }

  // target: {kind: K, ATTRIBUTE: value, ..., host: {...}, device-placement: {...}}
  target::Target parse_target(const YAML::Node& node, const std::string& where, bool allow_extras, Config* config) {
    if (!node.IsMap()) fail(node, where + " must be a mapping with a 'kind', got " + describe_node(node));
    YAML::Node kind_node = node["kind"];
    YAML::Node tag_node = node["tag"];
    if (!kind_node && !tag_node) {
      fail(node, where + " needs a 'kind' (known kinds: " + join(target::TargetKindRegistry::list(), ", ") + ")");
    }
    std::string kind;
    Map preset = Map::empty();
    if (tag_node) {
      std::string name = scalar(tag_node, "tag");
      std::vector<std::string> tags = target::TargetTagRegistry::list();
      if (validate_only_ && std::find(tags.begin(), tags.end(), name) == tags.end()) {
        // A tag of a plugin that is not loaded: its declaration has its kind
        // and attributes; a plugin that declares none leaves them unknown.
        std::optional<target::TargetTag> declared;
        for (target::TargetTag& tag : target::TargetTagRegistry::declarations())
          if (tag.name == name) declared = std::move(tag);
        if (declared) {
          kind = declared->kind;
          preset = declared->attrs;
        } else {
          std::vector<std::string> available = with_available(tags, "tag");
          if (std::find(available.begin(), available.end(), name) == available.end()) {
            fail(tag_node, "no target tag named '" + name + "' is registered or provided by a plugin" +
                               did_you_mean(name, available) + unknown_providers_note());
          }
          config_warning(tag_node, "target tag '" + name +
                                       "' comes from a plugin that declares no tags; its kind "
                                       "and attributes are checked when the config is loaded");
          if (!kind_node) return target::Target();
        }
      } else {
        try {
          target::TargetTag tag = target::TargetTagRegistry::get(name);
          kind = tag.kind;
          preset = tag.attrs;
        } catch (const ParseError&) {
          throw;
        } catch (const Error& e) {
          fail(tag_node, e.what());
        }
      }
    }
    if (kind_node) kind = scalar(kind_node, "kind");
    target::TargetKindEntry entry;
    try {
      entry = kind_entry(kind);
    } catch (const Error& e) {
      fail(kind_node ? kind_node : tag_node, e.what());
    }
    if (config) kind_ = entry;
    std::vector<std::string> known = {"kind", "tag"};
    if (allow_extras) {
      known.push_back("host");
      known.push_back("device-placement");
      known.push_back("partition");
    }
    for (const auto& field : entry.attrs) known.push_back(field.name);
    std::map<std::string, Any> attrs = preset->items;
    for (auto it = node.begin(); it != node.end(); ++it) {
      std::string key = it->first.Scalar();
      if (key == "kind" || key == "tag" ||
          (allow_extras && (key == "host" || key == "device-placement" || key == "partition")))
        continue;
      auto field =
          std::find_if(entry.attrs.begin(), entry.attrs.end(), [&](const SchemaField& f) { return f.name == key; });
      if (field == entry.attrs.end()) {
        fail(it->first, "target kind '" + kind + "' has no attribute '" + key + "'" + did_you_mean(key, known) +
                            " (keys: " + join(known, ", ") + ")");
      }
      attrs[key] = convert_field(it->second, *field, "target attribute '" + key + "'");
    }
    target::Target result;
    try {
      if (validate_only_) {
        apply_schema(entry.attrs, Map(attrs), "target '" + kind + "'", "attribute");  // the kind's hook runs on load
      } else {
        result = target::Target(kind, Map(attrs));
      }
    } catch (const Error& e) {
      fail(node, e.what());
    }
    if (allow_extras && config) {
      if (YAML::Node host = node["host"]) config->host = parse_target(host, "target.host", false, nullptr);
      if (YAML::Node placement = node["device-placement"]) {
        if (!placement.IsMap()) fail(placement, "device-placement maps function names to devices or targets");
        std::map<std::string, Any> items;
        for (auto it = placement.begin(); it != placement.end(); ++it) {
          std::string fn = it->first.Scalar();
          config->device_placement_at[fn] = {it->first.Mark().line + 1, it->first.Mark().column + 1};
          if (it->second.IsMap()) {
            items[fn] = parse_target(it->second, "the target of '" + fn + "'", false, nullptr);
          } else {
            items[fn] = convert(it->second, "device", "the device of '" + fn + "'");
          }
        }
        config->device_placement = Map(items);
      }
      if (YAML::Node partition = node["partition"]) config->partition = parse_partition(partition);
    }
    return result;
  }

  // partition: [CODEGEN, ...] (docs/partitioning.md): each a codegen's
  // name or a target mapping of its kind (attributes for the codegen),
  // each with a pattern table (registered, or, when only checking,
  // declared by a plugin as patterns:NAME), each once.
  Array parse_partition(const YAML::Node& node) {
    if (!node.IsSequence())
      fail(node, "partition is a list of codegens, in priority order, got " + describe_node(node));
    std::vector<std::string> names;
    std::vector<Any> out;
    for (const YAML::Node& item : node) {
      std::string name;
      if (item.IsMap()) {
        target::Target t = parse_target(item, "a partition entry", false, nullptr);
        name = item["kind"] ? item["kind"].Scalar() : t.defined() ? t->kind : "";
        out.push_back(t.defined() ? Any(t) : Any(name));
      } else {
        name = scalar(item, "a codegen name");
        out.push_back(Any(name));
      }
      if (std::find(names.begin(), names.end(), name) != names.end())
        fail(item, "partition names codegen '" + name + "' twice");
      names.push_back(name);
    }
    std::vector<std::string> available;  // when only checking: registered and declared tables
    if (validate_only_) available = with_available(graph::PatternTableRegistry::list(), "patterns");
    for (size_t i = 0; i < names.size(); ++i) {
      try {
        if (validate_only_) {
          if (std::find(available.begin(), available.end(), names[i]) == available.end()) {
            LOOM_THROW(LookupError) << "no pattern table named '" << names[i]
                                    << "' is registered or provided by a plugin" << did_you_mean(names[i], available)
                                    << unknown_providers_note();
          }
        } else {
          graph::PatternTableRegistry::get(names[i]);
        }
      } catch (const Error& e) {
        fail(node[i], e.what());
      }
    }
    return Array(out);
  }

  void parse_target_section(const YAML::Node& node, Config& config) {
    config.target = parse_target(node, "target", true, &config);
  }

  // The registries (loading what provides a name), or when only checking,
  // the registries and the discovered plugins' declarations.
  target::TargetKindEntry kind_entry(const std::string& kind) {
    if (!validate_only_) return target::TargetKindRegistry::get(kind);
    if (auto entry = target::TargetKindRegistry::declaration(kind)) return *entry;
    LOOM_THROW(LookupError) << "no target kind named '" << kind << "' is registered or provided by a plugin"
                            << did_you_mean(kind, with_available(target::TargetKindRegistry::list(), "target"))
                            << unknown_providers_note();
  }

  // The target's default pipeline (its kind's traits); with a function
  // placed on a device target, that device's kind's, which also serves
  // the functions on the CPU (docs/devices.md). What `passes:` absent and
  // the name `default` in `passes:` both mean.
  // Errors point at `where`.
  std::vector<std::string> default_pipeline(const Config& config, const YAML::Node& where) {
    target::TargetKindEntry kind = kind_;
    if (config.device_placement.defined()) {
      for (const auto& item : config.device_placement->items) {
        if (item.second.kind() == AnyKind::kDevice) continue;
        target::TargetKindEntry placed = target::TargetKindRegistry::get(item.second.cast<target::Target>()->kind);
        if (placed.traits.device_type != Device::kCPU) kind = placed;
      }
    }
    std::vector<std::string> names;
    for (const std::string& name : kind.traits.default_pipeline) {
      try {
        names.push_back(pass_info(name).name);
      } catch (const Error& e) {
        fail(where, "the default pipeline of target kind '" + kind.name + "': " + e.what());
      }
    }
    return names;
  }

  transform::PassInfo pass_info(const std::string& name) {
    if (!validate_only_) return transform::PassRegistry::get(name).info();
    if (auto declared = transform::PassRegistry::declaration(name)) return declared->info;
    LOOM_THROW(LookupError) << "no pass named '" << name << "' is registered or provided by a plugin"
                            << did_you_mean(name, with_available(transform::PassRegistry::list(), "pass"))
                            << unknown_providers_note();
  }

  transform::PassInfo lookup_pass(const YAML::Node& node) {
    std::string name = scalar(node, "a pass name");
    try {
      return pass_info(name);
    } catch (const Error& e) {
      fail(node, e.what());
    }
  }

  std::vector<std::string> pass_names(const YAML::Node& node, const std::string& what) {
    if (!node.IsSequence()) fail(node, what + " must be a list of pass names, got " + describe_node(node));
    std::vector<std::string> out;
    for (const auto& item : node) out.push_back(lookup_pass(item).name);
    return out;
  }

  void parse_pipeline(const YAML::Node& node, Config& config) {
    if (!node.IsMap()) fail(node, "pipeline must be a mapping, got " + describe_node(node));
    check_keys(node, {"opt-level", "passes", "config", "disabled", "required", "tuning"}, "pipeline");
    if (YAML::Node tuning = node["tuning"]) parse_tuning(tuning, config);
    if (YAML::Node level = node["opt-level"]) {
      int64_t v = convert(level, "int", "opt-level").as_int();
      if (v < 0 || v > 3) fail(level, "opt-level must be 0, 1, 2 or 3, got " + std::to_string(v));
      config.context.opt_level = static_cast<int>(v);
    }
    if (YAML::Node keys = node["config"]) {
      if (!keys.IsMap()) fail(keys, "pipeline.config must be a mapping of config keys, got " + describe_node(keys));
      for (auto it = keys.begin(); it != keys.end(); ++it) set_config(it->first, it->second, config);
    }
    if (YAML::Node passes = node["passes"]) {
      passes_listed_ = true;
      if (!passes.IsSequence()) fail(passes, "pipeline.passes must be a list, got " + describe_node(passes));
      for (const auto& item : passes) {
        PassSpec spec;
        if (item.IsMap()) {
          check_keys(item, {"name", "options"}, "a pass entry");
          if (!item["name"]) fail(item, "a pass entry needs a 'name'");
          transform::PassInfo pass = lookup_pass(item["name"]);
          spec.name = pass.name;
          if (YAML::Node options = item["options"]) {
            if (!options.IsMap()) fail(options, "options must be a mapping, got " + describe_node(options));
            std::map<std::string, Any> values;
            std::vector<std::string> known;
            for (const auto& o : pass.options) known.push_back(o.name);
            for (auto it = options.begin(); it != options.end(); ++it) {
              std::string key = it->first.Scalar();
              auto option = std::find_if(pass.options.begin(), pass.options.end(),
                                         [&](const SchemaField& f) { return f.name == key; });
              if (option == pass.options.end()) {
                fail(it->first,
                     "pass '" + spec.name + "' has no option '" + key + "'" + did_you_mean(key, known) +
                         (known.empty() ? " (it takes no options)" : " (options: " + join(known, ", ") + ")"));
              }
              values[key] = convert_field(it->second, *option, "option '" + key + "' of pass '" + spec.name + "'");
              if (!validate_only_) config.context.set_config(spec.name + "." + key, values[key]);
            }
            spec.options = Map(values);
          }
        } else if (item.IsScalar() && item.Scalar() == "default") {
          // The target's own default pipeline, as when `passes:` is absent.
          for (const std::string& name : default_pipeline(config, item))
            config.passes.push_back(PassSpec{name, Map::empty()});
          continue;
        } else {
          spec.name = lookup_pass(item).name;
        }
        config.passes.push_back(spec);
      }
    }
    if (YAML::Node disabled = node["disabled"]) config.context.disabled = pass_names(disabled, "pipeline.disabled");
    if (YAML::Node required = node["required"]) config.context.required = pass_names(required, "pipeline.required");
  }

  // pipeline.tuning: {database: FILE, cpu: NAME}, the config keys
  // tuning.database and tuning.cpu; a relative path is the config file's
  // neighbour.
  void parse_tuning(const YAML::Node& node, Config& config) {
    if (!node.IsMap()) fail(node, "pipeline.tuning must be a mapping, got " + describe_node(node));
    check_keys(node, {"database", "cpu"}, "pipeline.tuning");
    if (YAML::Node cpu = node["cpu"]) {
      std::string name = convert(cpu, "str", "pipeline.tuning.cpu").as_string();
      if (name.empty()) fail(cpu, "pipeline.tuning.cpu is empty (leave it out for this machine's CPU)");
      if (!validate_only_) config.context.set_config("tuning.cpu", name);
    }
    YAML::Node database = node["database"];
    if (!database) fail(node, "pipeline.tuning needs a 'database' (a JSON-lines file, docs/tuning.md)");
    std::string path = convert(database, "str", "pipeline.tuning.database").as_string();
    if (path.empty()) fail(database, "pipeline.tuning.database is empty");
    std::filesystem::path file(path);
    std::filesystem::path dir = std::filesystem::path(source_).parent_path();
    if (file.is_relative() && !dir.empty() && std::filesystem::is_directory(dir)) file = dir / file;
    if (!validate_only_) config.context.set_config("tuning.database", file.string());
  }

  void set_config(const YAML::Node& key_node, const YAML::Node& value, Config& config) {
    std::string key = key_node.Scalar();
    // A pass's options are config keys its plugin provides ("config:KEY").
    auto entry = validate_only_ ? transform::ConfigRegistry::declaration(key) : transform::ConfigRegistry::find(key);
    if (!entry) {
      fail(key_node,
           "unknown config option '" + key + "'" + did_you_mean(key, transform::ConfigRegistry::declared_names()));
    }
    Any converted = convert_field(value, entry->field, "config option '" + key + "'");
    if (!validate_only_) config.context.set_config(key, converted);
    config_nodes_[key] = key_node;
  }

  void config_warning(const YAML::Node& node, const std::string& message) {
    YAML::Mark m = node.Mark();
    warnings_.push_back(source_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) +
                        ": warning: " + message);
  }

  // C0 options that contradict C1 constraints: a warning, and the
  // constraint wins.
  void reconcile(const YAML::Node&, Config& config) {
    auto vectorize = config_nodes_.find("tir.vectorize");
    if (vectorize == config_nodes_.end() || !config.context.get_config("tir.vectorize").as_bool()) return;
    if (target::vector_bits(config.target) != 0) return;
    YAML::Mark m = vectorize->second.Mark();
    config.warnings.push_back(source_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) +
                              ": warning: pipeline config 'tir.vectorize: true' contradicts the target '" +
                              config.target->kind +
                              "', which has no vector unit; the target wins and "
                              "loops are not vectorized");
    config.context.set_config("tir.vectorize", false);
  }

  const std::string& text_;
  std::string source_;
  bool validate_only_;
  std::map<std::string, YAML::Node> config_nodes_;
  bool passes_listed_ = false;
  target::TargetKindEntry kind_;  // the target's kind (for its default pipeline)

 public:
  std::vector<std::string> warnings_;
};

}  // namespace

ir::IRModule Config::constrain(const ir::IRModule& module) const {
  for (const auto& [name, at] : device_placement_at) {
    if (!module.contains(name)) {
      throw ConfigError(source, at.first, at.second,
                        "device-placement names @" + name + ", which the module does not define" +
                            did_you_mean(name, module.names()));
    }
  }
  try {
    ir::IRModule out = target::with_target(module, target, host, device_placement);
    if (partition.size()) out = out.with_attr("partition", partition);
    return out;
  } catch (const Error& e) {
    // A device entry no target runs on: at the entry.
    for (const auto& [name, at] : device_placement_at) {
      Any entry = device_placement.at(name);
      if (!target::placement_target(entry, target, host, device_placement).defined())
        throw ConfigError(source, at.first, at.second, e.what());
    }
    throw;
  }
}

transform::Pass Config::pipeline() const {
  std::vector<transform::Pass> list;
  for (const auto& spec : passes) list.push_back(transform::PassRegistry::get(spec.name));
  return transform::sequential(list, "pipeline");
}

Config parse_config(const std::string& text, const std::string& source) {
  Loader loader(text, source);
  Config config = loader.load();
  config.warnings.insert(config.warnings.begin(), loader.warnings_.begin(), loader.warnings_.end());
  return config;
}

namespace {
// A config is a page of YAML; a larger file is not one (docs/reliability.md).
constexpr uint64_t kMaxConfigBytes = uint64_t{16} << 20;

std::string read_config_file(const std::string& path) { return read_file(path, kMaxConfigBytes); }
}  // namespace

ConfigCheck check_config(const std::string& text, const std::string& source) {
  Loader loader(text, source, true);
  Config config = loader.load();
  ConfigCheck out;
  out.warnings = loader.warnings_;
  for (const PassSpec& p : config.passes) out.passes.push_back(p.name);
  out.plugins = config.plugins;
  return out;
}

ConfigCheck check_config_file(const std::string& path) { return check_config(read_config_file(path), path); }

Config load_config(const std::string& path) { return parse_config(read_config_file(path), path); }

}  // namespace loom::config
