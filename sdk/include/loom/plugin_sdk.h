// The C++ layer over loom/plugin.h: what a plugin author writes.
//
//   #include <loom/plugin_sdk.h>
//
//   LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("hello")
//                        LOOM_PLUGIN_VERSION("1.0.0")
//                        LOOM_PLUGIN_DESCRIPTION("Greets people"));
//
//   LOOM_PLUGIN_INIT(ctx) {
//     ctx.register_function("hello.greet", [](std::string who) { return "hello, " + who; });
//   }
//
// What the plugin provides is read off what its init registers, at build
// time (loom_add_plugin's declarations step, which loads the plugin and
// runs its init with ctx.declaring() true: docs/plugins.md,
// "Declarations").  LOOM_PLUGIN_PROVIDES("function:hello.greet,...") is
// only for a plugin built with NO_DECLARATIONS (one that cannot be loaded
// on the build machine).
//
// LOOM_PLUGIN_MANIFEST emits the manifest into the ".loom_manifest" section,
// adding the core version and C++ ABI tag of the SDK it is compiled with.
// LOOM_PLUGIN_INIT defines the exported C entry point; the body may throw
// (any std::exception becomes the init error message) and must do all
// registration -- never register from static initialisers, which run before
// the core can check or roll anything back.
#ifndef LOOM_PLUGIN_SDK_H_
#define LOOM_PLUGIN_SDK_H_

#include <cstddef>
#include <cstring>
#include <exception>
#include <string>

#include "loom/object/function.h"
#include "loom/plugin.h"
#include "loom/version.h"

namespace loom {

// Handed to the init body: who the plugin is, and helpers to register.
class PluginContext {
 public:
  explicit PluginContext(const LoomPluginHost& host) : host_(host) {}
  std::string name() const { return host_.plugin_name; }
  std::string path() const { return host_.plugin_path; }
  std::string core_version() const { return host_.core_version; }
  // Whether the core loads the plugin only to read its declarations (at
  // build time, `loomc plugins declare`): register everything, but do not
  // open or probe the hardware; nothing registered runs (docs/plugins.md,
  // "Declarations").  False with a core older than plugin ABI 1.2.
  bool declaring() const {
    return host_.struct_size >= offsetof(LoomPluginHost, flags) + sizeof(host_.flags) &&
           (host_.flags & LOOM_PLUGIN_HOST_DECLARING) != 0;
  }

  // Registers a packed Function, or wraps a typed C++ callable.
  template <class F>
  void register_function(const std::string& name, F&& callable, std::string doc = "") {
    if constexpr (std::is_base_of_v<Function, std::decay_t<F>>) {
      FunctionRegistry::register_function(name, std::forward<F>(callable), std::move(doc));
    } else {
      FunctionRegistry::register_function(name, Function::typed(std::forward<F>(callable), name), std::move(doc));
    }
  }

  // Registers an object type the plugin defines (and its reflection).
  template <class T>
  void register_object() {
    (void)T::runtime_type_index();
  }

 private:
  const LoomPluginHost& host_;
};

namespace detail {
inline void copy_message(char* out, size_t size, const char* text) {
  if (!out || size == 0) return;
  std::strncpy(out, text, size - 1);
  out[size - 1] = '\0';
}

// Runs an init body behind the C boundary: no exception escapes.
inline int run_plugin_init(const LoomPluginHost* host, char* error, size_t error_size,
                           void (*body)(PluginContext&)) noexcept {
  try {
    // The host of plugin ABI 1.0/1.1 ends before `flags` (declaring() checks).
    if (!host || host->struct_size < offsetof(LoomPluginHost, flags)) {
      copy_message(error, error_size, "the host's LoomPluginHost is older than this plugin's SDK");
      return 2;
    }
    PluginContext context(*host);
    body(context);
    return 0;
  } catch (const std::exception& e) {
    copy_message(error, error_size, e.what());
  } catch (...) {
    copy_message(error, error_size, "init threw an exception that is not a std::exception");
  }
  return 1;
}
}  // namespace detail

}  // namespace loom

#define LOOM_PLUGIN_NAME(x) "name=" x "\n"
#define LOOM_PLUGIN_VERSION(x) "version=" x "\n"
#define LOOM_PLUGIN_DESCRIPTION(x) "description=" x "\n"
#define LOOM_PLUGIN_PROVIDES(x) "provides=" x "\n"
#define LOOM_PLUGIN_REQUIRES(x) "requires=" x "\n"

#define LOOM__MANIFEST_TEXT(FIELDS)   \
  FIELDS "core_version=" LOOM_VERSION \
         "\n"                         \
         "cxx_abi=" LOOM_CXX_ABI_TAG "\n"

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define LOOM__RETAIN __attribute__((retain))
#else
#define LOOM__RETAIN
#endif

#define LOOM_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

// One per plugin.  FIELDS: LOOM_PLUGIN_NAME(...) LOOM_PLUGIN_VERSION(...) ...
#define LOOM_PLUGIN_MANIFEST(FIELDS)                                                                               \
  namespace {                                                                                                      \
  struct LoomPluginManifestData {                                                                                  \
    LoomPluginManifestHeader header;                                                                               \
    char text[sizeof(LOOM__MANIFEST_TEXT(FIELDS))];                                                                \
  };                                                                                                               \
  __attribute__((used, section(LOOM_PLUGIN_MANIFEST_SECTION)))                                                     \
  LOOM__RETAIN const LoomPluginManifestData loom_plugin_manifest = {                                               \
      {LOOM_PLUGIN_MANIFEST_MAGIC, sizeof(LoomPluginManifestHeader), LOOM_PLUGIN_ABI_MAJOR, LOOM_PLUGIN_ABI_MINOR, \
       sizeof(LOOM__MANIFEST_TEXT(FIELDS)), 0},                                                                    \
      LOOM__MANIFEST_TEXT(FIELDS)};                                                                                \
  }                                                                                                                \
  static_assert(true, "")

// Defines the init entry; the braces that follow are its body, `CTX` a
// loom::PluginContext&.
#define LOOM_PLUGIN_INIT(CTX)                                                                              \
  static void loom_plugin_init_body(::loom::PluginContext& CTX);                                           \
  LOOM_PLUGIN_EXPORT int loom_plugin_init_v1(const LoomPluginHost* host, char* error, size_t error_size) { \
    return ::loom::detail::run_plugin_init(host, error, error_size, &loom_plugin_init_body);               \
  }                                                                                                        \
  static void loom_plugin_init_body(::loom::PluginContext& CTX)

#endif  // LOOM_PLUGIN_SDK_H_
