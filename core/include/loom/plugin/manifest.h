// Reading a plugin's manifest from its file, without loading the plugin.
//
// read_manifest() opens the file, checks that it is a 64-bit ELF shared
// object for this machine, finds the ".loom_manifest" section through the
// section header table and parses the header and text that loom/plugin.h
// defines.  Nothing in the file is executed.  Every failure is a PluginError
// naming the file and the reason; a file that is not a Loom plugin at all
// says so ("not a Loom plugin: ...").
//
// check_compatibility() then compares the manifest with this core: the C++
// ABI tag must be equal, and the core version the plugin was built against
// must be served by this core (same major, and same minor before 1.0; this
// core not older than the plugin's).
#ifndef LOOM_PLUGIN_MANIFEST_H_
#define LOOM_PLUGIN_MANIFEST_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/object/schema.h"
#include "loom/support/error.h"

namespace loom {

class PluginError : public Error {
 public:
  PluginError(std::string path, std::string reason)
      : Error(path.empty() ? reason : "plugin " + path + ": " + reason),
        path_(std::move(path)),
        reason_(std::move(reason)) {}
  const std::string& path() const { return path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string path_;
  std::string reason_;
};

// What a plugin declares in its ".loom_declarations" section (written at
// build time by `loomc plugins declare` from what its init registers; see
// loom/plugin.h): the schemas that listings and the config validator need
// without loading it.  Plain data; the core's registries turn it into
// their own entries.
struct DeclaredPass {
  std::string name, summary;
  int opt_level = 0;
  std::vector<std::string> required, needs, establishes, preserves;
  std::vector<std::string> sequence;  // a pipeline's passes, by name
  std::vector<SchemaField> options;
};
struct DeclaredTargetKind {
  std::string name, doc;
  std::vector<SchemaField> attrs;
  // Its traits, as far as data can say them (vector_bits is computed).
  std::vector<std::string> native_intrinsics, default_pipeline, codegen_needs;
  std::string threads_attr;
  int device_type = 1;
};
struct DeclaredOp {
  std::string name, doc, pattern;
  int num_inputs = -1;
  std::vector<SchemaField> attrs;
};
// A target tag: a named preset of a target kind's attributes; each
// attribute's value is the default of a field of type Any.
struct DeclaredTag {
  std::string name, kind, doc;
  std::vector<SchemaField> attrs;
};
struct PluginDeclarations {
  std::vector<DeclaredPass> passes;
  std::vector<DeclaredTargetKind> target_kinds;
  std::vector<DeclaredTag> tags;
  std::vector<DeclaredOp> ops;
  std::vector<SchemaField> config;  // config keys besides the passes' options
};

// The section's JSON text, and back.  parse throws PluginError naming the
// file and what is malformed.
std::string write_declarations(const std::vector<std::string>& provides, const PluginDeclarations& declarations);
PluginDeclarations parse_declarations(const std::string& text, const std::string& path,
                                      std::vector<std::string>* provides);

struct PluginManifest {
  uint16_t abi_major = 0;
  uint16_t abi_minor = 0;
  std::string name;
  std::string version;
  std::string core_version;
  std::string cxx_abi;
  // A plugin written against the C API only (manifest key c_api=N, cxx_abi
  // "none"): the version of the tables it needs; 0 for a C++ plugin.  Such
  // a plugin loads into any core of the same major version whose tables
  // reach N (docs/c-api.md, "Plugins in C").
  int c_api = 0;
  std::string description;
  std::vector<std::string> provides;
  std::vector<std::string> requires_;        // plugin names or capabilities
  std::map<std::string, std::string> extra;  // keys this core does not know
  // From the ".loom_declarations" section, when the plugin has one; its
  // capabilities are in `provides` too.
  std::optional<PluginDeclarations> declarations;
};

// Raw bytes of ELF section `section` of the file at `path`, read without
// loading it; throws PluginError when the file is missing, not a regular
// file, not an ELF shared object for this machine, truncated (a section,
// a table or a loaded segment past its end), or lacks the section.
// Sections larger than `max_size` are refused.
std::string read_elf_section(const std::string& path, const std::string& section, size_t max_size);
// The sections of `sections` the file has (a missing one is not an error);
// messages say the file is "not a NOUN".
std::map<std::string, std::string> read_elf_sections(const std::string& path, const std::vector<std::string>& sections,
                                                     size_t max_size, const std::string& noun = "Loom plugin");

PluginManifest read_manifest(const std::string& path);
// Parses the section bytes (header + text); `path` is used in errors.
PluginManifest parse_manifest(const std::string& bytes, const std::string& path);

// "" when the plugin may be loaded by this core, otherwise the reason.
std::string check_compatibility(const PluginManifest& manifest);

// The C++ ABI tag of this core (LOOM_CXX_ABI_TAG as the core was built).
std::string core_cxx_abi_tag();

}  // namespace loom

#endif  // LOOM_PLUGIN_MANIFEST_H_
