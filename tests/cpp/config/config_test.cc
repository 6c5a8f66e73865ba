// YAML configs: the malformed-config corpus, host.yaml, a cpu-kind config, C0/C1 separation.
#include "loom/config/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "ir/sample_module.h"
#include "loom/graph/function.h"
#include "loom/text/text.h"
#include "loom/object/structural.h"
#include "loom/plugin/manager.h"
#include "loom/support/strings.h"
#include "loom/tir/function.h"
#include "test_util.h"

namespace loom::config {
using test::error_of;

// Every tests/fixtures/config/errors/*.yaml starts with "# expect-error:
// LINE:COL: MESSAGE"; loading it must fail with that message (a message
// naming machine-specific paths may continue after it), then the line and
// a caret.
TEST(Config, MalformedConfigsGiveTheirExpectedErrors) {
  auto files = test::expected_error_files(std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/config/errors");
  ASSERT_GE(files.size(), 15u);
  for (const auto& file : files) {
    try {
      parse_config(file.text, file.name);
      ADD_FAILURE() << file.name << " loaded without error";
    } catch (const ParseError& e) {
      std::string first = std::string(e.what()).substr(0, std::string(e.what()).find('\n'));
      EXPECT_EQ(first.substr(0, file.expected.size()), file.expected) << file.name;
      EXPECT_NE(std::string(e.what()).find("\n  "), std::string::npos) << "no source line in: " << e.what();
    }
  }
}

TEST(Config, HostPresetLoads) {
  Config host = load_config(std::string(LOOM_SOURCE_DIR) + "/configs/host.yaml");
  EXPECT_EQ(host.target->kind, "llvm");
  EXPECT_EQ(host.target.attr("mcpu").as_string(), "native");
  ASSERT_EQ(host.passes.size(), 1u);
  EXPECT_EQ(host.passes[0].name, "cpu_channels_last");  // `default`: llvm's
  EXPECT_TRUE(host.warnings.empty()) << host.warnings[0];
}

TEST(Config, CpuKindConfigLoads) {
  Config c = load_config(std::string(LOOM_SOURCE_DIR) + "/tests/fixtures/config/cpu_infer_type.yaml");
  EXPECT_EQ(c.target->kind, "cpu");
  EXPECT_EQ(c.target.attr("mcpu").as_string(), "native");
  EXPECT_EQ(c.context.opt_level, 2);
  ASSERT_EQ(c.passes.size(), 1u);
  EXPECT_EQ(c.passes[0].name, "InferType");
  EXPECT_TRUE(c.context.get_config("tir.vectorize").as_bool());
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
}

TEST(Config, TargetGoesIntoTheModuleOptionsDoNot) {
  Config c = parse_config(
      "target:\n  kind: cpu\n  num-threads: 4\n  host: {kind: cpu}\n  device-placement:\n    add_one: cpu:0\n"
      "pipeline:\n  opt-level: 3\n  passes: [InferType]\n  config: {tir.vectorize: false}\n",
      "c.yaml");
  ir::IRModule mod = c.constrain(test::sample_module());
  auto target = mod->attrs.at("target").cast<target::Target>();
  EXPECT_EQ(target.attr("num-threads").as_int(), 4);
  EXPECT_EQ(mod->attrs.at("host").cast<target::Target>()->kind, "cpu");
  EXPECT_EQ(mod->attrs.at("device_placement").cast<Map>().at("add_one").as_device().to_string(), "cpu:0");
  // C0 stays in the context: nothing about opt level or vectorization in the module.
  EXPECT_EQ(mod->attrs.size(), 3u);
  EXPECT_EQ(c.context.opt_level, 3);
  EXPECT_FALSE(c.context.get_config("tir.vectorize").as_bool());
  // The constraints survive the text format.
  EXPECT_TRUE(structural_equal(text::parse_module(text::print_module(mod), "m"), mod));
  // A placement naming a missing function is an error with a suggestion.
  Config bad = parse_config("target:\n  kind: cpu\n  device-placement: {add_on: cpu}\n", "c.yaml");
  EXPECT_EQ(error_of([&] { bad.constrain(test::sample_module()); }),
            "c.yaml:3:22: device-placement names @add_on, which the module does not define; did you mean 'add_one'?");
}

TEST(Config, ConstraintBeatsContradictingOption) {
  Config c = parse_config("target:\n  kind: cpu\n  vector-bits: 0\npipeline:\n  config:\n    tir.vectorize: true\n",
                          "scalar.yaml");
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(
      c.warnings[0],
      "scalar.yaml:6:5: warning: pipeline config 'tir.vectorize: true' contradicts the target 'cpu', which has no "
      "vector unit; the target wins and loops are not vectorized");
  EXPECT_FALSE(c.context.get_config("tir.vectorize").as_bool());
  // Without the explicit option, no warning.
  EXPECT_TRUE(parse_config("target:\n  kind: cpu\n  vector-bits: 0\n", "s.yaml").warnings.empty());
}

TEST(Config, PipelineRunsPassesWithOptionsAndDisabled) {
  if (!transform::PassRegistry::entry("test.stamp")) {
    transform::PassRegistry::register_pass(transform::module_pass(
        transform::PassInfo::named("test.stamp").options({{"label", "str", "none", "what to stamp"}}),
        [](const ir::IRModule& m, const transform::PassContext& ctx) {
          return m.with_attr("stamp", ctx.get_config("test.stamp.label"));
        }));
  }
  Config c = parse_config(
      "target: {kind: cpu}\npipeline:\n  passes:\n    - InferType\n    - name: test.stamp\n      options: {label: "
      "hi}\n",
      "p.yaml");
  ir::IRModule out = c.pipeline()(c.constrain(test::sample_module()), c.context);
  EXPECT_EQ(out->attrs.at("stamp").as_string(), "hi");
  EXPECT_TRUE(downcast<graph::Function>(out.lookup("main"))->ret_type.defined());  // InferType ran
  Config off =
      parse_config("target: {kind: cpu}\npipeline:\n  passes: [test.stamp]\n  disabled: [test.stamp]\n", "p.yaml");
  EXPECT_FALSE(off.pipeline()(test::sample_module(), off.context)->attrs.contains("stamp"));
}

TEST(Config, PluginTargetKindLoadsOnFirstUse) {
  EXPECT_EQ(PluginManager::global().info("null")->state, PluginState::kDiscovered);
  Config c = parse_config("target:\n  kind: null_target\npipeline:\n  config: {tir.vectorize: true}\n", "n.yaml");
  EXPECT_EQ(PluginManager::global().info("null")->state, PluginState::kLoaded);
  EXPECT_EQ(target::TargetKindRegistry::entry("null_target")->owner, "null");
  EXPECT_EQ(c.target.attr("vector-bits").as_int(), 0);
  ASSERT_EQ(c.warnings.size(), 1u);  // the null target has no vector unit: the constraint wins
  EXPECT_FALSE(c.context.get_config("tir.vectorize").as_bool());
  EXPECT_TRUE(starts_with(error_of([] { parse_config("target:\n  kind: null_target\n  vector-bit: 0\n", "n.yaml"); }),
                          "n.yaml:3:3: target kind 'null_target' has no attribute 'vector-bit'; did you mean "
                          "'vector-bits'?"));
  // YAML reads a bare null as no value; the message says so.
  EXPECT_TRUE(starts_with(error_of([] { parse_config("target:\n  kind: null\n", "n.yaml"); }),
                          "n.yaml:2:9: kind must be a single value, got null (YAML reads null, ~ and an empty value as "
                          "no value; quote text: \"null\")"));
}

TEST(Config, TagsArePresets) {
  target::TargetTagRegistry::register_tag(
      target::TargetTag{"test.scalar_cpu", "cpu", Map({{"vector-bits", int64_t{0}}}), "a CPU without vectors", ""});
  Config c = parse_config("target:\n  tag: test.scalar_cpu\n  num-threads: 2\n", "t.yaml");
  EXPECT_EQ(c.target->kind, "cpu");
  EXPECT_EQ(c.target.attr("vector-bits").as_int(), 0);
  EXPECT_EQ(c.target.attr("num-threads").as_int(), 2);
  EXPECT_TRUE(starts_with(error_of([] { parse_config("target:\n  tag: test.scalar_cpux\n", "t.yaml"); }),
                          "t.yaml:2:8: no target tag named 'test.scalar_cpux' is registered or provided by a plugin; "
                          "did you mean 'test.scalar_cpu'?"));
  // A tag must make a valid target.
  EXPECT_NE(error_of([] {
              target::TargetTagRegistry::register_tag(
                  target::TargetTag{"test.bad", "cpu", Map({{"vector-bits", int64_t{3}}}), "", ""});
            }).find("vector-bits must be"),
            std::string::npos);
}

}  // namespace loom::config
