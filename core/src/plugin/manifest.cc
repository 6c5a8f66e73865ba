// Parsing and checking plugin manifests (format: loom/plugin.h).
#include "loom/plugin/manifest.h"

#include <cstring>
#include <tuple>

#include "loom/plugin.h"
#include "loom/support/strings.h"
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
    return fail("plugin ABI mismatch: the plugin was built for plugin ABI " + plugin_abi +
                ", newer than this core's " + core_abi + "; use a newer Loom");
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
    if (key == "name") m.name = value;
    else if (key == "version") m.version = value;
    else if (key == "core_version") m.core_version = value;
    else if (key == "cxx_abi") m.cxx_abi = value;
    else if (key == "description") m.description = value;
    else if (key == "provides") for (auto& item : split(value, ',')) m.provides.push_back(trim(item));
    else if (key == "requires") for (auto& item : split(value, ',')) m.requires_.push_back(trim(item));
    else m.extra[key] = value;
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

PluginManifest read_manifest(const std::string& path) {
  return parse_manifest(read_elf_section(path, LOOM_PLUGIN_MANIFEST_SECTION, kMaxManifestBytes), path);
}

std::string check_compatibility(const PluginManifest& m) {
  if (m.cxx_abi != core_cxx_abi_tag()) {
    return "C++ ABI mismatch: the plugin was built for '" + m.cxx_abi + "', this core for '" +
           core_cxx_abi_tag() + "' (rebuild the plugin with the same compiler ABI and standard library)";
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
    return "core version mismatch: the plugin was built against Loom " + m.core_version + " and needs Loom " +
           series + " at least " + m.core_version + "; this core is " + LOOM_VERSION;
  }
  return "";
}

}  // namespace loom
