// Target traits (docs/configuration.md, "Target traits"): what passes, the
// driver and the runtime ask of a target kind, declared on its registry
// entry -- vector width (AutoSchedule), native intrinsics
// (LowerIntrinsics), the threads attribute (the VM), the device type, the
// default pipeline (a config without passes) and what the codegen needs.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/text/text.h"
#include "loom/runtime/ndarray.h"
#include "loom/target/target.h"
#include "loom/transform/pass.h"
#include "test_util.h"

namespace loom::target {
using test::error_of;

namespace {
// A kind with a vector width of 256 bits and no codegen: what AutoSchedule
// does for it shows that it reads the trait.
void register_wide_kind() {
  if (TargetKindRegistry::entry("test_wide")) return;
  TargetTraits traits;
  traits.vector_bits = [](const Target&) { return int64_t{256}; };
  traits.threads_attr = "threads";
  TargetKindRegistry::register_kind(TargetKindEntry::named("test_wide")
                                        .attrs({{"threads", "int", int64_t{3}, "threads"}})
                                        .doc("a test kind")
                                        .traits(traits));
}

const char* kAdd = R"(
@main = fn(%a: Tensor[(64), float32], %b: Tensor[(64), float32]) { add(%a, %b) }
)";
}  // namespace

TEST(Traits, AutoScheduleTakesTheVectorWidthFromTheTrait) {
  register_wide_kind();
  for (const auto& [kind, lanes] : std::vector<std::pair<std::string, std::string>>{{"test_wide", "8"}, {"ref", "4"}}) {
    config::Config c =
        config::parse_config("target: {kind: " + kind + "}\npipeline: {passes: [O0, AutoSchedule]}\n", kind + ".yaml");
    std::string text = text::print_module(c.pipeline()(c.constrain(text::parse_module(kAdd)), c.context));
    // The innermost loop, split by the vector width in float32 lanes, is vectorized.
    EXPECT_NE(text.find("extent " + lanes + " vectorized"), std::string::npos) << kind << "\n" << text;
  }
  EXPECT_EQ(vector_bits(Target("test_wide")), 256);
  EXPECT_EQ(vector_bits(Target("ref")), 128);  // no trait: 128
  EXPECT_EQ(vector_bits(Target("cpu", Map({{"vector-bits", int64_t{0}}}))), 0);
  EXPECT_EQ(vector_bits(Target("cpu")), detect_vector_bits());
}

TEST(Traits, TheThreadsAttributeSizesTheVMsPool) {
  register_wide_kind();
  EXPECT_EQ(num_threads(Target("test_wide")), 3);
  EXPECT_EQ(num_threads(Target("cpu", Map({{"num-threads", int64_t{2}}}))), 2);
  EXPECT_EQ(
      error_of([] {
        TargetTraits traits;
        traits.threads_attr = "thread";
        TargetKindRegistry::register_kind(
            TargetKindEntry::named("test_bad_threads").attrs({{"threads", "int", int64_t{1}, ""}}).traits(traits));
      }),
      "target kind 'test_bad_threads': its threads attribute 'thread' is not an int attribute of the kind");
  EXPECT_FALSE(TargetKindRegistry::entry("test_bad_threads").has_value());
}

TEST(Traits, LowerIntrinsicsKeepsWhatTheTargetImplements) {
  const char* rsqrt = "@main = fn(%a: Tensor[(4), float32]) { rsqrt(%a) }\n";
  auto lowered = [&](const std::string& kind) {
    config::Config c = config::parse_config("target: {kind: " + kind + "}\npipeline: {passes: [O0, LowerIntrinsics]}\n",
                                            kind + ".yaml");
    return text::print_module(c.pipeline()(c.constrain(text::parse_module(rsqrt)), c.context));
  };
  // ref evaluates rsqrt itself; llvm has no rsqrt, so it is expanded (into
  // sqrt); llvm does implement tanh and erf.
  EXPECT_TRUE(native_intrinsics(Target("ref")).count("rsqrt"));
  EXPECT_FALSE(native_intrinsics(Target("llvm")).count("rsqrt"));
  EXPECT_TRUE(native_intrinsics(Target("llvm")).count("tanh"));
  EXPECT_TRUE(native_intrinsics(Target("llvm")).count("erf"));
  EXPECT_NE(lowered("ref").find("\"rsqrt\""), std::string::npos);
  EXPECT_EQ(lowered("llvm").find("\"rsqrt\""), std::string::npos);
  EXPECT_NE(lowered("llvm").find("\"sqrt\""), std::string::npos);
}

TEST(Traits, TargetIntrinsicsAddWhatSomeTargetsOfTheKindImplement) {
  // A kind whose targets implement tanh natively only with the attribute
  // fast set: LowerIntrinsics keeps it there and expands it elsewhere.
  if (!TargetKindRegistry::entry("test_some_tanh")) {
    TargetTraits traits;
    traits.native_intrinsics = {"exp"};
    traits.target_intrinsics = [](const Target& t) {
      return t->attrs.at("fast").as_int() ? std::set<std::string>{"tanh"} : std::set<std::string>{};
    };
    TargetKindRegistry::register_kind(
        TargetKindEntry::named("test_some_tanh").attrs({{"fast", "int", int64_t{0}, "tanh natively"}}).traits(traits));
  }
  Target fast("test_some_tanh", Map({{"fast", int64_t{1}}})), plain("test_some_tanh");
  EXPECT_EQ(native_intrinsics(fast), (std::set<std::string>{"exp", "tanh"}));
  EXPECT_EQ(native_intrinsics(plain), (std::set<std::string>{"exp"}));
  EXPECT_EQ(native_intrinsics(fast), (std::set<std::string>{"exp", "tanh"}));  // asked again: not the last answer
  auto lowered = [&](int fast_attr) {
    config::Config c = config::parse_config("target: {kind: test_some_tanh, fast: " + std::to_string(fast_attr) +
                                                "}\npipeline: {passes: [O0, LowerIntrinsics]}\n",
                                            "some_tanh.yaml");
    return text::print_module(c.pipeline()(
        c.constrain(text::parse_module("@main = fn(%a: Tensor[(4), float32]) { tanh(%a) }\n")), c.context));
  };
  EXPECT_NE(lowered(1).find("\"tanh\""), std::string::npos);
  EXPECT_EQ(lowered(0).find("\"tanh\""), std::string::npos);
}

TEST(Traits, AConfigWithoutPassesRunsTheTargetsDefaultPipeline) {
  auto names = [](const config::Config& c) {
    std::vector<std::string> out;
    for (const auto& p : c.passes) out.push_back(p.name);
    return out;
  };
  EXPECT_EQ(names(config::parse_config("target: {kind: ref}\n", "r.yaml")), std::vector<std::string>{"cpu"});
  EXPECT_EQ(names(config::parse_config("target: {kind: llvm}\npipeline: {opt-level: 1}\n", "l.yaml")),
            std::vector<std::string>{"cpu_channels_last"});
  EXPECT_EQ(names(config::parse_config("target: {kind: ref}\npipeline: {passes: []}\n", "none.yaml")),
            std::vector<std::string>{});
  EXPECT_EQ(names(config::parse_config("target: {kind: cpu}\n", "cpu.yaml")), std::vector<std::string>{});
  EXPECT_EQ(TargetKindRegistry::get("llvm").traits.default_pipeline, std::vector<std::string>{"cpu_channels_last"});
  // `default` among the passes is the target's default pipeline, whatever the target.
  EXPECT_EQ(
      names(config::parse_config("target: {kind: opencl}\npipeline: {passes: [ConvertLayout, default]}\n", "o.yaml")),
      (std::vector<std::string>{"ConvertLayout", "device"}));
  EXPECT_EQ(names(config::parse_config("target: {kind: ref}\npipeline: {passes: [default]}\n", "r.yaml")),
            std::vector<std::string>{"cpu"});
  EXPECT_EQ(names(config::parse_config("target: {kind: cpu}\npipeline: {passes: [default]}\n", "c.yaml")),
            std::vector<std::string>{});
  // And it runs: a model built from a config that names no pass.
  runtime::Module built =
      driver::build(text::parse_module(kAdd), config::parse_config("target: {kind: ref}\n", "r.yaml"));
  EXPECT_EQ(built->type_key(), "vm");
}

TEST(Traits, TheDriverEstablishesWhatTheCodegenNeedsBeforeGeneratingCode) {
  const char* rsqrt = "@main = fn(%a: Tensor[(4), float32]) { rsqrt(%a) }\n";
  EXPECT_EQ(TargetKindRegistry::get("llvm").traits.codegen_needs, std::vector<std::string>{"intrinsics_lowered"});
  // O0 leaves rsqrt to the target, which does not implement it: the build
  // runs LowerIntrinsics, and the result is right.
  runtime::Module built = driver::build(
      text::parse_module(rsqrt), config::parse_config("target: {kind: llvm}\npipeline: {passes: [O0]}\n", "o0.yaml"));
  runtime::NDArray a = runtime::NDArray::empty({4}, DataType::Float(32));
  for (int i = 0; i < 4; ++i) a.data_as<float>()[i] = 0.5f * static_cast<float>(i) + 0.75f;
  runtime::NDArray y = built.get_function("main")(a).cast<runtime::NDArray>();
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y.data_as<float>()[i], 1 / std::sqrt(a.data_as<float>()[i]), 1e-6) << i;
  // Unless the context disables it.
  EXPECT_EQ(error_of([&] {
              driver::build(
                  text::parse_module(rsqrt),
                  config::parse_config("target: {kind: llvm}\npipeline: {passes: [O0], disabled: [LowerIntrinsics]}\n",
                                       "o0.yaml"));
            }),
            "pass 'the build' needs the property 'intrinsics_lowered' (every intrinsic call in a prim function is one "
            "the module's target implements natively, or a primitive), which does not hold here (@rsqrt calls the "
            "intrinsic 'rsqrt', which target kind 'llvm' does not implement natively); pass 'LowerIntrinsics' "
            "establishes it, but this context disables it: run LowerIntrinsics before the build");
}

}  // namespace loom::target
