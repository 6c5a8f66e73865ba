// Pass contracts (docs/passes.md, "Pass contracts"): needs checked against
// what a Sequential tracks, the properties' checks, auto-established
// properties, invalidation by passes that do not preserve, verification of
// declarations, and the messages of each failure.
#include <gtest/gtest.h>

#include "loom/graph/function.h"
#include "loom/text/text.h"
#include "loom/tir/function.h"
#include "loom/transform/pass.h"
#include "loom/transform/property.h"
#include "test_util.h"

namespace loom::transform {
using test::error_of;

namespace {
// test.stamped holds when the module attribute "stamped" is set; the pass
// manager does not establish it.  test.counted is like it and the pass
// manager runs test.Count for it.  test.tracked has no check.
void register_test_properties() {
  static bool done = false;
  if (done) return;
  done = true;
  auto has_attr = [](const std::string& key) -> PropertyCheck {
    return [key](const IRModule& m) -> std::optional<std::string> {
      if (m->attrs.contains(key)) return std::nullopt;
      return "the module has no attribute '" + key + "'";
    };
  };
  PropertyRegistry::register_property(PropertyInfo::named("test.stamped")
                                          .summary("the module is stamped")
                                          .established_by("test.Stamp")
                                          .check(has_attr("stamped")));
  PropertyRegistry::register_property(PropertyInfo::named("test.counted")
                                          .summary("the module is counted")
                                          .established_by("test.Count")
                                          .auto_establish()
                                          .check(has_attr("counted")));
  PropertyRegistry::register_property(
      PropertyInfo::named("test.tracked").summary("the module is tracked").established_by("test.Track"));
  PropertyRegistry::register_property(PropertyInfo::named("test.prims_tracked")
                                          .summary("the prim functions are tracked")
                                          .level("tir")
                                          .established_by("test.TrackPrims"));
}

// A pass that logs its name into the module attribute "log" (so it always
// changes the module) and sets the attributes `sets` / drops `drops`.
Pass pass(const std::string& name, std::vector<std::string> needs, std::vector<std::string> establishes,
          std::vector<std::string> preserves, std::vector<std::string> sets = {}, std::vector<std::string> drops = {}) {
  register_test_properties();
  PassInfo info = PassInfo::named(name)
                      .summary("a test pass")
                      .needs(std::move(needs))
                      .establishes(std::move(establishes))
                      .preserves(std::move(preserves));
  return module_pass(info, [name, sets, drops](const IRModule& m, const PassContext&) {
    std::map<std::string, Any> attrs = m->attrs->items;
    std::vector<Any> log;
    if (attrs.count("log")) log = attrs["log"].cast<Array>()->items;
    log.push_back(name);
    attrs["log"] = Array(log);
    for (const auto& s : sets) attrs[s] = true;
    for (const auto& d : drops) attrs.erase(d);
    return IRModule(std::map<std::string, Any>{}, Map(attrs));
  });
}

std::vector<std::string> log_of(const IRModule& m) {
  std::vector<std::string> out;
  if (m->attrs.contains("log"))
    for (const Any& v : m->attrs.at("log").cast<Array>()) out.push_back(v.as_string());
  return out;
}

void register_once(const Pass& p) {
  if (!PassRegistry::entry(p.info().name)) PassRegistry::register_pass(p);
}

PassContext checking() {
  PassContext ctx;
  ctx.check_well_formed = true;
  return ctx;
}
}  // namespace

TEST(Contract, AMissingPropertyNamesThePassThePropertyAndItsEstablisher) {
  Pass consumer = pass("test.Consumer", {"test.stamped"}, {}, {});
  EXPECT_EQ(error_of([&] { sequential({consumer})(IRModule::empty(), checking()); }),
            "pass 'test.Consumer' needs the property 'test.stamped' (the module is stamped), which does not hold here "
            "(the module has no attribute 'stamped'); pass 'test.Stamp' establishes it: run test.Stamp before "
            "test.Consumer");
  // Run on its own, outside a Sequential, the same check applies.
  EXPECT_EQ(error_of([&] { consumer(IRModule::empty(), checking()); }),
            error_of([&] { sequential({consumer})(IRModule::empty(), checking()); }));
}

TEST(Contract, APropertyThatHoldsIsSeenByItsCheck) {
  // Nothing established it in this pipeline, but the module is stamped.
  IRModule stamped = IRModule::empty().with_attr("stamped", true);
  Pass consumer = pass("test.Consumer", {"test.stamped"}, {}, {});
  EXPECT_EQ(log_of(sequential({consumer})(stamped, checking())), std::vector<std::string>{"test.Consumer"});
}

TEST(Contract, EstablishedPropertiesHoldUntilAPassThatDoesNotKeepThemChangesTheModule) {
  Pass stamp = pass("test.Stamp", {}, {"test.stamped"}, {"*"}, {"stamped"});
  Pass keeper = pass("test.Keeper", {}, {}, {"test.stamped"});
  Pass breaker = pass("test.Breaker", {}, {}, {}, {}, {"stamped"});
  Pass consumer = pass("test.Consumer", {"test.stamped"}, {}, {});
  EXPECT_EQ(log_of(sequential({stamp, keeper, consumer})(IRModule::empty(), checking())),
            (std::vector<std::string>{"test.Stamp", "test.Keeper", "test.Consumer"}));
  EXPECT_EQ(error_of([&] {
              sequential({stamp, breaker, consumer})(IRModule::empty(), checking());
            }),
            "pass 'test.Consumer' needs the property 'test.stamped' (the module is stamped), which does not hold here "
            "(the module has no attribute 'stamped'); pass 'test.Breaker' changed the module and does not keep it; "
            "pass 'test.Stamp' establishes it: run test.Stamp before test.Consumer");
}

TEST(Contract, ADeclarationThatIsNotTrueFailsAtThePassThatMadeIt) {
  Pass stamp = pass("test.Stamp", {}, {"test.stamped"}, {"*"}, {"stamped"});
  Pass liar = pass("test.Liar", {}, {}, {"test.stamped"}, {}, {"stamped"});  // keeps it, it says
  EXPECT_EQ(error_of([&] {
              sequential({stamp, liar})(IRModule::empty(), checking());
            }),
            "pass 'test.Liar' declares that 'test.stamped' holds after it (preserves), but it does not: the module has "
            "no attribute 'stamped'");
  Pass fake_stamp = pass("test.FakeStamp", {}, {"test.stamped"}, {});
  EXPECT_EQ(error_of([&] { fake_stamp(IRModule::empty(), checking()); }),
            "pass 'test.FakeStamp' declares that 'test.stamped' holds after it (establishes), but it does not: the "
            "module has no attribute 'stamped'");
  // Without the checks (release builds outside the tests) the declaration is trusted.
  PassContext trusting;
  trusting.check_well_formed = false;
  EXPECT_EQ(log_of(sequential({stamp, liar})(IRModule::empty(), trusting)),
            (std::vector<std::string>{"test.Stamp", "test.Liar"}));
}

TEST(Contract, TheManagerRunsTheEstablishingPassWhenThePropertyAllowsIt) {
  register_once(pass("test.Count", {}, {"test.counted"}, {"*"}, {"counted"}));
  Pass consumer = pass("test.CountConsumer", {"test.counted"}, {}, {"test.counted"});
  Pass second = pass("test.SecondConsumer", {"test.counted"}, {}, {});
  // Once, then known to hold (CountConsumer keeps it).
  EXPECT_EQ(log_of(sequential({consumer, second})(IRModule::empty(), checking())),
            (std::vector<std::string>{"test.Count", "test.CountConsumer", "test.SecondConsumer"}));
  PassContext ctx = checking();
  ctx.disabled = {"test.Count"};
  EXPECT_EQ(error_of([&] { sequential({consumer})(IRModule::empty(), ctx); }),
            "pass 'test.CountConsumer' needs the property 'test.counted' (the module is counted), which does not hold "
            "here (the module has no attribute 'counted'); pass 'test.Count' establishes it, but this context disables "
            "it: run test.Count before test.CountConsumer");
}

TEST(Contract, APropertyWithoutACheckIsOnlyTracked) {
  Pass track = pass("test.Track", {}, {"test.tracked"}, {"*"});
  Pass changer = pass("test.Changer", {}, {}, {});
  Pass needs = pass("test.NeedsTracked", {"test.tracked"}, {}, {});
  EXPECT_EQ(log_of(sequential({track, needs})(IRModule::empty(), checking())),
            (std::vector<std::string>{"test.Track", "test.NeedsTracked"}));
  EXPECT_EQ(error_of([&] {
              sequential({track, changer, needs})(IRModule::empty(), checking());
            }),
            "pass 'test.NeedsTracked' needs the property 'test.tracked' (the module is tracked), which does not hold "
            "here; pass 'test.Changer' changed the module and does not keep it; pass 'test.Track' establishes it: run "
            "test.Track before test.NeedsTracked");
}

TEST(Contract, ANestedSequenceSharesWhatIsKnown) {
  Pass track = pass("test.Track", {}, {"test.tracked"}, {"*"});
  Pass needs = pass("test.NeedsTracked", {"test.tracked"}, {}, {"*"});
  // Established inside, needed outside; established outside, needed inside.
  EXPECT_EQ(log_of(sequential({sequential({track}, "inner"), needs})(IRModule::empty(), checking())),
            (std::vector<std::string>{"test.Track", "test.NeedsTracked"}));
  EXPECT_EQ(log_of(sequential({track, sequential({needs}, "inner")})(IRModule::empty(), checking())),
            (std::vector<std::string>{"test.Track", "test.NeedsTracked"}));
  // A pipeline looks its passes up by name when it runs.
  register_once(track);
  register_once(needs);
  EXPECT_EQ(log_of(pipeline(PassInfo::named("test.pipeline").summary("a test pipeline"),
                            {"test.Track", "test.NeedsTracked"})(IRModule::empty(), checking())),
            (std::vector<std::string>{"test.Track", "test.NeedsTracked"}));
}

TEST(Contract, AnUnknownPropertyIsRefusedWhenThePassIsDeclared) {
  register_test_properties();
  EXPECT_EQ(error_of([] { pass("test.Typo", {"test.stampd"}, {}, {}); }),
            "pass 'test.Typo': no IR property named 'test.stampd' is registered or provided by a plugin; did you mean "
            "'test.stamped'?");
  EXPECT_EQ(error_of([] { pass("test.Typo", {}, {}, {"types_infered"}); }),
            "pass 'test.Typo': no IR property named 'types_infered' is registered or provided by a plugin; did you "
            "mean 'types_inferred'?");
}

TEST(Contract, TheCoreDeclaresItsPropertiesAndInferTypesContract) {
  for (const char* name : {"types_inferred", "ops_lowered", "fused", "buffers_flat", "intrinsics_lowered"}) {
    EXPECT_TRUE(PropertyRegistry::entry(name).has_value()) << name;
  }
  EXPECT_EQ(PropertyRegistry::get("types_inferred").established_by, "InferType");
  EXPECT_TRUE(PropertyRegistry::get("types_inferred").auto_establish);
  EXPECT_FALSE(PropertyRegistry::get("buffers_flat").auto_establish);
  const PassInfo& info = PassRegistry::get("InferType").info();
  EXPECT_EQ(info.establishes, std::vector<std::string>{"types_inferred"});
  EXPECT_EQ(info.preserves, std::vector<std::string>{"*"});
}

namespace {
// A module with a graph function @main and a prim function @f.
IRModule graph_and_prim() {
  return text::parse_module(R"(
@f = prim_func(%X: Buffer[(4), float32], %Y: Buffer[(4), float32]) {
  for %i: int64 from 0 extent 4 {
    %Y[%i] = %X[%i] * 2.0;
  }
}
@main = fn(%x: Tensor[(4), float32]) -> Tensor[(4), float32] { %x }
)");
}

// A pass that changes @main or @f (a copy with an attribute), declaring
// the levels it changes.
Pass touching(const std::string& name, const std::string& function, std::vector<std::string> changes,
              std::vector<std::string> needs = {}) {
  register_test_properties();
  return module_pass(
      PassInfo::named(name).needs(std::move(needs)).changes(std::move(changes)),
      [function](const IRModule& m, const PassContext&) {
        ir::BaseFunc f = m.lookup(function);
        if (const auto* p = f.as<tir::PrimFuncNode>()) {
          return m.with_function(function, tir::PrimFunc(std::vector<Any>(p->params.begin(), p->params.end()), p->body,
                                                         p->ret, Map({{"touched", true}})));
        }
        const auto* g = f.as<graph::FunctionNode>();
        std::vector<graph::Var> params;
        for (const Any& v : g->params) params.push_back(v.cast<graph::Var>());
        return m.with_function(function, graph::Function(params, g->body, g->ret_type, Map({{"touched", true}})));
      });
}
}  // namespace

TEST(Contract, APassKeepsThePropertiesOfTheLevelsItDoesNotChange) {
  register_test_properties();
  Pass track = module_pass(PassInfo::named("test.TrackPrims").establishes({"test.prims_tracked"}),
                           [](const IRModule& m, const PassContext&) { return m; });
  Pass graph_only = touching("test.GraphOnly", "main", {"graph"});
  Pass needer = touching("test.NeedsPrims", "main", {"graph"}, {"test.prims_tracked"});
  IRModule out = sequential({track, graph_only, needer})(graph_and_prim(), checking());
  EXPECT_TRUE(out.lookup("main")->attrs.contains("touched"));
  // The same pass without `changes` may have changed the prim functions.
  Pass any_level = touching("test.AnyLevel", "main", {});
  EXPECT_EQ(error_of([&] {
              sequential({track, any_level, needer})(graph_and_prim(), checking());
            }),
            "pass 'test.NeedsPrims' needs the property 'test.prims_tracked' (the prim functions are tracked), which "
            "does not hold here; pass 'test.AnyLevel' changed the module and does not keep it; pass "
            "'test.TrackPrims' establishes it: run test.TrackPrims before test.NeedsPrims");
  // A tir pass keeps the graph-level properties (types_inferred here).
  EXPECT_EQ(PropertyRegistry::get(property::kTypesInferred).level, "graph");
  EXPECT_EQ(PropertyRegistry::get(property::kBuffersFlat).level, "tir");
}

TEST(Contract, APassThatChangesALevelItDidNotDeclareFails) {
  Pass liar = touching("test.SaysGraphOnly", "f", {"graph"});
  EXPECT_EQ(error_of([&] { liar(graph_and_prim(), checking()); }),
            "pass 'test.SaysGraphOnly' declares that it changes only graph functions, but it changed the tir "
            "function @f");
  Pass honest = touching("test.SaysTir", "f", {"tir"});
  EXPECT_TRUE(honest(graph_and_prim(), checking()).lookup("f")->attrs.contains("touched"));
}

}  // namespace loom::transform
