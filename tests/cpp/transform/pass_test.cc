// Pass infrastructure: ordering, required/disabled passes, opt levels,
// function passes, config keys, instruments and context scoping.
#include "loom/transform/pass.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "ir/sample_module.h"
#include "loom/graph/function.h"
#include "loom/text/text.h"
#include "loom/object/structural.h"
#include "loom/tir/function.h"
#include "test_util.h"

namespace loom::transform {
using test::error_of;

namespace {
// A module pass that appends its name to the module attribute "log".
Pass logging_pass(const std::string& name, int opt_level = 0, std::vector<std::string> required = {}) {
  return module_pass(PassInfo::named(name).summary("logs its name").opt_level(opt_level).required(std::move(required)),
                     [name](const IRModule& m, const PassContext&) {
                       std::vector<Any> log;
                       if (m->attrs.contains("log")) log = m->attrs.at("log").cast<Array>()->items;
                       log.push_back(name);
                       return m.with_attr("log", Array(log));
                     });
}

std::vector<std::string> log_of(const IRModule& m) {
  std::vector<std::string> out;
  if (m->attrs.contains("log"))
    for (const Any& v : m->attrs.at("log").cast<Array>()) out.push_back(v.as_string());
  return out;
}

IRModule empty_module() { return IRModule::empty(); }

void register_once(const Pass& p) {
  if (!PassRegistry::entry(p.info().name)) PassRegistry::register_pass(p);
}
}  // namespace

TEST(Pass, SequentialRunsInOrder) {
  Pass seq = sequential({logging_pass("a"), logging_pass("b"), logging_pass("c")});
  EXPECT_EQ(log_of(seq(empty_module())), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(Pass, RequiredPassesRunFirstAndOnce) {
  register_once(logging_pass("test.prepare"));
  Pass consumer = logging_pass("test.consumer", 0, {"test.prepare"});
  EXPECT_EQ(log_of(sequential({consumer})(empty_module())),
            (std::vector<std::string>{"test.prepare", "test.consumer"}));
  // Listed explicitly too: still once.
  EXPECT_EQ(log_of(sequential({PassRegistry::get("test.prepare"), consumer})(empty_module())),
            (std::vector<std::string>{"test.prepare", "test.consumer"}));
  // A requirement that is not registered is a clear error.
  EXPECT_EQ(error_of([] { sequential({logging_pass("x", 0, {"test.prepaer"})})(empty_module()); }),
            "no pass named 'test.prepaer' is registered or provided by a plugin; did you mean 'test.prepare'?");
}

TEST(Pass, RequirementCycleIsAnError) {
  register_once(logging_pass("test.cycle_a", 0, {"test.cycle_b"}));
  register_once(logging_pass("test.cycle_b", 0, {"test.cycle_a"}));
  EXPECT_EQ(error_of([] { sequential({PassRegistry::get("test.cycle_a")})(empty_module()); }),
            "passes require each other: test.cycle_a -> test.cycle_b -> test.cycle_a");
}

TEST(Pass, DisabledAndOptLevelGatingWithRequiredOverride) {
  Pass seq = sequential({logging_pass("cheap", 0), logging_pass("costly", 3), logging_pass("optional", 1)});
  PassContext ctx;
  ctx.opt_level = 2;
  ctx.disabled = {"optional"};
  EXPECT_EQ(log_of(seq(empty_module(), ctx)), (std::vector<std::string>{"cheap"}));
  ctx.opt_level = 3;
  EXPECT_EQ(log_of(seq(empty_module(), ctx)), (std::vector<std::string>{"cheap", "costly"}));
  ctx.opt_level = 0;
  ctx.required = {"costly", "optional"};  // required beats both opt level and disabled
  EXPECT_EQ(log_of(seq(empty_module(), ctx)), (std::vector<std::string>{"cheap", "costly", "optional"}));
}

TEST(Pass, FunctionPassTouchesOnlyItsVariant) {
  IRModule mod = test::sample_module();
  int seen = 0;
  Pass rename = function_pass<tir::PrimFuncNode>(
      PassInfo::named("test.tag_prim"), [&](const ir::BaseFunc& f, const IRModule&, const PassContext&) {
        ++seen;
        auto p = downcast<tir::PrimFunc>(f);
        return ir::BaseFunc(tir::PrimFunc(p->params.begin() == p->params.end()
                                              ? std::vector<Any>{}
                                              : std::vector<Any>(p->params.begin(), p->params.end()),
                                          p->body, p->ret, Map({{"tagged", true}})));
      });
  IRModule out = rename(mod, PassContext());
  EXPECT_EQ(seen, 1);
  EXPECT_TRUE(out.lookup("add_one")->attrs.contains("tagged"));
  EXPECT_TRUE(out.lookup("main").same_as(mod.lookup("main")));
  EXPECT_TRUE(out.lookup("fast_relu").same_as(mod.lookup("fast_relu")));
  // A function pass that changes nothing returns the same module.
  Pass identity = function_pass<graph::FunctionNode>(
      PassInfo::named("test.identity"), [](const ir::BaseFunc& f, const IRModule&, const PassContext&) { return f; });
  EXPECT_TRUE(identity(mod, PassContext()).same_as(mod));
}

TEST(PassContext, TypedConfigKeys) {
  if (!ConfigRegistry::entry("test.unroll_max")) {
    ConfigRegistry::register_option(
        SchemaField{"test.unroll_max", "int", int64_t{8}, "max unroll factor"}.between(0, 64));
  }
  PassContext ctx;
  EXPECT_EQ(ctx.get_config("test.unroll_max").as_int(), 8);
  ctx.set_config("test.unroll_max", 16);
  EXPECT_EQ(ctx.get_config("test.unroll_max").as_int(), 16);
  EXPECT_EQ(error_of([&] { ctx.set_config("test.unrol_max", 4); }),
            "unknown config option 'test.unrol_max'; did you mean 'test.unroll_max'?");
  EXPECT_EQ(error_of([&] { ctx.set_config("test.unroll_max", "four"); }),
            "config option 'test.unroll_max' must be int, got str 'four'");
  // Bounds are inclusive; a value outside them is refused and not set.
  ctx.set_config("test.unroll_max", 64);
  EXPECT_EQ(error_of([&] { ctx.set_config("test.unroll_max", 65); }),
            "config option 'test.unroll_max' must be from 0 to 64, got 65");
  EXPECT_EQ(ctx.get_config("test.unroll_max").as_int(), 64);
  EXPECT_EQ(error_of([] {
              ConfigRegistry::register_option(SchemaField{"test.bad_default", "int", int64_t{-1}, ""}.at_least(0));
            }),
            "config option 'test.bad_default': the default of 'test.bad_default' must be at least 0, got -1");
  ctx.set_config("test.unroll_max", 16);
  // Pass options become config keys NAME.OPTION.
  register_once(module_pass(
      PassInfo::named("test.tiler").options({{"tile", "int", int64_t{32}, "tile size"}}),
      [](const IRModule& m, const PassContext& c) { return m.with_attr("tile", c.get_config("test.tiler.tile")); }));
  ctx.set_config("test.tiler.tile", 64);
  EXPECT_EQ(PassRegistry::get("test.tiler")(empty_module(), ctx)->attrs.at("tile").as_int(), 64);
  EXPECT_EQ(ConfigRegistry::entry("test.tiler.tile")->field.doc, "tile size");
}

TEST(PassContext, ScopesNest) {
  EXPECT_EQ(PassContext::current().opt_level, 2);
  PassContext outer;
  outer.opt_level = 3;
  {
    PassContext::Scope a(outer);
    EXPECT_EQ(PassContext::current().opt_level, 3);
    PassContext inner;
    inner.opt_level = 0;
    {
      PassContext::Scope b(inner);
      EXPECT_EQ(PassContext::current().opt_level, 0);
      EXPECT_EQ(log_of(sequential({logging_pass("gated", 1)})(empty_module())), std::vector<std::string>{});
    }
    EXPECT_EQ(PassContext::current().opt_level, 3);
  }
  EXPECT_EQ(PassContext::current().opt_level, 2);
}

TEST(Instruments, TimingDumpAndUserInstruments) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("loom_dump_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto timing = std::make_shared<TimingInstrument>();
  struct Recorder : PassInstrument {
    std::vector<std::string> events;
    std::string name() const override { return "recorder"; }
    bool should_run(const PassInfo& info, const IRModule&) override { return info.name != "skipped"; }
    void before(const PassInfo& info, const IRModule&) override { events.push_back("before " + info.name); }
    void after(const PassInfo& info, const IRModule&) override { events.push_back("after " + info.name); }
  };
  auto recorder = std::make_shared<Recorder>();
  PassContext ctx;
  ctx.instruments = {timing, std::make_shared<DumpIRInstrument>(dir.string()), recorder};
  IRModule out =
      sequential({logging_pass("a"), logging_pass("skipped"), logging_pass("b")}, "pipeline")(empty_module(), ctx);
  EXPECT_EQ(log_of(out), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(recorder->events, (std::vector<std::string>{"before pipeline", "before a", "after a", "before b", "after b",
                                                        "after pipeline"}));
  ASSERT_EQ(timing->rows().size(), 3u);
  EXPECT_EQ(timing->rows()[1].pass, "a");
  EXPECT_NE(timing->report().find("pipeline"), std::string::npos);
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"001_pipeline_before.loom", "001_pipeline_after.loom", "002_a_before.loom",
                                          "002_a_after.loom", "003_b_before.loom", "003_b_after.loom"}));
  // The dumps are modules in the text format.
  std::ifstream in(dir / "003_b_after.loom");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(log_of(text::parse_module(text, "dump")), (std::vector<std::string>{"a", "b"}));
  fs::remove_all(dir);
}

TEST(Instruments, WellFormedCheckIsOnInTests) {
  EXPECT_TRUE(PassContext().check_well_formed);  // LOOM_WELL_FORMED_CHECK=1 under ctest, or a debug build
}

TEST(Instruments, WellFormedCheckNamesTheBreakingPass) {
  Pass breaker = module_pass(PassInfo::named("test.breaker"), [](const IRModule& m, const PassContext&) {
    // Store through an index variable that nothing binds.
    tir::Buffer b("B", DataType::Float(32), {tir::PrimExpr(int64_t{4})});
    tir::Stmt body = tir::BufferStore(b, tir::FloatImm(DataType::Float(32), 0), {tir::Var("ghost", DataType::Int(64))});
    return m.with_function("broken", tir::PrimFunc({b}, body));
  });
  PassContext ctx;
  ctx.check_well_formed = false;
  EXPECT_NO_THROW(breaker(empty_module(), ctx));
  ctx.instruments = {std::make_shared<WellFormedInstrument>()};
  EXPECT_EQ(error_of([&] { breaker(empty_module(), ctx); }),
            "pass 'test.breaker' left the module ill-formed:\n  @broken: variable '%ghost' is used but not bound\n"
            "    in: %ghost");
}

}  // namespace loom::transform
