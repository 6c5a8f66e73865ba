#include "loom/plugin/manager.h"

#include <cstdlib>

#include "loom/object/structural.h"
#include "loom/support/registration.h"
#include "plugin_test_util.h"

namespace loom {
using namespace loom::test;  // NOLINT

namespace {
const PluginRecord& by_name(const std::vector<PluginRecord>& records, const std::string& name) {
  for (const auto& r : records)
    if (r.name == name) return r;
  throw std::runtime_error("no record " + name);
}
}  // namespace

TEST(PluginManager, DiscoveryReadsManifestsWithoutRunningPluginCode) {
  PluginManager manager({fixture_dir("good"), fixture_dir("not_plugin"), fixture_dir("cxx_abi")});
  auto records = manager.list();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(by_name(records, "fx_good").state, PluginState::kDiscovered);
  EXPECT_EQ(by_name(records, "fx_good").manifest->version, "2.3.4");
  EXPECT_EQ(by_name(records, "loom_not_plugin").state, PluginState::kFailed);
  EXPECT_EQ(by_name(records, "fx_cxx_abi").state, PluginState::kFailed);
  EXPECT_NE(by_name(records, "fx_cxx_abi").error.find("C++ ABI mismatch"), std::string::npos);
  EXPECT_FALSE(FunctionRegistry::entry("fx_good.twice"));
}

TEST(PluginManager, LoadByNameRunsInitAndRecordsOwnership) {
  PluginManager manager({fixture_dir("good")});
  PluginRecord r = manager.load("fx_good");
  EXPECT_EQ(r.state, PluginState::kLoaded);
  EXPECT_EQ(r.functions, (std::vector<std::string>{"fx_good.make_point", "fx_good.twice"}));
  EXPECT_EQ(FunctionRegistry::entry("fx_good.twice")->owner, "fx_good");
  EXPECT_EQ(FunctionRegistry::get("fx_good.twice")(-8).as_int(), -16);
  EXPECT_EQ(manager.info("fx_good")->state, PluginState::kLoaded);
  // Loading again is a no-op; so is loading the same file through another manager.
  EXPECT_EQ(manager.load("fx_good").state, PluginState::kLoaded);
  PluginManager other({fixture_dir("good")});
  EXPECT_EQ(other.load_path(fixture("good", "fx_good")).state, PluginState::kLoaded);
}

TEST(PluginManager, LoadByPathOutsideTheSearchPath) {
  PluginManager manager({});
  PluginRecord r = manager.load_path(fixture("good", "fx_good"));
  EXPECT_EQ(r.name, "fx_good");
  EXPECT_EQ(manager.list().size(), 1u);
}

TEST(PluginManager, LoadByCapabilityIsLazyThroughTheRegistry) {
  PluginManager manager({fixture_dir("good"), fixture_dir("dependent")});
  set_capability_resolver({[&](const std::string& c) { return manager.load_capability(c).has_value(); },
                           [&](const std::string& kind) { return manager.available(kind); },
                           [&] { return manager.unreadable(); }});
  EXPECT_EQ(manager.provider("function:fx_dependent.quadruple")->name, "fx_dependent");
  // A typo is answered with a name a plugin would provide, before anything loads.
  try {
    FunctionRegistry::get("fx_dependent.quadrupel");
    ADD_FAILURE() << "no error";
  } catch (const LookupError& e) {
    EXPECT_EQ(std::string(e.what()),
              "no function named 'fx_dependent.quadrupel' is registered or provided by a plugin; did you mean "
              "'fx_dependent.quadruple'?");
  }
  EXPECT_FALSE(manager.load_capability("target:nobody"));
  EXPECT_EQ(manager.info("fx_dependent")->state, PluginState::kDiscovered);
  // The first lookup loads fx_dependent, and fx_good before it.
  EXPECT_EQ(FunctionRegistry::get("fx_dependent.quadruple")(3).as_int(), 12);
  EXPECT_EQ(manager.info("fx_dependent")->state, PluginState::kLoaded);
  EXPECT_EQ(manager.info("fx_good")->state, PluginState::kLoaded);
  set_capability_resolver({});
}

TEST(PluginManager, PluginDefinedTypesWorkWithTheGenericAlgorithms) {
  PluginManager manager({fixture_dir("good")});
  manager.load("fx_good");
  Function make = FunctionRegistry::get("fx_good.make_point");
  Any p = make(3, 0.5, "origin");
  EXPECT_EQ(repr(p), "fx_good.Point(x=3, y=0.5, label=\"origin\")");
  EXPECT_TRUE(structural_equal(p, make(3, 0.5, "origin")));
  EXPECT_EQ(structural_hash(p), structural_hash(make(3, 0.5, "origin")));
  EXPECT_EQ(structural_difference(p, make(3, 0.75, "origin")).value(), "root.y: 0.5 vs 0.75");
  const TypeInfo& info = TypeRegistry::info("fx_good.Point");
  EXPECT_EQ(info.owner, "fx_good");
  EXPECT_EQ(info.field("x")->doc, "an integer");
  // Rebuild it from its reflection alone, as a deserializer will.
  ObjectPtr<Object> copy = info.create();
  for (const auto& field : info.fields) field.set(copy.get(), field.get(p.object()));
  EXPECT_TRUE(structural_equal(Any(copy), p));
}

TEST(PluginManager, UnknownNameSuggests) {
  PluginManager manager({fixture_dir("good")});
  EXPECT_EQ(plugin_error([&] { manager.load("fx_godo"); }),
            "no plugin named 'fx_godo' in the search path (" + fixture_dir("good") + "); did you mean 'fx_good'?");
}

TEST(PluginManager, FileMissing) {
  PluginManager manager({});
  EXPECT_EQ(plugin_error([&] { manager.load_path("/nonexistent/loom_x.so"); }),
            "plugin /nonexistent/loom_x.so: file not found");
  expect_host_still_works();
}

TEST(PluginManager, NotAPluginInTheSearchPath) {
  ScratchDir dir;
  std::ofstream(dir.file("loom_text.so")) << "this is a text file, not a shared library\n";
  std::string good = fixture("good", "fx_good");
  std::filesystem::copy_file(good, dir.file("loom_truncated.so"));
  std::filesystem::resize_file(dir.file("loom_truncated.so"), std::filesystem::file_size(good) / 2);
  std::filesystem::copy_file(fixture("not_plugin", "not_plugin"), dir.file("loom_other.so"));
  PluginManager manager({dir.path()});
  auto records = manager.list();
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    EXPECT_EQ(r.state, PluginState::kFailed) << r.path;
    EXPECT_EQ(r.error.rfind("not a Loom plugin: ", 0), 0u) << r.error;
  }
  EXPECT_EQ(plugin_error([&] { manager.load("loom_text"); }),
            "plugin " + dir.file("loom_text.so") + ": not a Loom plugin: not an ELF file");
  EXPECT_EQ(plugin_error([&] { manager.load_path(dir.file("loom_other.so")); }).find("no .loom_manifest section") !=
                std::string::npos,
            true);
  expect_host_still_works();
}

TEST(PluginManager, PluginAbiMismatch) {
  PluginManager manager({fixture_dir("abi_mismatch")});
  EXPECT_NE(plugin_error([&] {
              manager.load_path(fixture("abi_mismatch", "fx_abi_mismatch"));
            }).find("plugin ABI mismatch: the plugin was built for plugin ABI 2.0"),
            std::string::npos);
  EXPECT_EQ(manager.list().at(0).state, PluginState::kFailed);
  expect_host_still_works();
}

TEST(PluginManager, CxxAbiMismatch) {
  PluginManager manager({fixture_dir("cxx_abi")});
  std::string path = fixture("cxx_abi", "fx_cxx_abi");
  EXPECT_EQ(plugin_error([&] { manager.load("fx_cxx_abi"); }),
            "plugin " + path +
                ": C++ ABI mismatch: the plugin was built for 'itanium/libstdc++-cxx98', this core for "
                "'itanium/libstdc++-cxx11' (rebuild the plugin with the same compiler ABI and standard library)");
  expect_host_still_works();
}

TEST(PluginManager, CoreVersionMismatch) {
  PluginManager manager({fixture_dir("core_version")});
  EXPECT_NE(plugin_error([&] { manager.load("fx_core_version"); }).find("core version mismatch"), std::string::npos);
  expect_host_still_works();
}

TEST(PluginManager, ACapabilityOfAPluginThatFailedToLoadSaysWhichAndWhy) {
  PluginManager manager({fixture_dir("throws")});
  std::string path = fixture("throws", "fx_throws");
  set_capability_resolver({[&](const std::string& c) { return manager.load_capability(c).has_value(); },
                           [&](const std::string& kind) { return manager.available(kind); },
                           [&] { return manager.unreadable(); }});
  // The first request loads it and gets its failure; a later one the same
  // reason, not "no function named".
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string error = plugin_error([&] { FunctionRegistry::get("fx_throws.leaked"); });
    EXPECT_EQ(error, attempt == 0 ? "plugin " + path + ": init failed: device firmware not found"
                                  : "plugin " + path +
                                        ": 'function:fx_throws.leaked' comes from plugin 'fx_throws', which "
                                        "failed to load: init failed: device firmware not found")
        << attempt;
  }
  set_capability_resolver({});
  expect_host_still_works();
}

TEST(PluginManager, AMissNamesThePluginFilesThatCouldNotBeRead) {
  // Nothing is known of what an unreadable file provides: a registry miss
  // says so and why, rather than only that nothing provides the name.
  PluginManager manager({fixture_dir("good"), fixture_dir("not_plugin")});
  std::string path = fixture("not_plugin", "not_plugin");
  set_capability_resolver({[&](const std::string& c) { return manager.load_capability(c).has_value(); },
                           [&](const std::string& kind) { return manager.available(kind); },
                           [&] { return manager.unreadable(); }});
  std::vector<std::string> unreadable = manager.unreadable();
  ASSERT_EQ(unreadable.size(), 1u);
  EXPECT_EQ(unreadable[0], path + " (" + by_name(manager.list(), "loom_not_plugin").error + ")");
  try {
    FunctionRegistry::get("fx_vendor.kernel");
    ADD_FAILURE() << "no error";
  } catch (const LookupError& e) {
    EXPECT_EQ(std::string(e.what()),
              "no function named 'fx_vendor.kernel' is registered or provided by a plugin; "
              "1 plugin file that could not be read may provide it: " +
                  unreadable[0]);
  }
  // A name a readable plugin provides still loads.
  EXPECT_EQ(FunctionRegistry::get("fx_good.twice")(21).as_int(), 42);
  set_capability_resolver({});
  expect_host_still_works();
}

TEST(PluginManager, InitThatThrowsIsRolledBack) {
  PluginManager manager({fixture_dir("throws")});
  std::string path = fixture("throws", "fx_throws");
  EXPECT_EQ(plugin_error([&] { manager.load("fx_throws"); }),
            "plugin " + path + ": init failed: device firmware not found");
  EXPECT_FALSE(FunctionRegistry::entry("fx_throws.leaked"));
  PluginRecord r = *manager.info("fx_throws");
  EXPECT_EQ(r.state, PluginState::kFailed);
  EXPECT_EQ(r.error, "init failed: device firmware not found");
  // A failed plugin stays failed, with the same reason.
  EXPECT_EQ(plugin_error([&] { manager.load("fx_throws"); }),
            "plugin " + path + ": init failed: device firmware not found");
  expect_host_still_works();
}

TEST(PluginManager, RegistrationFromAStaticInitialiserIsRefusedAndRolledBack) {
  PluginManager manager({fixture_dir("static_register")});
  std::string path = fixture("static_register", "fx_static_register");
  EXPECT_EQ(plugin_error([&] { manager.load("fx_static_register"); }),
            "plugin " + path +
                ": it registers function:fx_static_register.early from a static initialiser, while the "
                "library is opened; register in LOOM_PLUGIN_INIT (docs/plugins.md, \"Rules of the boundary\")");
  EXPECT_FALSE(FunctionRegistry::entry("fx_static_register.early"));
  EXPECT_EQ(manager.info("fx_static_register")->state, PluginState::kFailed);
  expect_host_still_works();
}

TEST(PluginManager, InitThatReturnsAnError) {
  PluginManager manager({fixture_dir("init_error")});
  EXPECT_EQ(plugin_error([&] { manager.load("fx_init_error"); }),
            "plugin " + fixture("init_error", "fx_init_error") + ": init failed: license check failed");
  expect_host_still_works();
}

TEST(PluginManager, InitThatLetsAnExceptionEscape) {
  PluginManager manager({fixture_dir("raw_throw")});
  EXPECT_EQ(plugin_error([&] { manager.load("fx_raw_throw"); }),
            "plugin " + fixture("raw_throw", "fx_raw_throw") +
                ": init let an exception escape (a plugin bug): escaped from init");
  expect_host_still_works();
}

TEST(PluginManager, ManifestPromiseNotKept) {
  PluginManager manager({fixture_dir("liar")});
  EXPECT_EQ(plugin_error([&] { manager.load("fx_liar"); }),
            "plugin " + fixture("liar", "fx_liar") +
                ": its manifest provides 'function:fx_liar.promised' but its init did not register it");
  EXPECT_FALSE(FunctionRegistry::entry("fx_liar.real"));
  expect_host_still_works();
}

TEST(PluginManager, DuplicateNameInTheSearchPath) {
  PluginManager manager({fixture_dir("dup_a"), fixture_dir("dup_b")});
  auto records = manager.list();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].state, PluginState::kDiscovered);
  EXPECT_EQ(records[1].state, PluginState::kFailed);
  EXPECT_EQ(records[1].error, "duplicate plugin name 'fx_dup': " + fixture("dup_a", "fx_dup_a") + " comes first");
  manager.load("fx_dup");
  EXPECT_EQ(FunctionRegistry::get("fx_dup.which")().as_string(), "a");
  EXPECT_EQ(plugin_error([&] { manager.load_path(fixture("dup_b", "fx_dup_b")); }),
            "plugin " + fixture("dup_b", "fx_dup_b") +
                ": duplicate plugin name 'fx_dup': " + fixture("dup_a", "fx_dup_a") + " comes first");
  expect_host_still_works();
}

TEST(PluginManager, DuplicateNameAgainstALoadedPlugin) {
  PluginManager first({fixture_dir("dup_a")});
  first.load("fx_dup");
  PluginManager second({fixture_dir("dup_b")});
  EXPECT_EQ(plugin_error([&] { second.load("fx_dup"); }),
            "plugin " + fixture("dup_b", "fx_dup_b") +
                ": duplicate plugin name 'fx_dup': a plugin of that name is already loaded from " +
                fixture("dup_a", "fx_dup_a"));
  EXPECT_EQ(FunctionRegistry::get("fx_dup.which")().as_string(), "a");
}

TEST(PluginManager, TwoPluginsClaimingOneCapability) {
  PluginManager manager({fixture_dir("claim")});
  auto records = manager.list();
  EXPECT_EQ(by_name(records, "fx_claim_a").state, PluginState::kDiscovered);
  EXPECT_EQ(by_name(records, "fx_claim_b").error,
            "capability 'function:fx_claim.f' is already provided by plugin 'fx_claim_a' (" +
                fixture("claim", "fx_claim_a") + ")");
  EXPECT_EQ(manager.load_capability("function:fx_claim.f")->name, "fx_claim_a");
  EXPECT_NE(plugin_error([&] { manager.load("fx_claim_b"); }).find("is already provided by plugin 'fx_claim_a'"),
            std::string::npos);
  EXPECT_EQ(FunctionRegistry::get("fx_claim.f")().as_string(), "a");
  expect_host_still_works();
}

TEST(PluginManager, MissingDependency) {
  PluginManager manager({fixture_dir("needs_missing"), fixture_dir("good")});
  EXPECT_EQ(plugin_error([&] { manager.load("fx_needs_missing"); }),
            "plugin " + fixture("needs_missing", "fx_needs_missing") +
                ": missing dependency: requires plugin 'fx_goood', which no plugin in the search path provides; did "
                "you mean 'fx_good'?");
  expect_host_still_works();
}

TEST(PluginManager, DependencyCycle) {
  PluginManager manager({fixture_dir("cycle")});
  EXPECT_EQ(plugin_error([&] { manager.load("fx_cycle_a"); }),
            "plugin " + fixture("cycle", "fx_cycle_b") + ": dependency cycle: fx_cycle_a -> fx_cycle_b -> fx_cycle_a");
  EXPECT_EQ(manager.info("fx_cycle_a")->error, "dependency cycle: fx_cycle_a -> fx_cycle_b -> fx_cycle_a");
  EXPECT_EQ(manager.info("fx_cycle_b")->state, PluginState::kFailed);
  expect_host_still_works();
}

TEST(PluginManager, SearchPathNeverIncludesTheCurrentDirectory) {
  ::setenv("LOOM_PLUGIN_PATH", ("::relative/dir:" + fixture_dir("good") + ":").c_str(), 1);
  std::vector<std::string> warnings;
  auto path = PluginManager::default_search_path(&warnings);
  ::unsetenv("LOOM_PLUGIN_PATH");
  EXPECT_EQ(path.back(), fixture_dir("good"));
  EXPECT_EQ(std::string(LOOM_BUILD_PLUGIN_DIR), path.front());
  for (const auto& dir : path) EXPECT_TRUE(std::filesystem::path(dir).is_absolute()) << dir;
  ASSERT_EQ(warnings.size(), 4u);  // two empty entries, one relative, one trailing
  EXPECT_NE(warnings[2].find("'relative/dir' is not an absolute path; ignored"), std::string::npos);
}

}  // namespace loom
