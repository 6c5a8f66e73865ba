// The plugin manager (see loom/plugin/manager.h for the rules it enforces).
#include "loom/plugin/manager.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>

#include "loom/object/function.h"
#include "loom/plugin.h"
#include "loom/plugin/manifest.h"
#include "loom/support/registration.h"
#include "loom/support/strings.h"
#include "loom/version.h"

namespace fs = std::filesystem;

namespace loom {

const char* plugin_state_name(PluginState state) {
  switch (state) {
    case PluginState::kDiscovered:
      return "discovered";
    case PluginState::kLoaded:
      return "loaded";
    case PluginState::kFailed:
      return "failed";
  }
  return "?";
}

namespace {

// Loaded plugins are process-wide: the registries they filled are global, and
// their code must stay mapped for as long as the process runs.
struct LoadedPlugins {
  std::mutex mutex;
  std::map<std::string, std::string> path_by_name;
  std::map<std::string, std::string> owner_by_capability;  // capability -> plugin name
  std::vector<boost::dll::shared_library> libraries;       // never unloaded
};
LoadedPlugins& loaded_plugins() {
  static LoadedPlugins* instance = new LoadedPlugins();
  return *instance;
}

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  return ec ? fs::absolute(path).lexically_normal().string() : p.string();
}

// "plugin 'x' (path)" for messages.
std::string describe(const PluginRecord& r) { return "plugin '" + r.name + "' (" + r.path + ")"; }

std::string dl_error_text(const std::exception& e) {
  std::string what = e.what();
  const std::string marker = "dlerror system message: ";
  size_t at = what.find(marker);
  if (at == std::string::npos) return what;
  std::string text = what.substr(at + marker.size());
  if (!text.empty() && text.back() == ')') text.pop_back();
  return text;
}

// Why the plugin file at `path`, or its folder, must not be loaded, or ""
// (docs/reliability.md, "Plugin folders"): like ssh and sudo, Loom refuses
// code that someone else could have written.  A path that cannot be read
// is left to the manifest reader, which says why.
std::string unsafe_reason(const std::string& path, bool folder) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "";
  std::string what = (folder ? "its folder " : "") + path;
  if (!folder && !S_ISREG(st.st_mode)) return path + " is not a regular file";
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    return what + " is owned by user " + std::to_string(st.st_uid) +
           ", neither you nor root: refused, as that user could replace the code; use a copy you own";
  }
  bool by_all = st.st_mode & S_IWOTH;
  bool by_group = (st.st_mode & S_IWGRP) && st.st_gid != ::getegid();  // (a group of your own is fine)
  if (by_all || by_group) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return what + " is writable by " + (by_all ? std::string("every user") : "group " + std::to_string(st.st_gid)) +
           " (mode " + mode +
           "): refused, as anyone who can write there could plant code that runs in your next "
           "build; run 'chmod go-w " +
           path + "' or keep plugins in a folder only you can write";
  }
  return "";
}

}  // namespace

namespace {
// The Loom libraries the plugin file at `path` links (its DT_NEEDED
// entries named libloom_*) that sit beside this runtime library, opened
// before the plugin is: their static initialisers register the core's
// own entries (libloom_core's functions, ops, passes), which must count as
// the core's, not as registrations of the plugin being opened.  A
// runtime-only program (examples/c, examples/deploy) that loads a library
// needing the opencl plugin brings libloom_core in this way.  Best effort:
// a file that cannot be read is left to the plugin's own open to report.
void open_loom_dependencies(const std::string& path) {
  static std::mutex mutex;
  static std::vector<boost::dll::shared_library> opened;  // kept for the process's life
  std::map<std::string, std::string> sections;
  try {
    sections = read_elf_sections(path, {".dynamic", ".dynstr"}, 16 * 1024 * 1024);
  } catch (const std::exception&) {
    return;
  }
  auto dynamic = sections.find(".dynamic"), strings = sections.find(".dynstr");
  if (dynamic == sections.end() || strings == sections.end()) return;
  std::error_code ec;
  std::filesystem::path here = boost::dll::this_line_location(ec).parent_path();
  if (ec) return;
  const std::string& table = strings->second;
  constexpr int64_t kNeeded = 1;  // DT_NEEDED
  for (size_t at = 0; at + 16 <= dynamic->second.size(); at += 16) {
    int64_t tag;
    uint64_t value;
    std::memcpy(&tag, dynamic->second.data() + at, 8);
    std::memcpy(&value, dynamic->second.data() + at + 8, 8);
    if (tag == 0) break;  // DT_NULL
    if (tag != kNeeded || value >= table.size()) continue;
    std::string name = table.c_str() + value;
    std::filesystem::path file = here / name;
    if (name.rfind("libloom_", 0) != 0 || !std::filesystem::exists(file)) continue;
    std::lock_guard<std::mutex> lock(mutex);
    try {
      opened.emplace_back(file.string(), boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_global);
    } catch (const std::exception&) {
      // The plugin's own open names what is wrong.
    }
  }
}
}  // namespace

struct PluginManager::Impl {
  std::recursive_mutex mutex;
  std::vector<std::string> search_path;
  std::vector<std::string> warnings;       // ignored search-path entries
  std::vector<std::string> scan_warnings;  // refused and shadowed plugins, from the last scan
  bool scanned = false;
  bool declaring = false;             // declare_only()
  std::vector<PluginRecord> records;  // in search-path order

  // Prefers a loaded record, then a usable one, then a failed one (for its reason).
  PluginRecord* find_by_name(const std::string& name) {
    for (PluginState wanted : {PluginState::kLoaded, PluginState::kDiscovered, PluginState::kFailed})
      for (auto& r : records)
        if (r.name == name && r.state == wanted) return &r;
    return nullptr;
  }

  PluginRecord* find_by_path(const std::string& path) {
    for (auto& r : records)
      if (r.path == path) return &r;
    return nullptr;
  }

  // A usable plugin that provides `capability`; with `failed`, one that
  // would have but failed to load.
  PluginRecord* find_provider(const std::string& capability, bool failed = false) {
    for (auto& r : records) {
      if ((r.state == PluginState::kFailed) != failed || !r.manifest) continue;
      const auto& provides = r.manifest->provides;
      if (std::find(provides.begin(), provides.end(), capability) != provides.end()) return &r;
    }
    return nullptr;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& r : records) out.push_back(r.name);
    return out;
  }

  static PluginRecord read_record(const std::string& path) {
    PluginRecord r;
    r.path = path;
    r.name = fs::path(path).stem().string();
    try {
      r.manifest = read_manifest(path);
      r.name = r.manifest->name;
      std::string reason = check_compatibility(*r.manifest);
      if (!reason.empty()) {
        r.state = PluginState::kFailed;
        r.error = reason;
      }
    } catch (const PluginError& e) {
      r.state = PluginState::kFailed;
      r.error = e.reason();
    }
    return r;
  }

  // Settles name and capability conflicts among the records, in order.
  void settle_conflicts() {
    std::map<std::string, const PluginRecord*> by_name;
    std::map<std::string, const PluginRecord*> by_capability;
    for (auto& r : records) {
      if (r.state == PluginState::kFailed || !r.manifest) continue;
      auto same_name = by_name.find(r.name);
      if (same_name != by_name.end()) {
        r.state = PluginState::kFailed;
        r.error = "duplicate plugin name '" + r.name + "': " + same_name->second->path + " comes first";
        scan_warnings.push_back("plugin '" + r.name + "' at " + r.path + " is shadowed by " + same_name->second->path +
                                " (the first on the search path wins)");
        continue;
      }
      std::string conflict;
      for (const auto& capability : r.manifest->provides) {
        auto owner = by_capability.find(capability);
        if (owner != by_capability.end()) {
          conflict = "capability '" + capability + "' is already provided by " + describe(*owner->second);
          break;
        }
      }
      if (!conflict.empty()) {
        r.state = PluginState::kFailed;
        r.error = conflict;
        continue;
      }
      by_name[r.name] = &r;
      for (const auto& capability : r.manifest->provides) by_capability[capability] = &r;
    }
  }

  void scan() {
    std::vector<PluginRecord> old = std::move(records);
    records.clear();
    scan_warnings.clear();
    std::set<std::string> seen;
    for (const auto& dir : search_path) {
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) continue;
      std::string unsafe_dir = unsafe_reason(dir, true);
      std::vector<std::string> files;
      for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->path().extension() == ".so") files.push_back(it->path().string());
      }
      std::sort(files.begin(), files.end());
      for (const auto& file : files) {
        std::string path = absolute_path(file);
        if (!seen.insert(path).second) continue;
        auto previous = std::find_if(old.begin(), old.end(), [&](const PluginRecord& r) { return r.path == path; });
        std::string unsafe = unsafe_dir.empty() ? unsafe_reason(path, false) : unsafe_dir;
        if (previous != old.end() && previous->state == PluginState::kLoaded) {
          records.push_back(*previous);
        } else if (!unsafe.empty()) {  // not even its manifest is read
          PluginRecord r;
          r.path = path;
          r.name = fs::path(path).stem().string();
          r.state = PluginState::kFailed;
          r.error = unsafe;
          records.push_back(r);
          scan_warnings.push_back("plugin " + path + " refused: " + unsafe);
        } else {
          records.push_back(read_record(path));
        }
      }
    }
    // Plugins loaded by explicit path stay listed.
    for (auto& r : old)
      if (r.state == PluginState::kLoaded && !seen.count(r.path)) records.push_back(r);
    settle_conflicts();
    scanned = true;
  }

  void ensure_scanned() {
    if (!scanned) scan();
  }

  [[noreturn]] void fail(PluginRecord& r, const std::string& reason) {
    r.state = PluginState::kFailed;
    r.error = reason;
    throw PluginError(r.path, reason);
  }

  // Checks against plugins already loaded in this process (possibly by
  // another manager or by path).
  std::string loaded_conflict(const PluginRecord& r) {
    LoadedPlugins& loaded = loaded_plugins();
    std::lock_guard<std::mutex> lock(loaded.mutex);
    auto same_name = loaded.path_by_name.find(r.name);
    if (same_name != loaded.path_by_name.end()) {
      return "duplicate plugin name '" + r.name + "': a plugin of that name is already loaded from " +
             same_name->second;
    }
    for (const auto& capability : r.manifest->provides) {
      auto owner = loaded.owner_by_capability.find(capability);
      if (owner != loaded.owner_by_capability.end()) {
        return "capability '" + capability + "' is already provided by loaded plugin '" + owner->second + "' (" +
               loaded.path_by_name[owner->second] + ")";
      }
    }
    return "";
  }

  void load_requirements(PluginRecord& r, std::vector<std::string>& chain) {
    for (const auto& requirement : r.manifest->requires_) {
      bool is_capability = requirement.find(':') != std::string::npos;
      PluginRecord* dependency = is_capability ? find_provider(requirement) : find_by_name(requirement);
      if (!dependency) {
        std::string hint = is_capability ? "" : did_you_mean(requirement, names());
        fail(r, "missing dependency: requires " + std::string(is_capability ? "capability '" : "plugin '") +
                    requirement + "', which no plugin in the search path provides" + hint);
      }
      auto in_chain = std::find(chain.begin(), chain.end(), dependency->path);
      if (in_chain != chain.end()) {
        std::vector<std::string> cycle;
        for (auto it = in_chain; it != chain.end(); ++it) cycle.push_back(find_by_path(*it)->name);
        cycle.push_back(dependency->name);
        std::string text = "dependency cycle: " + join(cycle, " -> ");
        for (auto it = in_chain; it != chain.end(); ++it) {
          PluginRecord* member = find_by_path(*it);
          member->state = PluginState::kFailed;
          member->error = text;
        }
        throw PluginError(r.path, text);
      }
      try {
        load_record(*dependency, chain);
      } catch (const PluginError& e) {
        if (r.state == PluginState::kFailed) throw;  // a cycle through r: already explained
        fail(r, "dependency '" + requirement + "' failed to load: " + e.what());
      }
    }
  }

  // True if this very file was loaded already, by this or another manager.
  bool adopt_if_loaded(PluginRecord& r) {
    LoadedPlugins& loaded = loaded_plugins();
    std::lock_guard<std::mutex> lock(loaded.mutex);
    auto same_name = loaded.path_by_name.find(r.name);
    if (same_name == loaded.path_by_name.end() || same_name->second != r.path) return false;
    r.state = PluginState::kLoaded;
    r.functions = FunctionRegistry::list_owned_by(r.name);
    return true;
  }

  void load_record(PluginRecord& r, std::vector<std::string>& chain) {
    if (r.state == PluginState::kLoaded) return;
    if (r.state == PluginState::kFailed) throw PluginError(r.path, r.error);
    if (adopt_if_loaded(r)) return;
    std::string conflict = loaded_conflict(r);
    if (!conflict.empty()) fail(r, conflict);

    chain.push_back(r.path);
    load_requirements(r, chain);
    chain.pop_back();

    auto start = std::chrono::steady_clock::now();
    boost::dll::shared_library library;
    std::string early;  // what its static initialisers registered
    open_loom_dependencies(r.path);
    {
      // Opening runs its static initialisers, before the core can check or
      // roll back anything they register: refuse a plugin that does.
      RegistrationScope opening(r.name + " (static initialiser)");
      try {
        library.load(r.path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
      } catch (const std::exception& e) {
        fail(r, "cannot load the shared library: " + dl_error_text(e));
      }
      early = join(capabilities_owned_by(opening.owner()), ", ");
      if (early.empty()) opening.commit();  // nothing to undo
    }
    if (!early.empty()) {
      library.unload();
      fail(r, "it registers " + early +
                  " from a static initialiser, while the library is opened; register in "
                  "LOOM_PLUGIN_INIT (docs/plugins.md, \"Rules of the boundary\")");
    }
    if (!library.has(LOOM_PLUGIN_INIT_SYMBOL)) {
      fail(r, std::string("not a Loom plugin: it has a manifest but does not export ") + LOOM_PLUGIN_INIT_SYMBOL);
    }
    auto init = library.get<int(const LoomPluginHost*, char*, size_t)>(LOOM_PLUGIN_INIT_SYMBOL);

    LoomPluginHost host;
    host.struct_size = sizeof(LoomPluginHost);
    host.abi_major = LOOM_PLUGIN_ABI_MAJOR;
    host.abi_minor = LOOM_PLUGIN_ABI_MINOR;
    host.core_version = LOOM_VERSION;
    host.plugin_name = r.name.c_str();
    host.plugin_path = r.path.c_str();
    host.flags = declaring ? LOOM_PLUGIN_HOST_DECLARING : 0u;

    std::string reason;
    {
      RegistrationScope scope(r.name);
      char message[2048] = {0};
      int status = 0;
      try {
        status = init(&host, message, sizeof(message));
        message[sizeof(message) - 1] = '\0';
        if (status != 0) reason = std::string("init failed: ") + (message[0] ? message : "(no message)");
      } catch (const std::exception& e) {
        reason = std::string("init let an exception escape (a plugin bug): ") + e.what();
      } catch (...) {
        reason = "init let an exception of unknown type escape (a plugin bug)";
      }
      if (reason.empty()) {
        for (const auto& capability : r.manifest->provides) {
          if (capability_registered(capability) == false) {
            reason = "its manifest provides '" + capability + "' but its init did not register it";
            break;
          }
        }
      }
      if (!reason.empty()) {
        scope.rollback();  // before the library is closed: undo may run plugin destructors
      } else {
        scope.commit();
      }
    }
    if (!reason.empty()) {
      library.unload();
      fail(r, reason);
    }

    r.functions = FunctionRegistry::list_owned_by(r.name);
    r.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    r.state = PluginState::kLoaded;
    r.error.clear();
    LoadedPlugins& loaded = loaded_plugins();
    std::lock_guard<std::mutex> lock(loaded.mutex);
    loaded.path_by_name[r.name] = r.path;
    for (const auto& capability : r.manifest->provides) loaded.owner_by_capability[capability] = r.name;
    loaded.libraries.push_back(std::move(library));
  }

  PluginRecord load(PluginRecord& r) {
    std::vector<std::string> chain;
    load_record(r, chain);
    return r;
  }
};

PluginManager::PluginManager(std::vector<std::string> search_path) : impl_(std::make_unique<Impl>()) {
  impl_->search_path = std::move(search_path);
}

PluginManager::~PluginManager() = default;

PluginManager& PluginManager::global() {
  static PluginManager* instance = [] {
    std::vector<std::string> warnings;
    auto* manager = new PluginManager(default_search_path(&warnings));
    manager->impl_->warnings = std::move(warnings);
    return manager;
  }();
  return *instance;
}

namespace {
// Registries ask the global manager for a capability they miss; it is built
// on the first such request, so start-up reads no plugin directory.
const bool resolver_installed = [] {
  set_capability_resolver(
      {[](const std::string& capability) { return PluginManager::global().load_capability(capability).has_value(); },
       [](const std::string& kind) { return PluginManager::global().available(kind); },
       [] { return PluginManager::global().unreadable(); }});
  return true;
}();
}  // namespace

std::vector<std::string> PluginManager::default_search_path(std::vector<std::string>* warnings) {
  std::vector<std::string> dirs;
  auto add = [&](const fs::path& dir) {
    std::string path = absolute_path(dir.string());
    if (std::find(dirs.begin(), dirs.end(), path) == dirs.end()) dirs.push_back(path);
  };
  std::error_code ec;
  fs::path core_library = boost::dll::this_line_location(ec);
  if (!ec) add(core_library.parent_path() / "loom" / "plugins");
  add(LOOM_INSTALL_PLUGIN_DIR);
  if (const char* env = std::getenv("LOOM_PLUGIN_PATH")) {
    for (const std::string& entry : split(env, ':', false)) {
      if (entry.empty()) {
        if (warnings)
          warnings->push_back(
              "LOOM_PLUGIN_PATH has an empty entry; ignored (the current directory is "
              "never searched for plugins)");
      } else if (!fs::path(entry).is_absolute()) {
        if (warnings)
          warnings->push_back("LOOM_PLUGIN_PATH entry '" + entry +
                              "' is not an absolute path; ignored "
                              "(plugins are never searched relative to the current directory)");
      } else {
        add(entry);
      }
    }
  }
  return dirs;
}

const std::vector<std::string>& PluginManager::search_path() const { return impl_->search_path; }

std::vector<std::string> PluginManager::warnings() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  impl_->ensure_scanned();
  std::vector<std::string> out = impl_->warnings;
  out.insert(out.end(), impl_->scan_warnings.begin(), impl_->scan_warnings.end());
  return out;
}

void PluginManager::rescan() {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  impl_->scan();
}

std::vector<PluginRecord> PluginManager::list() {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  impl_->ensure_scanned();
  return impl_->records;
}

std::optional<PluginRecord> PluginManager::info(const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  impl_->ensure_scanned();
  if (PluginRecord* r = impl_->find_by_name(name)) return *r;
  return std::nullopt;
}

PluginRecord PluginManager::read_path(const std::string& path) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  impl_->ensure_scanned();
  std::string absolute = absolute_path(path);
  if (PluginRecord* r = impl_->find_by_path(absolute)) return *r;
  return Impl::read_record(absolute);
}

void PluginManager::declare_only() {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  impl_->declaring = true;
}

bool PluginManager::declaring() const {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  return impl_->declaring;
}

PluginRecord PluginManager::load(const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  impl_->ensure_scanned();
  PluginRecord* r = impl_->find_by_name(name);
  if (!r) {
    throw PluginError("", "no plugin named '" + name + "' in the search path (" + join(impl_->search_path, ":") + ")" +
                              did_you_mean(name, impl_->names()));
  }
  return impl_->load(*r);
}

PluginRecord PluginManager::load_path(const std::string& path) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  impl_->ensure_scanned();
  std::string absolute = absolute_path(path);
  PluginRecord* r = impl_->find_by_path(absolute);
  if (!r) {
    PluginRecord fresh = Impl::read_record(absolute);
    if (fresh.state == PluginState::kFailed) throw PluginError(fresh.path, fresh.error);
    impl_->records.push_back(std::move(fresh));
    r = &impl_->records.back();
  }
  return impl_->load(*r);
}

std::optional<PluginRecord> PluginManager::load_capability(const std::string& capability) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  impl_->ensure_scanned();
  PluginRecord* r = impl_->find_provider(capability);
  if (!r) {
    // Only a plugin that failed to load provides it: say which, and why,
    // rather than that nothing does (docs/plugins.md, "When a plugin fails").
    if (PluginRecord* failed = impl_->find_provider(capability, true)) {
      throw PluginError(failed->path, "'" + capability + "' comes from plugin '" + failed->name +
                                          "', which failed to load: " + failed->error);
    }
    return std::nullopt;
  }
  return impl_->load(*r);
}

std::vector<std::string> PluginManager::available(const std::string& kind) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  impl_->ensure_scanned();
  std::vector<std::string> names;
  const std::string prefix = kind + ":";
  for (const auto& r : impl_->records) {
    if (r.state == PluginState::kFailed || !r.manifest) continue;
    for (const auto& capability : r.manifest->provides)
      if (starts_with(capability, prefix)) names.push_back(capability.substr(prefix.size()));
  }
  return names;
}

std::vector<std::string> PluginManager::unreadable() {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  impl_->ensure_scanned();
  std::vector<std::string> out;
  for (const auto& r : impl_->records)
    if (!r.manifest) out.push_back(r.path + " (" + r.error + ")");
  return out;
}

void for_each_declaring_plugin(const std::function<void(const std::string&, const PluginDeclarations&)>& f) {
  for (const PluginRecord& r : PluginManager::global().list()) {
    if (r.state != PluginState::kDiscovered || !r.manifest || !r.manifest->declarations) continue;
    f(r.name, *r.manifest->declarations);
  }
}

std::optional<PluginRecord> PluginManager::provider(const std::string& capability) {
  std::lock_guard<std::recursive_mutex> lock(impl_->mutex);
  impl_->ensure_scanned();
  if (PluginRecord* r = impl_->find_provider(capability)) return *r;
  return std::nullopt;
}

}  // namespace loom
