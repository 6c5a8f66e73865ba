// Plugin declarations (loom/plugin.h, ".loom_declarations"): written at build
// time from what a plugin's init registers, read with the manifest without
// loading the plugin; the JSON round trip, every malformed section refused
// with a message, and the in-tree plugins' declared capabilities equal to
// what their inits register.
#include <gtest/gtest.h>

#include <algorithm>

#include "loom/driver/declarations.h"
#include "loom/plugin/manager.h"
#include "loom/plugin/manifest.h"
#include "loom/support/registration.h"
#include "plugin_test_util.h"

namespace loom {
using namespace loom::test;  // NOLINT

namespace {
PluginDeclarations sample() {
  PluginDeclarations d;
  d.passes.push_back(DeclaredPass{"Tile",
                                  "tiles loops",
                                  2,
                                  {"InferType"},
                                  {"buffers_flat"},
                                  {},
                                  {"*"},
                                  {},
                                  {SchemaField{"size", "int", Any(int64_t{32}), "the tile"}.between(1, 4096),
                                   SchemaField{"layout", "str", Any(std::string("NHWC")), ""}.one_of({"NHWC", "NCHW"}),
                                   {"scale", "float", Any(0.5), ""},
                                   {"dtype", "dtype", Any(DataType::Float(16)), ""},
                                   {"axes", "Array", Any(Array({Any(int64_t{1}), Any(std::string("x"))})), ""},
                                   {"fast", "bool", Any(false), ""}}});
  d.passes.push_back(DeclaredPass{"all", "a pipeline", 0, {}, {}, {}, {}, {"Tile", "Tile"}, {}});
  d.target_kinds.push_back(DeclaredTargetKind{"acme",
                                              "an accelerator",
                                              {SchemaField{"cores", "int", Any(int64_t{4}), "cores"}.at_least(1),
                                               {"device", "device", Any(Device{Device::kExtDev, 1}), ""},
                                               {"mode", "str", Any(), "required"}},
                                              {"exp"},
                                              {"all"},
                                              {"intrinsics_lowered"},
                                              "cores",
                                              12});
  d.ops.push_back(DeclaredOp{"acme_gemm", "a gemm", "output_fusable", 2, {{"alpha", "float", Any(1.0), ""}}});
  d.config.push_back(SchemaField{"acme.verbose", "bool", Any(false), "log"});
  return d;
}

std::string fields(const std::vector<SchemaField>& schema) {
  std::string out;
  for (const auto& f : schema)
    out += f.name + ":" + f.type + "=" + f.default_value.describe() + "[" + bounds_text(f) + "];";
  return out;
}
}  // namespace

TEST(Declarations, RoundTripThroughTheirJson) {
  PluginDeclarations d = sample();
  std::string text = write_declarations({"pass:Tile", "target:acme"}, d);
  std::vector<std::string> provides;
  PluginDeclarations back = parse_declarations(text, "p.so", &provides);
  EXPECT_EQ(provides, (std::vector<std::string>{"pass:Tile", "target:acme"}));
  ASSERT_EQ(back.passes.size(), 2u);
  EXPECT_EQ(back.passes[0].name, "Tile");
  EXPECT_EQ(back.passes[0].opt_level, 2);
  EXPECT_EQ(back.passes[0].required, std::vector<std::string>{"InferType"});
  EXPECT_EQ(back.passes[0].needs, std::vector<std::string>{"buffers_flat"});
  EXPECT_EQ(back.passes[0].preserves, std::vector<std::string>{"*"});
  EXPECT_EQ(fields(back.passes[0].options), fields(d.passes[0].options));
  EXPECT_EQ(bounds_text(back.passes[0].options[1]), "one of NHWC, NCHW");
  EXPECT_EQ(bounds_problem(back.passes[0].options[1], Any(std::string("NWHC"))),
            "must be one of NHWC, NCHW, got 'NWHC'; did you mean 'NHWC'?");
  EXPECT_EQ(bounds_problem(back.passes[0].options[1], Any(std::string("NCHW"))), "");
  EXPECT_EQ(back.passes[0].options[0].max, std::optional<int64_t>(4096));
  EXPECT_EQ(back.passes[0].options[1].min, std::nullopt);
  EXPECT_EQ(back.passes[1].sequence, (std::vector<std::string>{"Tile", "Tile"}));
  ASSERT_EQ(back.target_kinds.size(), 1u);
  const DeclaredTargetKind& k = back.target_kinds[0];
  EXPECT_EQ(fields(k.attrs), fields(d.target_kinds[0].attrs));
  EXPECT_EQ(k.threads_attr, "cores");
  EXPECT_EQ(k.device_type, 12);
  EXPECT_EQ(k.default_pipeline, std::vector<std::string>{"all"});
  EXPECT_EQ(k.codegen_needs, std::vector<std::string>{"intrinsics_lowered"});
  EXPECT_EQ(k.native_intrinsics, std::vector<std::string>{"exp"});
  ASSERT_EQ(back.ops.size(), 1u);
  EXPECT_EQ(back.ops[0].num_inputs, 2);
  EXPECT_EQ(back.ops[0].pattern, "output_fusable");
  EXPECT_EQ(fields(back.ops[0].attrs), fields(d.ops[0].attrs));
  EXPECT_EQ(fields(back.config), fields(d.config));
}

TEST(Declarations, AMalformedSectionIsRefusedWithTheReason) {
  auto reason = [](const std::string& text) {
    return plugin_error([&] { parse_declarations(text, "p.so", nullptr); });
  };
  EXPECT_EQ(reason("{"),
            "plugin p.so: malformed .loom_declarations section: .loom_declarations:1:2: unexpected end of "
            "input in an object");
  EXPECT_EQ(reason("[]"), "plugin p.so: malformed .loom_declarations section: the declarations must be a JSON object");
  EXPECT_EQ(
      reason("{\"format\": 2}"),
      "plugin p.so: malformed .loom_declarations section: the declarations have format 2; this core reads format 1");
  std::string good = write_declarations({}, sample());
  std::string bad_type = good;
  bad_type.replace(bad_type.find("\"type\":\"int\""), 12, "\"type\":\"integer\"");
  EXPECT_EQ(reason(bad_type),
            "plugin p.so: malformed .loom_declarations section: pass 'Tile' options, field 'size': "
            "unknown type 'integer' (types: int, float, bool, str, dtype, device, Array, Map, Any)");
  std::string bad_default = good;
  bad_default.replace(bad_default.find("\"default\":32"), 12, "\"default\":\"a\"");
  EXPECT_EQ(reason(bad_default),
            "plugin p.so: malformed .loom_declarations section: pass 'Tile' options, field 'size': "
            "the default: a string is not a value of type int");
  std::string no_passes = good;
  no_passes.replace(no_passes.find("\"passes\""), 8, "\"pases\"");
  EXPECT_EQ(
      reason(no_passes),
      "plugin p.so: malformed .loom_declarations section: the declarations: 'passes' must be an array of objects");
}

TEST(Declarations, EveryInTreePluginProvidesExactlyWhatItsInitRegisters) {
  PluginManager manager({LOOM_BUILD_PLUGIN_DIR});
  for (const std::string name : {"hello", "null", "ref", "ops", "passes", "loop_passes", "llvm", "asm"}) {
    SCOPED_TRACE(name);
    auto record = manager.info(name);
    ASSERT_TRUE(record && record->manifest);
    ASSERT_TRUE(record->manifest->declarations.has_value()) << "built without declarations";
    std::vector<std::string> declared = record->manifest->provides;
    std::sort(declared.begin(), declared.end());
    manager.load(name);
    EXPECT_EQ(declared, capabilities_owned_by(name));
    // And what `loomc plugins declare` would write now is what the file holds.
    std::vector<std::string> provides;
    PluginDeclarations now = parse_declarations(driver::plugin_declarations(name), name, &provides);
    EXPECT_EQ(provides, declared);
    EXPECT_EQ(now.passes.size(), record->manifest->declarations->passes.size());
    EXPECT_EQ(now.ops.size(), record->manifest->declarations->ops.size());
    EXPECT_EQ(now.target_kinds.size(), record->manifest->declarations->target_kinds.size());
  }
}

}  // namespace loom
