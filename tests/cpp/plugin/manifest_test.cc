#include "loom/plugin/manifest.h"

#include <cstring>

#include "loom/plugin.h"
#include "loom/version.h"
#include "plugin_test_util.h"

namespace loom {
using namespace loom::test;  // NOLINT

TEST(Manifest, ReadsTheHelloPluginWithoutLoadingIt) {
  PluginManifest m = read_manifest(std::string(LOOM_BUILD_PLUGIN_DIR) + "/loom_hello.so");
  EXPECT_EQ(m.name, "hello");
  EXPECT_EQ(m.version, "1.0.0");
  EXPECT_EQ(m.core_version, LOOM_VERSION);
  EXPECT_EQ(m.cxx_abi, core_cxx_abi_tag());
  EXPECT_EQ(m.abi_major, LOOM_PLUGIN_ABI_MAJOR);
  // Its provides come from its declarations, written at build time from
  // what its init registers.
  EXPECT_EQ(m.provides,
            (std::vector<std::string>{"function:hello.add", "function:hello.describe", "function:hello.greet"}));
  ASSERT_TRUE(m.declarations.has_value());
  EXPECT_TRUE(m.declarations->passes.empty());
  EXPECT_TRUE(m.requires_.empty());
  EXPECT_EQ(check_compatibility(m), "");
  // Reading did not run plugin code: nothing was registered.
  EXPECT_FALSE(FunctionRegistry::entry("hello.greet"));
}

TEST(Manifest, FileMissing) {
  EXPECT_EQ(plugin_error([] { read_manifest("/nonexistent/loom_x.so"); }),
            "plugin /nonexistent/loom_x.so: file not found");
}

TEST(Manifest, TextFileNamedSo) {
  ScratchDir dir;
  std::ofstream(dir.file("loom_text.so")) << "this is not a shared library\n";
  EXPECT_EQ(plugin_error([&] { read_manifest(dir.file("loom_text.so")); }),
            "plugin " + dir.file("loom_text.so") + ": not a Loom plugin: not an ELF file");
  std::ofstream(dir.file("loom_empty.so")).close();
  EXPECT_EQ(plugin_error([&] { read_manifest(dir.file("loom_empty.so")); }),
            "plugin " + dir.file("loom_empty.so") + ": not a Loom plugin: not an ELF file (too short)");
}

TEST(Manifest, OrdinarySharedLibrary) {
  std::string path = fixture("not_plugin", "not_plugin");
  EXPECT_EQ(plugin_error([&] { read_manifest(path); }),
            "plugin " + path +
                ": not a Loom plugin: no .loom_manifest section (a shared library, but not built "
                "with LOOM_PLUGIN_MANIFEST)");
}

TEST(Manifest, TruncatedCopiesOfARealPlugin) {
  ScratchDir dir;
  std::string source = fixture("good", "fx_good");
  auto size = std::filesystem::file_size(source);
  // Every cut, from the ELF header to the last byte, fails cleanly.
  for (double fraction : {0.01, 0.1, 0.5, 0.9, 0.99}) {
    std::string path = dir.file("loom_cut.so");
    std::filesystem::copy_file(source, path, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::resize_file(path, static_cast<uintmax_t>(size * fraction));
    std::string message = plugin_error([&] { read_manifest(path); });
    EXPECT_NE(message.find("not a Loom plugin: the file is truncated or corrupt"), std::string::npos)
        << fraction << ": " << message;
  }
}

// A copy of a real plugin with `count` bytes at `offset` of its ELF header replaced.
std::string patched_copy(const ScratchDir& dir, const std::string& name, long offset, const std::string& bytes) {
  std::string path = dir.file(name);
  std::filesystem::copy_file(fixture("good", "fx_good"), path);
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(offset);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

TEST(Manifest, PluginForAnotherMachine) {
  ScratchDir dir;
  std::string path = patched_copy(dir, "loom_sparc.so", 18, std::string("\x2b\x00", 2));  // e_machine = EM_SPARCV9
  EXPECT_EQ(
      plugin_error([&] { read_manifest(path); })
          .rfind("plugin " + path + ": not a Loom plugin for this machine: built for ELF machine 43, this machine is ",
                 0),
      0u);
}

TEST(Manifest, ExecutableIsNotASharedObject) {
  ScratchDir dir;
  std::string path = patched_copy(dir, "loom_exec.so", 16, std::string("\x02\x00", 2));  // e_type = ET_EXEC
  EXPECT_EQ(plugin_error([&] { read_manifest(path); }),
            "plugin " + path + ": not a Loom plugin: not a shared object (ELF type 2)");
}

TEST(Manifest, ThirtyTwoBitElf) {
  ScratchDir dir;
  std::string path = patched_copy(dir, "loom_32.so", 4, std::string("\x01", 1));  // EI_CLASS = ELFCLASS32
  EXPECT_EQ(plugin_error([&] { read_manifest(path); }),
            "plugin " + path + ": not a Loom plugin: not a 64-bit little-endian ELF file");
}

TEST(Manifest, PluginAbiMismatchIsReadFromTheHeader) {
  std::string path = fixture("abi_mismatch", "fx_abi_mismatch");
  std::string major = std::to_string(LOOM_PLUGIN_ABI_MAJOR);
  std::string next = std::to_string(LOOM_PLUGIN_ABI_MAJOR + 1);
  EXPECT_EQ(plugin_error([&] { read_manifest(path); }),
            "plugin " + path + ": plugin ABI mismatch: the plugin was built for plugin ABI " + next +
                ".0, this core speaks plugin ABI " + major + "." + std::to_string(LOOM_PLUGIN_ABI_MINOR) +
                " (the major versions must be equal)");
}

TEST(Manifest, CxxAbiMismatchFromARealOldAbiBuild) {
  PluginManifest m = read_manifest(fixture("cxx_abi", "fx_cxx_abi"));
  EXPECT_EQ(m.cxx_abi, "itanium/libstdc++-cxx98");
  EXPECT_EQ(check_compatibility(m),
            "C++ ABI mismatch: the plugin was built for 'itanium/libstdc++-cxx98', this core for "
            "'itanium/libstdc++-cxx11' (rebuild the plugin with the same compiler ABI and standard library)");
}

TEST(Manifest, CoreVersionMismatch) {
  PluginManifest m = read_manifest(fixture("core_version", "fx_core_version"));
  EXPECT_EQ(check_compatibility(m), std::string("core version mismatch: the plugin was built against Loom 9.0.0 and "
                                                "needs Loom 9.x at least 9.0.0; this core is ") +
                                        LOOM_VERSION);
}

// parse_manifest on hand-made section bytes.
std::string section(uint16_t major, uint16_t minor, const std::string& text, const std::string& tail = "") {
  LoomPluginManifestHeader header{};
  std::memcpy(header.magic, LOOM_PLUGIN_MANIFEST_MAGIC, sizeof(LOOM_PLUGIN_MANIFEST_MAGIC));
  header.struct_size = sizeof(header);
  header.abi_major = major;
  header.abi_minor = minor;
  header.text_size = static_cast<uint32_t>(text.size() + 1);
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof(header));
  bytes += text;
  bytes += '\0';
  return bytes + tail;
}

TEST(Manifest, ParseErrorsNameTheProblem) {
  const std::string ok = "name=x\nversion=1.0.0\ncore_version=0.1.0\ncxx_abi=t\n";
  auto error = [](const std::string& bytes) { return plugin_error([&] { parse_manifest(bytes, "p.so"); }); };
  EXPECT_EQ(parse_manifest(section(LOOM_PLUGIN_ABI_MAJOR, 0, ok + "future_key=1\n"), "p.so").extra.at("future_key"),
            "1");
  EXPECT_EQ(error(section(LOOM_PLUGIN_ABI_MAJOR, LOOM_PLUGIN_ABI_MINOR + 1, ok)),
            "plugin p.so: plugin ABI mismatch: the plugin was built for plugin ABI " +
                std::to_string(LOOM_PLUGIN_ABI_MAJOR) + "." + std::to_string(LOOM_PLUGIN_ABI_MINOR + 1) +
                ", newer than this core's " + std::to_string(LOOM_PLUGIN_ABI_MAJOR) + "." +
                std::to_string(LOOM_PLUGIN_ABI_MINOR) + "; use a newer Loom");
  EXPECT_EQ(error(section(LOOM_PLUGIN_ABI_MAJOR, 0, "version=1.0.0\ncore_version=0.1.0\ncxx_abi=t\n")),
            "plugin p.so: manifest has no 'name' field");
  EXPECT_EQ(error(section(LOOM_PLUGIN_ABI_MAJOR, 0, "name=Bad-Name\nversion=1.0.0\ncore_version=0.1.0\ncxx_abi=t")),
            "plugin p.so: invalid plugin name 'Bad-Name' in manifest: use lower-case letters, digits and '_'");
  EXPECT_EQ(error(section(LOOM_PLUGIN_ABI_MAJOR, 0, "name=x\nversion=1.0\ncore_version=0.1.0\ncxx_abi=t")),
            "plugin p.so: invalid plugin version '1.0' in manifest: expected MAJOR.MINOR.PATCH");
  EXPECT_EQ(error(section(LOOM_PLUGIN_ABI_MAJOR, 0, ok + "provides=llvm\n")),
            "plugin p.so: invalid capability 'llvm' in manifest: expected KIND:NAME, e.g. function:hello.greet");
  EXPECT_EQ(error(section(LOOM_PLUGIN_ABI_MAJOR, 0, ok + "garbage\n")),
            "plugin p.so: manifest line 5 is not 'key=value': 'garbage'");
  EXPECT_EQ(error(section(LOOM_PLUGIN_ABI_MAJOR, 0, ok, section(LOOM_PLUGIN_ABI_MAJOR, 0, ok))),
            "plugin p.so: more than one manifest in the plugin (LOOM_PLUGIN_MANIFEST used twice)");
  EXPECT_EQ(error("LOOM"), "plugin p.so: manifest section is too small for its header");
  EXPECT_EQ(error(std::string(sizeof(LoomPluginManifestHeader), 'x')),
            "plugin p.so: manifest section does not start with the Loom magic");
}

TEST(Manifest, ACxxPluginBuiltAgainstLoom01IsRefusedInOneLine) {
  // 0.2.0 moved public headers: a C++ plugin of 0.1.x would fail to load
  // with an undefined symbol; the version check says why first.
  PluginManifest m = parse_manifest(
      section(LOOM_PLUGIN_ABI_MAJOR, 1, "name=old\nversion=1.0.0\ncore_version=0.1.0\ncxx_abi=" + core_cxx_abi_tag()),
      "p.so");
  EXPECT_EQ(check_compatibility(m), std::string("core version mismatch: the plugin was built against Loom 0.1.0 and "
                                                "needs Loom 0.1.x at least 0.1.0; this core is ") +
                                        LOOM_VERSION);
}

TEST(Manifest, APluginOfTheCApiIsCheckedByItsTableVersionNotItsCxxAbi) {
  const std::string base = "name=x\nversion=1.0.0\ncxx_abi=none\n";
  auto check = [](const std::string& text) {
    return check_compatibility(parse_manifest(section(LOOM_PLUGIN_ABI_MAJOR, 0, text), "p.so"));
  };
  // Any core of its major version whose tables reach its version.
  EXPECT_EQ(check(base + "core_version=0.0.1\nc_api=1\n"), "");
  EXPECT_EQ(check(base + "core_version=" LOOM_VERSION "\nc_api=1\n"), "");
  EXPECT_EQ(check(base + "core_version=0.0.1\nc_api=3\n"),
            std::string("C API version mismatch: the plugin needs C API version 3; this core (Loom ") + LOOM_VERSION +
                ") has versions 1 to 1 (use a newer Loom)");
  EXPECT_EQ(check(base + "core_version=7.0.0\nc_api=1\n"),
            std::string("core version mismatch: the plugin was built against Loom 7.0.0 (C API 1) and needs Loom "
                        "7.x; this core is ") +
                LOOM_VERSION);
  // Without c_api, cxx_abi=none is a C++ plugin of another ABI.
  EXPECT_NE(check(base + "core_version=" LOOM_VERSION "\n").find("C++ ABI mismatch"), std::string::npos);
  auto error = [](const std::string& bytes) { return plugin_error([&] { parse_manifest(bytes, "p.so"); }); };
  EXPECT_EQ(error(section(LOOM_PLUGIN_ABI_MAJOR, 0, base + "core_version=0.1.0\nc_api=one\n")),
            "plugin p.so: invalid c_api 'one' in manifest: expected the C API version, a positive integer");
}

}  // namespace loom
