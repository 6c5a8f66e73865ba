// `loomc plugin doctor PATH.so` (docs/plugin-tools.md): why a plugin file
// does not load, found without risking this process (its manifest, the
// libraries and symbols it needs, conflicts with installed plugins), then
// a load in a child process.
#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <set>

#include "loom/plugin/manager.h"
#include "loom/plugin/manifest.h"
#include "loom/support/strings.h"
#include "loom/version.h"
#include "plugin_tools.h"

namespace loomc {
namespace {

namespace fs = std::filesystem;
using loom::PluginManager;
using loom::PluginRecord;

std::string demangle(const std::string& symbol) {
  int status = 0;
  char* text = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !text) return symbol;
  std::string out = text;
  std::free(text);
  return out;
}

// The package Debian policy names for a shared library: libfoo.so.1 is in
// libfoo1, libfoo2.0.so.3 in libfoo2.0-3 (a name ending in a digit takes a
// '-' before the version).
std::string debian_package(const std::string& soname) {
  size_t so = soname.find(".so");
  if (so == std::string::npos) return "";
  std::string name = soname.substr(0, so), version = soname.substr(so + 3);
  if (name.empty()) return "";
  if (!version.empty() && version[0] == '.') version = version.substr(1);
  std::replace(name.begin(), name.end(), '_', '-');
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (version.empty()) return "";  // unversioned: a private library, shipped with what needs it
  return name + (std::isdigit(static_cast<unsigned char>(name.back())) ? "-" : "") + version;
}

void finding(const std::string& step, const std::string& text) {
  std::printf("%-13s %s\n", (step + ":").c_str(), text.c_str());
}

}  // namespace

int plugin_doctor(const std::string& path_in, int timeout_s) {
  std::vector<std::string> blocking, conflicts;
  auto verdict = [&]() {
    if (!blocking.empty()) {
      std::printf("verdict:      does not load: %s\n", loom::join(blocking, "; ").c_str());
      return 1;
    }
    if (!conflicts.empty()) {
      std::printf(
          "verdict:      loads; installed next to the plugins above, the later one on the search path is "
          "refused\n");
      return 0;
    }
    std::printf("verdict:      loads\n");
    return 0;
  };
  std::error_code ec;
  if (!fs::exists(path_in, ec)) {
    finding("file", "no such file: " + path_in);
    blocking.push_back("no such file");
    return verdict();
  }
  std::string path = fs::absolute(path_in).lexically_normal().string();
  finding("file", path);

  // The manifest, read without loading anything.
  PluginManager& manager = PluginManager::global();
  PluginRecord r = manager.read_path(path);
  if (!r.manifest) {
    finding("manifest", r.error);
    blocking.push_back(r.error);
    // Not a shared library for this machine: nothing more to ask of it.
    if (r.error.find("no .loom_manifest section") == std::string::npos) return verdict();
  } else {
    const loom::PluginManifest& m = *r.manifest;
    finding("manifest", "plugin '" + m.name + "' " + m.version);
    finding("plugin ABI", std::to_string(m.abi_major) + "." + std::to_string(m.abi_minor) + " (this core speaks " +
                              std::to_string(LOOM_PLUGIN_ABI_MAJOR) + "." + std::to_string(LOOM_PLUGIN_ABI_MINOR) +
                              ")");
    finding("built for", "Loom " + m.core_version + " (this core is " + LOOM_VERSION + ")");
    finding("C++ ABI", m.cxx_abi + " (this core: " + loom::core_cxx_abi_tag() + ")");
    std::string reason = loom::check_compatibility(m);
    if (!reason.empty()) {
      finding("problem", reason);
      blocking.push_back(reason);
    }
  }

  // Shared libraries and symbols, as the dynamic loader would resolve them
  // here (ldd -r: its trace mode, which runs none of the plugin's code).
  std::string core_dir = core_library_dir();
  std::string library_path = core_dir;
  if (const char* env = std::getenv("LD_LIBRARY_PATH")) library_path += std::string(":") + env;
  ChildResult ldd = run_child({"ldd", "-r", path}, timeout_s, {"LD_LIBRARY_PATH=" + library_path});
  std::vector<std::string> missing, undefined;
  for (const std::string& raw : loom::split(ldd.output, '\n')) {
    std::string line = loom::trim(raw);
    size_t arrow = line.find(" => not found");
    if (arrow != std::string::npos) missing.push_back(line.substr(0, arrow));
    if (loom::starts_with(line, "undefined symbol: ")) {
      std::string symbol = line.substr(18);
      size_t end = symbol.find_first_of(" \t");
      undefined.push_back(symbol.substr(0, end));
    }
  }
  if (!ldd.started) finding("libraries", "not checked: " + ldd.output);
  for (const std::string& lib : missing) {
    std::string package = debian_package(lib);
    finding("missing", lib + ": the dynamic loader finds no such library" +
                           (package.empty() ? std::string("; one without a version in its name is usually the "
                                                          "vendor's own, installed with the plugin")
                                            : "; Debian names the package that ships it " + package +
                                                  " (apt-get install " + package + ")") +
                           "; or add its folder to the plugin's RUNPATH");
  }
  if (!missing.empty()) blocking.push_back("missing shared libraries: " + loom::join(missing, ", "));
  // Symbols of a library that is not found are undefined too: only the
  // libraries are worth saying then.
  if (!missing.empty()) undefined.clear();
  size_t shown = 0;
  bool loom_symbols = false;
  for (const std::string& symbol : undefined) {
    std::string name = demangle(symbol);
    bool core = loom::starts_with(name, "loom::") || name.find(" loom::") != std::string::npos;
    loom_symbols = loom_symbols || core;
    if (++shown > 10) continue;
    finding("undefined", name + (core ? " (Loom's core API: this core " LOOM_VERSION " does not define it)"
                                      : " (none of the libraries it needs defines it)"));
  }
  if (undefined.size() > 10) finding("undefined", "... and " + std::to_string(undefined.size() - 10) + " more");
  if (!undefined.empty()) {
    blocking.push_back(std::to_string(undefined.size()) + " undefined symbol" + (undefined.size() == 1 ? "" : "s") +
                       (loom_symbols ? "; it was built against another Loom: rebuild it against this one's SDK"
                                     : "; link the libraries that define them"));
  }
  if (missing.empty() && undefined.empty() && ldd.started) finding("libraries", "every dependency and symbol resolves");

  // Installed plugins with its name or one of its capabilities.
  if (r.manifest) {
    for (const PluginRecord& other : manager.list()) {
      if (!other.manifest || fs::equivalent(other.path, path, ec)) continue;
      if (other.name == r.manifest->name) {
        finding("conflict", "an installed plugin has the name '" + other.name + "': " + other.path);
        conflicts.push_back(other.path);
      }
      for (const std::string& c : r.manifest->provides) {
        const auto& provides = other.manifest->provides;
        if (std::find(provides.begin(), provides.end(), c) == provides.end()) continue;
        finding("conflict",
                "'" + c + "' is already provided by installed plugin '" + other.name + "' (" + other.path + ")");
        conflicts.push_back(other.path);
      }
    }
  }

  // Its code, in a child process: static initialisers, init.
  if (blocking.empty()) {
    ChildResult child = load_in_child(path, timeout_s);
    if (child.exit_code == 0) {
      std::string first = loom::split(child.output, '\n').front();
      finding("load", "ok in a child process: " + first);
    } else {
      std::string why = child_failure(child, path, timeout_s);
      finding("load", "failed in a child process: " + why);
      blocking.push_back(why);
    }
  }
  return verdict();
}

}  // namespace loomc
