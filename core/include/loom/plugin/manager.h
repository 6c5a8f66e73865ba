// The plugin manager: discovery, lazy loading and the plugin life cycle.
//
// Discovery scans the search path for "*.so" files and reads each manifest
// from the file (loom/plugin/manifest.h); no plugin code runs.  The search
// path is, in order:
//   1. <directory of libloom_core>/loom/plugins   (the build tree, or an install)
//   2. <install prefix>/lib/loom/plugins           (if different)
//   3. each absolute directory in LOOM_PLUGIN_PATH (':'-separated)
// Empty and relative LOOM_PLUGIN_PATH entries are ignored with a warning: the
// current directory is never searched.
//
// A discovered plugin is "discovered", "loaded" or "failed" (with a reason).
// Conflicts are settled at discovery in search-path order: a later plugin
// with the name of an earlier one, or claiming a capability an earlier one
// provides, is failed with a reason naming the earlier one.
//
// Loading (by name, by path, or by capability on first use) loads the
// plugin's requirements first, opens the file with Boost.DLL, and calls its
// init inside a RegistrationScope: if init fails, throws, or does not
// register a function its manifest provides, everything it registered is
// removed, the library is closed and the plugin is failed.  A loaded plugin
// is never unloaded.  Every failure is a PluginError naming the file and
// the reason; the host and the other plugins keep working.
#ifndef LOOM_PLUGIN_MANAGER_H_
#define LOOM_PLUGIN_MANAGER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/plugin/manifest.h"

namespace loom {

enum class PluginState { kDiscovered, kLoaded, kFailed };
const char* plugin_state_name(PluginState state);

struct PluginRecord {
  std::string path;                        // absolute
  std::string name;                        // from the manifest, or the file name if unreadable
  std::optional<PluginManifest> manifest;  // absent when the file could not be read as a plugin
  PluginState state = PluginState::kDiscovered;
  std::string error;                   // the reason, when failed
  std::vector<std::string> functions;  // registered by its init, when loaded
  double load_ms = 0;                  // time spent opening and initialising
};

class PluginManager {
 public:
  // The process-wide manager over the default search path; it is also the
  // capability resolver the registries ask on a miss.
  static PluginManager& global();

  // A manager over an explicit search path (tools and tests).
  explicit PluginManager(std::vector<std::string> search_path);
  ~PluginManager();
  PluginManager(const PluginManager&) = delete;
  PluginManager& operator=(const PluginManager&) = delete;

  // The default search path; `warnings` receives the ignored entries.
  static std::vector<std::string> default_search_path(std::vector<std::string>* warnings = nullptr);

  const std::vector<std::string>& search_path() const;
  // Problems with the search path (ignored LOOM_PLUGIN_PATH entries) and
  // with the plugins on it (refused as unsafe, shadowed by a namesake).
  std::vector<std::string> warnings() const;

  // Re-reads the search path; loaded plugins stay loaded.
  void rescan();
  std::vector<PluginRecord> list();
  std::optional<PluginRecord> info(const std::string& name);
  // The record of the plugin file at `path` (on the search path or not):
  // its manifest read, nothing loaded; a failed record says why.
  PluginRecord read_path(const std::string& path);

  // From now on, plugins are loaded only to read their declarations: their
  // init is told so (LOOM_PLUGIN_HOST_DECLARING), and may skip probing its
  // hardware.  `loomc plugins declare` sets it; there is no way back.
  void declare_only();
  bool declaring() const;

  // Loads a discovered plugin (and what it requires).  Throws PluginError.
  PluginRecord load(const std::string& name);
  // Loads the plugin file at `path`, which need not be on the search path.
  PluginRecord load_path(const std::string& path);
  // Loads the plugin that provides `capability`; nullopt when none does.
  // Throws PluginError when the provider fails to load.
  std::optional<PluginRecord> load_capability(const std::string& capability);
  // The discovered plugin that provides `capability`, if any (no loading).
  std::optional<PluginRecord> provider(const std::string& capability);
  // NAMEs of the KIND:NAME capabilities usable plugins provide (no loading).
  std::vector<std::string> available(const std::string& kind);
  // The plugin files whose manifest could not be read, as "PATH (REASON)":
  // what they provide is unknown, so a registry miss names them.
  std::vector<std::string> unreadable();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Calls f(plugin name, its declarations) for each discovered plugin of the
// global manager that is not loaded and carries declarations (a loaded
// plugin's entries are in the registries): what listings and the config
// validator add to the registries.  Loads nothing.
void for_each_declaring_plugin(
    const std::function<void(const std::string& owner, const PluginDeclarations& declarations)>& f);

}  // namespace loom

#endif  // LOOM_PLUGIN_MANAGER_H_
