// Parsing and checking plugin manifests (format: loom/plugin.h).
#include "loom/plugin/manifest.h"

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <tuple>

#include "loom/plugin.h"
#include "loom/support/json.h"
#include "loom/support/strings.h"
#include "loom/c_api.h"
#include "loom/version.h"

namespace loom {

namespace {
constexpr size_t kMaxManifestBytes = 64 * 1024;

bool valid_plugin_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

struct Version {
  int major = 0, minor = 0, patch = 0;
};

bool parse_version(const std::string& text, Version& out) {
  auto parts = split(text, '.', false);
  if (parts.size() != 3) return false;
  int* fields[] = {&out.major, &out.minor, &out.patch};
  for (size_t i = 0; i < 3; ++i) {
    if (parts[i].empty() || parts[i].size() > 6 || parts[i].find_first_not_of("0123456789") != std::string::npos)
      return false;
    *fields[i] = std::stoi(parts[i]);
  }
  return true;
}
}  // namespace

std::string core_cxx_abi_tag() { return LOOM_CXX_ABI_TAG; }

PluginManifest parse_manifest(const std::string& bytes, const std::string& path) {
  auto fail = [&](const std::string& reason) -> PluginManifest { throw PluginError(path, reason); };
  LoomPluginManifestHeader header;
  if (bytes.size() < sizeof(header)) return fail("manifest section is too small for its header");
  std::memcpy(&header, bytes.data(), sizeof(header));
  if (std::memcmp(header.magic, LOOM_PLUGIN_MANIFEST_MAGIC, sizeof(LOOM_PLUGIN_MANIFEST_MAGIC)) != 0) {
    return fail("manifest section does not start with the Loom magic");
  }
  // The ABI version decides how the rest is laid out, so check it first.
  std::string plugin_abi = std::to_string(header.abi_major) + "." + std::to_string(header.abi_minor);
  std::string core_abi = std::to_string(LOOM_PLUGIN_ABI_MAJOR) + "." + std::to_string(LOOM_PLUGIN_ABI_MINOR);
  if (header.abi_major != LOOM_PLUGIN_ABI_MAJOR) {
    return fail("plugin ABI mismatch: the plugin was built for plugin ABI " + plugin_abi +
                ", this core speaks plugin ABI " + core_abi + " (the major versions must be equal)");
  }
  if (header.abi_minor > LOOM_PLUGIN_ABI_MINOR) {
    return fail("plugin ABI mismatch: the plugin was built for plugin ABI " + plugin_abi + ", newer than this core's " +
                core_abi + "; use a newer Loom");
  }
  if (header.struct_size < sizeof(header) || header.struct_size > bytes.size()) {
    return fail("manifest header has an invalid struct_size " + std::to_string(header.struct_size));
  }
  size_t text_end = size_t(header.struct_size) + header.text_size;
  if (header.text_size == 0 || text_end > bytes.size()) {
    return fail("manifest text size " + std::to_string(header.text_size) + " does not fit the section");
  }
  // Anything after the text (beyond alignment padding) is a second manifest.
  for (size_t i = text_end; i < bytes.size(); ++i) {
    if (bytes[i] != '\0') return fail("more than one manifest in the plugin (LOOM_PLUGIN_MANIFEST used twice)");
  }
  std::string text = bytes.substr(header.struct_size, header.text_size);
  if (text.back() != '\0') return fail("manifest text is not NUL-terminated");
  text.pop_back();

  PluginManifest m;
  m.abi_major = header.abi_major;
  m.abi_minor = header.abi_minor;
  int line_number = 0;
  for (const std::string& line : split(text, '\n')) {
    ++line_number;
    size_t eq = line.find('=');
    if (eq == std::string::npos) {
      return fail("manifest line " + std::to_string(line_number) + " is not 'key=value': '" + line + "'");
    }
    std::string key = trim(line.substr(0, eq));
    std::string value = trim(line.substr(eq + 1));
    if (key == "name")
      m.name = value;
    else if (key == "version")
      m.version = value;
    else if (key == "core_version")
      m.core_version = value;
    else if (key == "cxx_abi")
      m.cxx_abi = value;
    else if (key == "c_api") {
      char* end = nullptr;
      long version = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || version < 1 || version > 1000000)
        return fail("invalid c_api '" + value + "' in manifest: expected the C API version, a positive integer");
      m.c_api = static_cast<int>(version);
    } else if (key == "description")
      m.description = value;
    else if (key == "provides")
      for (auto& item : split(value, ',')) m.provides.push_back(trim(item));
    else if (key == "requires")
      for (auto& item : split(value, ',')) m.requires_.push_back(trim(item));
    else
      m.extra[key] = value;
  }
  const std::pair<const char*, const std::string*> required[] = {
      {"name", &m.name}, {"version", &m.version}, {"core_version", &m.core_version}, {"cxx_abi", &m.cxx_abi}};
  for (const auto& field : required) {
    if (field.second->empty()) return fail(std::string("manifest has no '") + field.first + "' field");
  }
  if (!valid_plugin_name(m.name)) {
    return fail("invalid plugin name '" + m.name + "' in manifest: use lower-case letters, digits and '_'");
  }
  Version ignored;
  if (!parse_version(m.version, ignored)) {
    return fail("invalid plugin version '" + m.version + "' in manifest: expected MAJOR.MINOR.PATCH");
  }
  for (const auto& capability : m.provides) {
    size_t colon = capability.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == capability.size()) {
      return fail("invalid capability '" + capability + "' in manifest: expected KIND:NAME, e.g. function:hello.greet");
    }
  }
  return m;
}

namespace {
constexpr size_t kMaxDeclarationsBytes = 16 * 1024 * 1024;

void write_strings(JsonWriter& json, const char* key, const std::vector<std::string>& items) {
  json.key(key).string_array(items);
}

// Reading: every member is checked, so a malformed section is one clear
// error, never a crash later.
struct Reader {
  std::string where;
  const JsonValue& member(const JsonValue& object, const char* key, JsonValue::Kind kind, const char* what) const {
    const JsonValue* v = object.find(key);
    if (!v || v->kind != kind) LOOM_THROW(Error) << where << ": '" << key << "' must be " << what;
    return *v;
  }
  std::string string(const JsonValue& o, const char* key) const {
    return member(o, key, JsonValue::Kind::kString, "a string").string;
  }
  int64_t integer(const JsonValue& o, const char* key) const {
    return member(o, key, JsonValue::Kind::kInt, "an integer").integer;
  }
  std::vector<std::string> strings(const JsonValue& o, const char* key) const {
    std::vector<std::string> out;
    for (const JsonValue& item : member(o, key, JsonValue::Kind::kArray, "an array of strings").array) {
      if (item.kind != JsonValue::Kind::kString) LOOM_THROW(Error) << where << ": '" << key << "' must hold strings";
      out.push_back(item.string);
    }
    return out;
  }
  const std::vector<JsonValue>& objects(const JsonValue& o, const char* key) const {
    const auto& items = member(o, key, JsonValue::Kind::kArray, "an array of objects").array;
    for (const JsonValue& item : items)
      if (item.kind != JsonValue::Kind::kObject) LOOM_THROW(Error) << where << ": '" << key << "' must hold objects";
    return items;
  }
};
}  // namespace

std::string write_declarations(const std::vector<std::string>& provides, const PluginDeclarations& d) {
  JsonWriter json(0);
  json.begin_object().key("format").value(int64_t{1});
  write_strings(json, "provides", provides);
  json.key("passes").begin_array();
  for (const DeclaredPass& p : d.passes) {
    json.begin_object().key("name").value(p.name).key("summary").value(p.summary);
    json.key("opt_level").value(int64_t{p.opt_level});
    write_strings(json, "required", p.required);
    write_strings(json, "needs", p.needs);
    write_strings(json, "establishes", p.establishes);
    write_strings(json, "preserves", p.preserves);
    write_strings(json, "sequence", p.sequence);
    json.key("options");
    write_schema_json(json, p.options);
    json.end_object();
  }
  json.end_array().key("target_kinds").begin_array();
  for (const DeclaredTargetKind& k : d.target_kinds) {
    json.begin_object().key("name").value(k.name).key("doc").value(k.doc).key("attributes");
    write_schema_json(json, k.attrs);
    json.key("traits").begin_object();
    write_strings(json, "native_intrinsics", k.native_intrinsics);
    json.key("threads_attr").value(k.threads_attr).key("device_type").value(int64_t{k.device_type});
    write_strings(json, "default_pipeline", k.default_pipeline);
    write_strings(json, "codegen_needs", k.codegen_needs);
    json.end_object().end_object();
  }
  json.end_array().key("tags").begin_array();
  for (const DeclaredTag& t : d.tags) {
    json.begin_object().key("name").value(t.name).key("kind").value(t.kind).key("doc").value(t.doc).key("attributes");
    write_schema_json(json, t.attrs);
    json.end_object();
  }
  json.end_array().key("ops").begin_array();
  for (const DeclaredOp& op : d.ops) {
    json.begin_object().key("name").value(op.name).key("num_inputs").value(int64_t{op.num_inputs});
    json.key("pattern").value(op.pattern).key("doc").value(op.doc).key("attributes");
    write_schema_json(json, op.attrs);
    json.end_object();
  }
  json.end_array().key("config");
  write_schema_json(json, d.config);
  json.end_object();
  return json.str() + "\n";
}

PluginDeclarations parse_declarations(const std::string& text, const std::string& path,
                                      std::vector<std::string>* provides) {
  try {
    JsonValue root = parse_json(text, LOOM_PLUGIN_DECLARATIONS_SECTION);
    Reader r{"the declarations"};
    if (root.kind != JsonValue::Kind::kObject) LOOM_THROW(Error) << "the declarations must be a JSON object";
    if (r.integer(root, "format") != 1) {
      LOOM_THROW(Error) << "the declarations have format " << r.integer(root, "format") << "; this core reads format 1";
    }
    if (provides) *provides = r.strings(root, "provides");
    PluginDeclarations d;
    for (const JsonValue& p : r.objects(root, "passes")) {
      DeclaredPass pass;
      pass.name = r.string(p, "name");
      Reader in{"pass '" + pass.name + "'"};
      pass.summary = in.string(p, "summary");
      pass.opt_level = static_cast<int>(in.integer(p, "opt_level"));
      pass.required = in.strings(p, "required");
      pass.needs = in.strings(p, "needs");
      pass.establishes = in.strings(p, "establishes");
      pass.preserves = in.strings(p, "preserves");
      pass.sequence = in.strings(p, "sequence");
      pass.options =
          read_schema_json(in.member(p, "options", JsonValue::Kind::kArray, "an array"), in.where + " options");
      d.passes.push_back(std::move(pass));
    }
    for (const JsonValue& k : r.objects(root, "target_kinds")) {
      DeclaredTargetKind kind;
      kind.name = r.string(k, "name");
      Reader in{"target kind '" + kind.name + "'"};
      kind.doc = in.string(k, "doc");
      kind.attrs = read_schema_json(in.member(k, "attributes", JsonValue::Kind::kArray, "an array"), in.where);
      const JsonValue& traits = in.member(k, "traits", JsonValue::Kind::kObject, "an object");
      kind.native_intrinsics = in.strings(traits, "native_intrinsics");
      kind.threads_attr = in.string(traits, "threads_attr");
      kind.device_type = static_cast<int>(in.integer(traits, "device_type"));
      kind.default_pipeline = in.strings(traits, "default_pipeline");
      kind.codegen_needs = in.strings(traits, "codegen_needs");
      d.target_kinds.push_back(std::move(kind));
    }
    // "tags" came later in format 1: a plugin declared before has none.
    if (root.find("tags")) {
      for (const JsonValue& t : r.objects(root, "tags")) {
        DeclaredTag tag;
        tag.name = r.string(t, "name");
        Reader in{"tag '" + tag.name + "'"};
        tag.kind = in.string(t, "kind");
        tag.doc = in.string(t, "doc");
        tag.attrs = read_schema_json(in.member(t, "attributes", JsonValue::Kind::kArray, "an array"), in.where);
        d.tags.push_back(std::move(tag));
      }
    }
    for (const JsonValue& o : r.objects(root, "ops")) {
      DeclaredOp op;
      op.name = r.string(o, "name");
      Reader in{"operator '" + op.name + "'"};
      op.num_inputs = static_cast<int>(in.integer(o, "num_inputs"));
      op.pattern = in.string(o, "pattern");
      op.doc = in.string(o, "doc");
      op.attrs = read_schema_json(in.member(o, "attributes", JsonValue::Kind::kArray, "an array"), in.where);
      d.ops.push_back(std::move(op));
    }
    d.config = read_schema_json(r.member(root, "config", JsonValue::Kind::kArray, "an array"), "config keys");
    return d;
  } catch (const Error& e) {
    throw PluginError(path, std::string("malformed ") + LOOM_PLUGIN_DECLARATIONS_SECTION + " section: " + e.what());
  }
}

PluginManifest read_manifest(const std::string& path) {
  std::map<std::string, std::string> sections =
      read_elf_sections(path, {LOOM_PLUGIN_MANIFEST_SECTION, LOOM_PLUGIN_DECLARATIONS_SECTION}, kMaxDeclarationsBytes);
  auto manifest = sections.find(LOOM_PLUGIN_MANIFEST_SECTION);
  if (manifest == sections.end()) {
    throw PluginError(path, std::string("not a Loom plugin: no ") + LOOM_PLUGIN_MANIFEST_SECTION +
                                " section (a shared library, but not built with LOOM_PLUGIN_MANIFEST)");
  }
  if (manifest->second.size() > kMaxManifestBytes) {
    throw PluginError(path, std::string("section ") + LOOM_PLUGIN_MANIFEST_SECTION + " is " +
                                std::to_string(manifest->second.size()) + " bytes, more than the " +
                                std::to_string(kMaxManifestBytes) + " allowed");
  }
  PluginManifest m = parse_manifest(manifest->second, path);
  auto declarations = sections.find(LOOM_PLUGIN_DECLARATIONS_SECTION);
  if (declarations != sections.end()) {
    std::vector<std::string> declared;
    m.declarations = parse_declarations(declarations->second, path, &declared);
    for (std::string& capability : declared) {
      if (std::find(m.provides.begin(), m.provides.end(), capability) == m.provides.end()) {
        m.provides.push_back(std::move(capability));
      }
    }
  }
  return m;
}

std::string check_compatibility(const PluginManifest& m) {
  if (m.c_api > 0) {
    // A plugin of the C API: no C++ ABI, any core of its major version
    // whose tables reach the version it needs (docs/c-api.md).
    Version built, core;
    if (!parse_version(m.core_version, built)) {
      return "invalid core_version '" + m.core_version + "' in manifest: expected MAJOR.MINOR.PATCH";
    }
    parse_version(LOOM_VERSION, core);
    if (m.c_api > LOOM_API_VERSION) {
      return "C API version mismatch: the plugin needs C API version " + std::to_string(m.c_api) +
             "; this core (Loom " + LOOM_VERSION + ") has versions 1 to " + std::to_string(LOOM_API_VERSION) +
             " (use a newer Loom)";
    }
    if (built.major != core.major) {
      return "core version mismatch: the plugin was built against Loom " + m.core_version + " (C API " +
             std::to_string(m.c_api) + ") and needs Loom " + std::to_string(built.major) + ".x; this core is " +
             LOOM_VERSION;
    }
    return "";
  }
  if (m.cxx_abi != core_cxx_abi_tag()) {
    return "C++ ABI mismatch: the plugin was built for '" + m.cxx_abi + "', this core for '" + core_cxx_abi_tag() +
           "' (rebuild the plugin with the same compiler ABI and standard library)";
  }
  Version built, core;
  if (!parse_version(m.core_version, built)) {
    return "invalid core_version '" + m.core_version + "' in manifest: expected MAJOR.MINOR.PATCH";
  }
  parse_version(LOOM_VERSION, core);
  bool same_series = built.major == core.major && (core.major != 0 || built.minor == core.minor);
  bool not_older = std::tie(core.major, core.minor, core.patch) >= std::tie(built.major, built.minor, built.patch);
  if (!same_series || !not_older) {
    std::string series = built.major == 0 ? std::to_string(built.major) + "." + std::to_string(built.minor) + ".x"
                                          : std::to_string(built.major) + ".x";
    return "core version mismatch: the plugin was built against Loom " + m.core_version + " and needs Loom " + series +
           " at least " + m.core_version + "; this core is " + LOOM_VERSION;
  }
  return "";
}

}  // namespace loom
