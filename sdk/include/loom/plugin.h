/*
 * loom/plugin.h -- the stable C boundary between the Loom core and a plugin.
 *
 * A plugin is one shared object that carries two things:
 *
 *   1. A manifest, placed as plain data in the ELF section ".loom_manifest".
 *      The core reads it from the file *without loading or running the
 *      plugin*, so listing plugins is safe and cheap.  The section holds one
 *      LoomPluginManifestHeader followed by `text_size` bytes of UTF-8 text:
 *      one "key=value" line per field (see "Manifest text" below).
 *
 *   2. Optionally, declarations: the ELF section ".loom_declarations"
 *      (not loaded into memory), UTF-8 JSON that `loomc plugins declare`
 *      writes at build time from what the plugin's init registers
 *      (loom_add_plugin does it after linking): the capabilities it
 *      provides and the schemas of its passes, target kinds, operators and
 *      config keys, so listings and the config validator know them without
 *      loading the plugin.  Its capabilities join the manifest's `provides`.
 *      Format 1: {"format": 1, "provides": [...], "passes": [...],
 *      "target_kinds": [...], "ops": [...], "config": [...]} (docs/plugins.md).
 *
 *   3. An init entry point, `loom_plugin_init_v1`, exported with C linkage.
 *      The core calls it once, after every check on the manifest passed and
 *      after the plugin's dependencies are loaded.  Init registers what the
 *      plugin provides into the core's registries.  It reports failure by
 *      returning non-zero and writing a message; no C++ exception may leave it.
 *
 * Rules for this header (the plugin ABI):
 *   - Every struct starts with `struct_size`; new fields are only appended.
 *   - Appending a field or a manifest key bumps LOOM_PLUGIN_ABI_MINOR.  The
 *     core accepts any plugin whose ABI major equals its own and whose minor is
 *     not newer than its own; unknown manifest keys are ignored.
 *   - Any other change (removing or reordering a field, changing the meaning
 *     of a field or key, changing the init signature) bumps
 *     LOOM_PLUGIN_ABI_MAJOR and renames the entry point (`_v2`).
 *   - Changelog:
 *       1.0  first version: manifest header + text, loom_plugin_init_v1.
 *       1.1  the optional ".loom_declarations" section.
 *       1.2  the manifest key c_api: a plugin written in C against the C
 *            API only (loom/c_plugin.h, docs/c-api.md "Plugins in C");
 *            LoomPluginHost.flags (LOOM_PLUGIN_HOST_DECLARING).
 *
 * The plugin ABI covers only the life cycle.  During init a C++ plugin uses
 * the core's C++ API (registries, objects); that is why the manifest also
 * carries the C++ ABI tag and the core version the plugin was built against,
 * and why both are checked before any plugin code runs.  A plugin written in
 * C registers through the C API's tables instead (loom/c_plugin.h), and its
 * manifest names the table version it needs.
 */
#ifndef LOOM_PLUGIN_H_
#define LOOM_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_PLUGIN_ABI_MAJOR 1
#define LOOM_PLUGIN_ABI_MINOR 2

/* Name of the ELF section that holds the manifest. */
#define LOOM_PLUGIN_MANIFEST_SECTION ".loom_manifest"
/* Name of the optional ELF section that holds the declarations (JSON). */
#define LOOM_PLUGIN_DECLARATIONS_SECTION ".loom_declarations"
/* Name of the exported init function. */
#define LOOM_PLUGIN_INIT_SYMBOL "loom_plugin_init_v1"
/* First eight bytes of the manifest section. */
#define LOOM_PLUGIN_MANIFEST_MAGIC "LOOMPLG"

/*
 * Fixed header of the manifest section.  All integers are in the byte order
 * of the target machine.
 *
 * Manifest text: `text_size` bytes right after the header, the last one NUL.
 * One "key=value\n" line per field; lists are comma-separated.
 *   name=         required; [a-z0-9_]+, unique among loaded plugins
 *   version=      required; the plugin's own version, "MAJOR.MINOR.PATCH"
 *   core_version= required; the core version the plugin was built against
 *   cxx_abi=      required; the C++ ABI tag (see LOOM_CXX_ABI_TAG), or
 *                 "none" for a plugin of the C API (c_api=)
 *   c_api=        a plugin that uses only the C API (loom/c_api.h): the
 *                 version of its tables it needs.  No C++ ABI is checked;
 *                 any core of the same major version whose tables reach
 *                 it loads the plugin, without a rebuild.
 *   description=  one line
 *   provides=     capabilities, e.g. "function:hello.greet,target:null"
 *   requires=     plugin names ("llvm") or capabilities ("target:llvm")
 */
typedef struct LoomPluginManifestHeader {
  char magic[8];        /* LOOM_PLUGIN_MANIFEST_MAGIC, NUL-terminated */
  uint32_t struct_size; /* sizeof(LoomPluginManifestHeader) */
  uint16_t abi_major;   /* LOOM_PLUGIN_ABI_MAJOR the plugin was built with */
  uint16_t abi_minor;   /* LOOM_PLUGIN_ABI_MINOR the plugin was built with */
  uint32_t text_size;   /* bytes of manifest text after this header */
  uint32_t reserved;    /* zero */
} LoomPluginManifestHeader;

/*
 * What the core hands to init.  Owned by the core; valid only during the call.
 */
typedef struct LoomPluginHost {
  uint32_t struct_size;     /* sizeof(LoomPluginHost) as the core knows it */
  uint16_t abi_major;       /* the core's LOOM_PLUGIN_ABI_MAJOR */
  uint16_t abi_minor;       /* the core's LOOM_PLUGIN_ABI_MINOR */
  const char* core_version; /* e.g. "0.1.0" */
  const char* plugin_name;  /* the name from this plugin's manifest */
  const char* plugin_path;  /* absolute path of this plugin's file */
  /* ABI 1.2: LOOM_PLUGIN_HOST_* bits.  Read it only when struct_size
   * reaches it (a 1.0 or 1.1 core's host ends before it). */
  uint32_t flags;
} LoomPluginHost;

/* The core loads the plugin only to read what it registers: `loomc
 * plugins declare`, run by loom_add_plugin at build time, on the build
 * machine.  Init must register everything it provides, as always, but
 * need not open or probe its hardware: nothing it registers runs. */
#define LOOM_PLUGIN_HOST_DECLARING 1u

/*
 * The init entry point.
 *   host       in:  the core's description of itself, see above.
 *   error      out: on failure, a NUL-terminated message (truncated to fit).
 *   error_size in:  size of `error` in bytes (at least 1).
 * Returns 0 on success, non-zero on failure.  Must not throw.  Whatever the
 * plugin registered before failing is removed again by the core.
 */
typedef int (*LoomPluginInitFn)(const LoomPluginHost* host, char* error, size_t error_size);

#ifdef __cplusplus
} /* extern "C" */
#endif

/*
 * C++ ABI tag: names the object model and the standard library flavour a
 * translation unit is compiled for.  A plugin whose tag differs from the
 * core's cannot safely exchange std::string or exceptions with it and is
 * refused before it is loaded.  Only meaningful in C++, where <cstddef>
 * brings in the standard library's configuration macros.
 */
#ifdef __cplusplus
#include <cstddef>
#if defined(_MSC_VER)
#define LOOM_CXX_ABI_FAMILY "msvc"
#else
#define LOOM_CXX_ABI_FAMILY "itanium"
#endif
/* LOOM_CXX_STDLIB_ID numbers the standard library flavour for the
 * preprocessor (loom/version.h compares it with the core's): 1
 * libstdc++-cxx11, 2 libstdc++-cxx98, 3 libc++, 4 msvcprt, 0 unknown. */
#if defined(_LIBCPP_VERSION)
#define LOOM__STR2(x) #x
#define LOOM__STR(x) LOOM__STR2(x)
#define LOOM_CXX_ABI_STDLIB "libc++" LOOM__STR(_LIBCPP_ABI_VERSION)
#define LOOM_CXX_STDLIB_ID 3
#elif defined(__GLIBCXX__)
#if _GLIBCXX_USE_CXX11_ABI
#define LOOM_CXX_ABI_STDLIB "libstdc++-cxx11"
#define LOOM_CXX_STDLIB_ID 1
#else
#define LOOM_CXX_ABI_STDLIB "libstdc++-cxx98"
#define LOOM_CXX_STDLIB_ID 2
#endif
#elif defined(_MSC_VER)
#define LOOM_CXX_ABI_STDLIB "msvcprt"
#define LOOM_CXX_STDLIB_ID 4
#else
#define LOOM_CXX_ABI_STDLIB "unknown"
#define LOOM_CXX_STDLIB_ID 0
#endif
#define LOOM_CXX_ABI_TAG LOOM_CXX_ABI_FAMILY "/" LOOM_CXX_ABI_STDLIB
#endif /* __cplusplus */

#endif /* LOOM_PLUGIN_H_ */
