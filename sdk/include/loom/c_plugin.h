/* loom/c_plugin.h: a Loom plugin written in C (docs/c-api.md, "Plugins in
 * C").  C99; no C++ header.  Such a plugin uses only the C API's tables
 * (loom/c_api.h): its init registers passes (LoomCompilerApi.pass_register),
 * functions (LoomApi.function_from_c + global_function_register) and
 * devices (LoomApi.device_register).  Its manifest names the table version
 * it was built against instead of a C++ ABI, so one build loads into every
 * core of the same major version whose tables reach that version; a core
 * with older tables refuses it with one error naming both versions.
 *
 *   #include <loom/c_plugin.h>
 *
 *   LOOM_C_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("mine") LOOM_PLUGIN_VERSION("1.0.0")
 *                          LOOM_PLUGIN_PROVIDES("pass:MyPass"));
 *
 *   LOOM_C_PLUGIN_EXPORT int loom_plugin_init_v1(const LoomPluginHost* host, char* error,
 *                                                size_t error_size) {
 *     const LoomCompilerApi* compiler = LoomGetCompilerApi(1);
 *     ... register; on failure copy the table's last_error() into `error`, return 1
 *   }
 *
 * A plugin lists what it provides in LOOM_PLUGIN_PROVIDES ("pass:NAME",
 * "function:NAME", "device:NAME"): the core reads the manifest without
 * loading the plugin, and loads it the first time one of those is asked
 * for.  Link it with libloom_runtime (and libloom_core for the compiler
 * table); name the file loom_NAME.so.
 */
#ifndef LOOM_C_PLUGIN_H_
#define LOOM_C_PLUGIN_H_

#include <stddef.h>

#include "loom/c_api.h"
#include "loom/plugin.h"
#include "loom/version.h"

/* Manifest fields (the same as loom/plugin_sdk.h's). */
#ifndef LOOM_PLUGIN_NAME
#define LOOM_PLUGIN_NAME(x) "name=" x "\n"
#define LOOM_PLUGIN_VERSION(x) "version=" x "\n"
#define LOOM_PLUGIN_DESCRIPTION(x) "description=" x "\n"
#define LOOM_PLUGIN_PROVIDES(x) "provides=" x "\n"
#define LOOM_PLUGIN_REQUIRES(x) "requires=" x "\n"
#endif

/* The table version the plugin needs (the header's newest, unless the
 * plugin asks for an older one before including this header) and the
 * core version it was built against. */
#ifndef LOOM_C_PLUGIN_API_VERSION
#define LOOM_C_PLUGIN_API_VERSION LOOM_API_VERSION
#endif
#ifndef LOOM_C_PLUGIN_CORE_VERSION
#define LOOM_C_PLUGIN_CORE_VERSION LOOM_VERSION
#endif

#define LOOM__C_STR2(x) #x
#define LOOM__C_STR(x) LOOM__C_STR2(x)
#define LOOM__C_MANIFEST_TEXT(FIELDS) \
  FIELDS "core_version=" LOOM_C_PLUGIN_CORE_VERSION "\ncxx_abi=none\nc_api=" LOOM__C_STR(LOOM_C_PLUGIN_API_VERSION) "\n"

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define LOOM__C_RETAIN __attribute__((retain))
#else
#define LOOM__C_RETAIN
#endif

#define LOOM_C_PLUGIN_EXPORT __attribute__((visibility("default")))

/* One per plugin.  FIELDS: LOOM_PLUGIN_NAME(...) LOOM_PLUGIN_VERSION(...) ... */
#define LOOM_C_PLUGIN_MANIFEST(FIELDS)                                                                            \
  __attribute__((used, section(LOOM_PLUGIN_MANIFEST_SECTION))) LOOM__C_RETAIN static const struct {               \
    LoomPluginManifestHeader header;                                                                              \
    char text[sizeof(LOOM__C_MANIFEST_TEXT(FIELDS))];                                                             \
  } loom_plugin_manifest = {{LOOM_PLUGIN_MANIFEST_MAGIC, sizeof(LoomPluginManifestHeader), LOOM_PLUGIN_ABI_MAJOR, \
                             LOOM_PLUGIN_ABI_MINOR, sizeof(LOOM__C_MANIFEST_TEXT(FIELDS)), 0},                    \
                            LOOM__C_MANIFEST_TEXT(FIELDS)}

/* The init entry a plugin defines (loom/plugin.h): */
LOOM_C_PLUGIN_EXPORT int loom_plugin_init_v1(const LoomPluginHost* host, char* error, size_t error_size);

#endif /* LOOM_C_PLUGIN_H_ */
