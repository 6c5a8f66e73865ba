// The schedule primitives: each one's result runs to the same numbers as
// the unscheduled function (the reference interpreter), and each refusal
// names the primitive and the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "loom/driver/build.h"
#include "loom/text/text.h"
#include "loom/object/structural.h"
#include "loom/object/traversal.h"
#include "loom/runtime/ndarray.h"
#include "loom/target/target.h"
#include "loom/tir/layout.h"
#include "loom/schedule/schedule.h"
#include "loom/tir/util.h"
#include "test_util.h"

namespace loom {
using runtime::NDArray;
using test::error_of;

namespace {
const char* kModule = R"(
@mm = prim_func(%A: Buffer[(6, 5), float32], %W: Buffer[(10, 5), float32], %B: Buffer[(10), float32], %Out: Buffer[(6, 10), float32]) {
  alloc %acc: Buffer[(6, 10), float32] {
    for %i: int64 from 0 extent 6 {
      for %j: int64 from 0 extent 10 {
        %acc[%i, %j] = 0.0;
        for %k: int64 from 0 extent 5 {
          %acc[%i, %j] = %acc[%i, %j] + %A[%i, %k] * %W[%j, %k];
        }
      }
    }
    alloc %biased: Buffer[(6, 10), float32] {
      for %i2: int64 from 0 extent 6 {
        for %j2: int64 from 0 extent 10 {
          %biased[%i2, %j2] = %acc[%i2, %j2] + %B[%j2];
        }
      }
      for %i3: int64 from 0 extent 6 {
        for %j3: int64 from 0 extent 10 {
          %Out[%i3, %j3] = max(%biased[%i3, %j3], 0.0);
        }
      }
    }
  }
}
)";

tir::PrimFunc original() { return downcast<tir::PrimFunc>(text::parse_module(kModule, "mm.loom").lookup("mm")); }

NDArray floats(std::vector<int64_t> shape, uint32_t seed) {
  NDArray a = NDArray::empty(shape, DataType::Float(32));
  std::vector<float> v = test::random_floats(a->numel(), seed, -1, 1);
  std::memcpy(a.data_as<float>(), v.data(), v.size() * sizeof(float));
  return a;
}

std::vector<float> run(const tir::PrimFunc& f) {
  ir::IRModule m = text::parse_module(kModule, "mm.loom").with_function("mm", f);
  NDArray out = NDArray::empty({6, 10}, DataType::Float(32));
  driver::build_kernels(m, target::Target("ref"))
      .get_function("mm")(floats({6, 5}, 1), floats({10, 5}, 2), floats({10}, 3), out);
  return std::vector<float>(out.data_as<float>(), out.data_as<float>() + 60);
}
}  // namespace

TEST(Schedule, EveryPrimitiveKeepsTheNumbers) {
  std::vector<float> want = run(original());
  tir::Schedule s(original());
  s.compute_inline("biased");
  s.reverse_compute_inline("acc");
  s.cache_read("W", {1, 0});
  auto [io, ii] = s.split("i", 3);
  auto [jo, ji] = s.split("j", 5);
  s.reorder({io, jo, ii, ji});
  auto nests = s.decompose_reduction(io);
  ASSERT_EQ(nests.size(), 3u);
  std::string fused = s.fuse(nests[1][0], nests[1][1]);
  s.parallel(fused);
  s.unroll(nests[1][3]);
  auto [po, pi] = s.split(nests[2][3], 4);  // 5 = 4 + 1: a guard
  s.vectorize(pi);
  std::string text = ir::to_text(Any(s.func()));
  EXPECT_NE(text.find("parallel"), std::string::npos) << text;
  EXPECT_EQ(text.find("%biased"), std::string::npos) << text;
  EXPECT_EQ(run(s.func()), want) << text;
  auto tiles = tir::Schedule(original()).tile("i", "j", 2, 5);
  EXPECT_EQ(tiles, (std::vector<std::string>{"i_o", "j_o", "i_i", "j_i"}));
}

// A schedule records its trace: each primitive that succeeded (tile as its
// splits and reorder, a layout as its text), none that failed; replaying
// the trace on the function gives the same function, and a step that no
// longer applies is a ScheduleError naming the step.
TEST(Schedule, TraceRecordsThePrimitivesAndReplaysToTheSameFunction) {
  tir::Schedule s(original());
  s.compute_inline("biased");
  std::string w = s.cache_read("W", [](const std::vector<tir::PrimExpr>& v) {
    tir::PrimExpr four = tir::IntImm(DataType::Int(64), 4);
    return std::vector<tir::PrimExpr>{tir::FloorDiv(v[0], four), v[1], tir::FloorMod(v[0], four)};
  });
  EXPECT_THROW(s.split("nope", 2), ScheduleError);
  s.tile("i", "j", 2, 5);
  s.transform_layout("A", [](const std::vector<tir::PrimExpr>& v) { return std::vector<tir::PrimExpr>{v[1], v[0]}; });
  auto rf = s.rfactor("k");
  s.vectorize(rf.init);
  s.parallel("i_o");
  EXPECT_EQ(s.trace_json(),
            "[[\"compute_inline\", \"biased\"], [\"cache_read\", \"W\", \"0 // 4, 1, 0 % 4\", \"global\"], "
            "[\"split\", \"i\", 2], [\"split\", \"j\", 5], [\"reorder\", [\"i_o\", \"j_o\", \"i_i\", \"j_i\"]], "
            "[\"transform_layout\", \"A\", \"1, 0\"], [\"rfactor\", \"k\"], [\"vectorize\", \"k_init\"], "
            "[\"parallel\", \"i_o\"]]");
  tir::Schedule again = tir::Schedule::replay(original(), s.trace_json());
  EXPECT_TRUE(structural_equal(Any(again.func()), Any(s.func()))) << ir::to_text(Any(again.func())) << "\nvs\n"
                                                                  << ir::to_text(Any(s.func()));
  EXPECT_EQ(again.trace_json(), s.trace_json());

  std::string e = error_of([] { tir::Schedule::replay(original(), R"([["split", "i", 2], ["split", "i", 3]])"); });
  EXPECT_NE(e.find("step 2 of the trace: schedule.split: no loop %i"), std::string::npos) << e;
  EXPECT_NE(e.find("no loop %i"), std::string::npos) << e;
  e = error_of([] { tir::Schedule::replay(original(), R"([["splt", "i", 2]])"); });
  EXPECT_NE(e.find("'splt' is not a schedule primitive; did you mean 'split'?"), std::string::npos) << e;
  e = error_of([] { tir::Schedule::replay(original(), R"([["split", "i"]])"); });
  EXPECT_NE(e.find("split takes 2 arguments in a trace, got 1"), std::string::npos) << e;
  e = error_of([] { tir::Schedule::replay(original(), R"([["split", "i", "2"]])"); });
  EXPECT_NE(e.find("argument 2 must be an integer"), std::string::npos) << e;
  e = error_of([] { tir::Schedule::replay(original(), R"([["cache_read", "W", "0 // 0, 1", "global"]])"); });
  EXPECT_NE(e.find("step 1 of the trace"), std::string::npos) << e;
  EXPECT_THROW(tir::Schedule::replay(original(), "[[\"split\""), ParseError);
}

// A split that does not divide leaves a guard around the nest's sequence;
// decompose_reduction gives each new nest the guard (inside the reduction
// loop, so k still moves outside the tile).
TEST(Schedule, BuffersOfOneNameGetUniqueNamesSoPrimitivesActOnTheRightOne) {
  // The bias renamed "W" like the weight (builders and fusion make such
  // functions: a fused group's lifted weights are all "c").
  Mutator rename;
  rename.on<tir::BufferNode>([](const tir::BufferNode* b, const ObjectRef& self) -> Any {
    if (b->name != "B") return Any(self);
    return Any(tir::Buffer("W", b->dtype, {b->shape[0].cast<tir::PrimExpr>()}));
  });
  tir::PrimFunc f = rename.mutate_as<tir::PrimFunc>(original());
  tir::Schedule s(f);
  std::vector<std::string> names;
  for (const Any& p : s.func()->params) names.push_back(p.cast<tir::Buffer>()->name);
  EXPECT_EQ(names, (std::vector<std::string>{"A", "W", "W_1", "Out"}));
  // "W" is the 2-D weight: a 2-D layout applies (read past the end of the
  // bias's one dimension before).
  s.cache_read("W", [](const std::vector<tir::PrimExpr>& v) {
    EXPECT_EQ(v.size(), 2u);
    return std::vector<tir::PrimExpr>{v[1], v[0]};
  });
  EXPECT_EQ(run(s.func()), run(original()));
}

TEST(Schedule, DecomposeReductionCarriesASplitsGuard) {
  std::vector<float> want = run(original());
  tir::Schedule s(original());
  s.compute_inline("biased");
  s.reverse_compute_inline("acc");
  auto [jo, ji] = s.split("j", 4);  // 10 = 4 + 4 + 2
  auto nests = s.decompose_reduction(ji);
  ASSERT_EQ(nests.size(), 3u);
  s.reorder({"k", nests[1][0]});
  s.vectorize(nests[1][0]);
  std::string text = ir::to_text(Any(s.func()));
  size_t guards = 0;
  for (size_t at = text.find("if %j_o * 4 + "); at != std::string::npos; at = text.find("if %j_o * 4 + ", at + 1))
    ++guards;
  EXPECT_EQ(guards, 3u) << text;
  EXPECT_NE(
      text.find(
          "for %k: int64 from 0 extent 5 {\n          for %j_i: int64 from 0 extent 4 vectorized {\n            if "),
      std::string::npos)
      << text;
  EXPECT_EQ(run(s.func()), want) << text;

  // Rows and columns both split with a guard (6 = 4 + 2, 10 = 4 + 4 + 2):
  // the two guards go together with each part.
  tir::Schedule both(original());
  both.compute_inline("biased");
  both.reverse_compute_inline("acc");
  auto [io, ii] = both.split("i", 4);
  auto [jo2, ji2] = both.split("j", 4);
  both.reorder({io, jo2, ii, ji2});
  EXPECT_EQ(both.decompose_reduction(ii).size(), 3u);
  text = ir::to_text(Any(both.func()));
  EXPECT_NE(text.find("if %j_o * 4 + %j_i_init < 10 && %i_o * 4 + %i_i_init < 6 {"), std::string::npos) << text;
  EXPECT_EQ(run(both.func()), want) << text;
}

TEST(Schedule, PackingCacheWriteAndComputeAtKeepTheNumbers) {
  std::vector<float> want = run(original());
  tir::Schedule s(original());
  s.compute_inline("biased");
  // W[10, 5] packed into panels of 4 rows: (j, k) -> (j // 4, k, j % 4),
  // the last panel padded.
  std::string w = s.cache_read("W", [](const std::vector<tir::PrimExpr>& v) {
    tir::PrimExpr four = tir::IntImm(DataType::Int(64), 4);
    return std::vector<tir::PrimExpr>{tir::FloorDiv(v[0], four), v[1], tir::FloorMod(v[0], four)};
  });
  EXPECT_EQ(w, "W_local");
  // The accumulator goes to a local copy written out once per element.
  std::string local = s.cache_write("acc");
  EXPECT_EQ(local, "acc_local");
  s.reverse_compute_inline(local);
  // Each j copies only the part of the panel it reads: the copy's loops
  // over panels and lanes cut to the one value each, j // 4 and j % 4.
  s.compute_at("c0", "j");
  std::string text = ir::to_text(Any(s.func()));
  EXPECT_NE(text.find("alloc %W_local: Buffer[(3, 5, 4), float32]"), std::string::npos) << text;
  EXPECT_NE(text.find("extent 10 {\n            for %c1: int64 from 0 extent 5 {"), std::string::npos) << text;
  EXPECT_NE(text.find("%W_local[%j // 4, %c1, %j % 4] = %W[%j, %c1]"), std::string::npos) << text;
  EXPECT_NE(text.find("%acc[%i, %j] = %acc_local[%i, %j]"), std::string::npos) << text;
  EXPECT_EQ(run(s.func()), want) << text;

  // A producer nest computed per row of its reader.
  tir::Schedule rows(original());
  rows.compute_at("i2", "i3");
  text = ir::to_text(Any(rows.func()));
  EXPECT_NE(
      text.find(
          "for %i3: int64 from 0 extent 6 {\n        for %j2: int64 from 0 extent 10 {\n          %biased[%i3, %j2]"),
      std::string::npos)
      << text;
  EXPECT_EQ(run(rows.func()), want) << text;
}

// A batch matmul with a batch axis of 1 (GPT attention's (1, heads, n, n)
// as (1, 6, 5) here): the copy cache_read makes of the right operand
// stores at a constant 0 along that axis, its loop of extent 1 simplified
// away; compute_at puts the loop back and moves the copy into the column
// loop, where it refused before ("not at distinct loop variables") and
// AutoSchedule left such matmuls untiled.
TEST(Schedule, ComputeAtTakesACopyWhoseUnitAxisLostItsLoop) {
  const char* batched = R"(
@bmm = prim_func(%A: Buffer[(1, 6, 5), float32], %W: Buffer[(1, 5, 8), float32], %Out: Buffer[(1, 6, 8), float32]) {
  for %b: int64 from 0 extent 1 {
    for %i: int64 from 0 extent 6 {
      for %j: int64 from 0 extent 8 {
        %Out[%b, %i, %j] = 0.0;
        for %k: int64 from 0 extent 5 {
          %Out[%b, %i, %j] = %Out[%b, %i, %j] + %A[0, %i, %k] * %W[0, %k, %j];
        }
      }
    }
  }
}
)";
  ir::IRModule m = text::parse_module(batched, "bmm.loom");
  auto func = downcast<tir::PrimFunc>(m.lookup("bmm"));
  auto run_bmm = [&](const tir::PrimFunc& f) {
    NDArray out = NDArray::empty({1, 6, 8}, DataType::Float(32));
    driver::build_kernels(m.with_function("bmm", f), target::Target("ref"))
        .get_function("bmm")(floats({1, 6, 5}, 4), floats({1, 5, 8}, 5), out);
    return std::vector<float>(out.data_as<float>(), out.data_as<float>() + 48);
  };
  tir::Schedule s(func);
  // Panels of 4 columns: (b, k, j) -> (b, j // 4, k, j % 4).
  std::string w = s.cache_read("W", [](const std::vector<tir::PrimExpr>& v) {
    tir::PrimExpr four = tir::IntImm(DataType::Int(64), 4);
    return std::vector<tir::PrimExpr>{v[0], tir::FloorDiv(v[2], four), v[1], tir::FloorMod(v[2], four)};
  });
  std::string text = ir::to_text(Any(s.func()));
  EXPECT_NE(text.find("%W_local[0, %c1, %c2, %c3] = %W[0, %c2, %c1 * 4 + %c3]"), std::string::npos) << text;
  s.compute_at("c1", "j");
  text = ir::to_text(Any(s.func()));
  // Inside j, the copy of the one value of the panel it reads per k.
  EXPECT_NE(text.find("extent 8 {\n          for %c2: int64 from 0 extent 5 {\n            "
                      "%W_local[0, %j // 4, %c2, %j % 4] = %W[0, %c2, %j]"),
            std::string::npos)
      << text;
  EXPECT_EQ(run_bmm(s.func()), run_bmm(func)) << text;
  EXPECT_TRUE(structural_equal(Any(tir::Schedule::replay(func, s.trace_json()).func()), Any(s.func())));
}

// allocate_at: a tile's accumulator, used only inside the tile loop, is
// allocated there and holds one tile (indices from the tile's start); the
// numbers stay.  Where a value could pass between iterations, or the
// buffer is used outside the loop, it is refused.
TEST(Schedule, AllocateAtGivesEachTileItsOwnAccumulator) {
  std::vector<float> want = run(original());
  tir::Schedule s(original());
  s.compute_inline("biased");
  s.reverse_compute_inline("acc");  // the epilogue moves into the accumulator's nest
  std::string outside = error_of([&] { tir::Schedule(original()).allocate_at("acc", "i"); });
  EXPECT_NE(outside.find("schedule.allocate_at: 'acc' is used outside %i"), std::string::npos) << outside;
  auto [io, ii] = s.split("i", 3);
  auto [jo, ji] = s.split("j", 5);
  s.reorder({io, jo, ii, ji});
  s.decompose_reduction(ii);
  s.allocate_at("acc", jo);
  std::string text = ir::to_text(Any(s.func()));
  EXPECT_NE(text.find("extent 2 {\n      alloc %acc: Buffer[(3, 5), float32] {"), std::string::npos) << text;
  EXPECT_NE(text.find("%acc[%i_i_init, %j_i_init] = 0.0"), std::string::npos) << text;
  EXPECT_NE(text.find("max(%acc[%i_i_post, %j_i_post] + %B[%j_o * 5 + %j_i_post], 0.0)"), std::string::npos) << text;
  EXPECT_EQ(run(s.func()), want) << text;
  EXPECT_NE(s.trace_json().find(R"(["allocate_at", "acc", "j_o"])"), std::string::npos) << s.trace_json();
  EXPECT_TRUE(structural_equal(Any(tir::Schedule::replay(original(), s.trace_json()).func()), Any(s.func())));

  const char* carried = R"(
@sum = prim_func(%A: Buffer[(4, 8), float32], %Out: Buffer[(8), float32]) {
  alloc %s: Buffer[(8), float32] {
    for %k: int64 from 0 extent 4 {
      for %j: int64 from 0 extent 8 {
        %s[%j] = %s[%j] + %A[%k, %j];
        %Out[%j] = %s[%j];
      }
    }
  }
}
)";
  tir::Schedule sum(downcast<tir::PrimFunc>(text::parse_module(carried, "sum.loom").lookup("sum")));
  std::string got = error_of([&] { sum.allocate_at("s", "k"); });
  EXPECT_NE(got.find("schedule.allocate_at: iterations of %k may touch the same elements of 's'"), std::string::npos)
      << got;
  // Per iteration of %j one element, but %k around it carries the sums.
  got = error_of([&] { sum.allocate_at("s", "j"); });
  EXPECT_NE(got.find("iterations of %k may touch the same elements of 's'"), std::string::npos) << got;
  got = error_of([&] { sum.allocate_at("t", "j"); });
  EXPECT_NE(got.find("'t' is not an allocation of the function"), std::string::npos) << got;
}

// transform_layout of an allocation: the accumulator transposed and split
// (its stores and loads move with it, nothing is recorded) gives the same
// numbers; a padded split's extra elements are never read.
TEST(Schedule, TransformLayoutOfAnAllocationRewritesItsStoresAndLoads) {
  std::vector<float> want = run(original());
  tir::Schedule s(original());
  s.transform_layout("acc", [](const std::vector<tir::PrimExpr>& v) {
    tir::PrimExpr four = tir::IntImm(DataType::Int(64), 4);
    return std::vector<tir::PrimExpr>{tir::FloorDiv(v[1], four), v[0], tir::FloorMod(v[1], four)};
  });
  std::string text = ir::to_text(Any(s.func()));
  EXPECT_NE(text.find("alloc %acc: Buffer[(3, 6, 4), float32]"), std::string::npos) << text;
  EXPECT_NE(text.find("%acc[%j // 4, %i, %j % 4] = %acc[%j // 4, %i, %j % 4] + %A[%i, %k]"), std::string::npos) << text;
  EXPECT_NE(text.find("%biased[%i2, %j2] = %acc[%j2 // 4, %i2, %j2 % 4] + %B[%j2]"), std::string::npos) << text;
  EXPECT_EQ(text.find("param_layouts"), std::string::npos) << text;
  EXPECT_EQ(run(s.func()), want) << text;
  std::string got = error_of([&] {
    s.transform_layout("acc", [](const std::vector<tir::PrimExpr>& v) { return std::vector<tir::PrimExpr>{v[1]}; });
  });
  EXPECT_NE(got.find("schedule.transform_layout: 'acc': axis 0 must appear in the layout once"), std::string::npos)
      << got;
  got = error_of([&] { s.transform_layout("acx", [](const std::vector<tir::PrimExpr>& v) { return v; }); });
  EXPECT_NE(got.find("no buffer 'acx'"), std::string::npos) << got;
}

// transform_layout: the weight parameter itself takes the panel layout;
// a caller that passes it re-laid out (tir::relayout) gets the same numbers.
TEST(Schedule, TransformLayoutMakesTheCallerPassTheParameterReLaidOut) {
  std::vector<float> want = run(original());
  tir::Schedule s(original());
  auto panels = [](const std::vector<tir::PrimExpr>& v) {
    tir::PrimExpr four = tir::IntImm(DataType::Int(64), 4);
    return std::vector<tir::PrimExpr>{tir::FloorDiv(v[0], four), v[1], tir::FloorMod(v[0], four)};
  };
  s.transform_layout("W", panels);
  std::string text = ir::to_text(Any(s.func()));
  EXPECT_NE(text.find("%W: Buffer[(3, 5, 4), float32]"), std::string::npos) << text;
  EXPECT_NE(text.find("param_layouts: {\"1\": \"0 // 4, 1, 0 % 4\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("%W[%j // 4, %k, %j % 4]"), std::string::npos) << text;
  EXPECT_EQ(tir::param_layouts(*s.func().get()), (std::map<std::string, std::string>{{"1", "0 // 4, 1, 0 % 4"}}));
  // The padded panel (rows 10 and 11) is zero.
  NDArray w = floats({10, 5}, 2);
  NDArray laid = tir::relayout(w, tir::parse_layout("0 // 4, 1, 0 % 4", 2));
  EXPECT_EQ(laid.shape_vector(), (std::vector<int64_t>{3, 5, 4}));
  const float* in = w.data_as<float>();
  const float* out = laid.data_as<float>();
  for (int j = 0; j < 12; ++j)
    for (int k = 0; k < 5; ++k)
      EXPECT_EQ(out[(j / 4) * 20 + k * 4 + j % 4], j < 10 ? in[j * 5 + k] : 0.0f) << j << ", " << k;
  ir::IRModule m = text::parse_module(kModule, "mm.loom").with_function("mm", s.func());
  NDArray result = NDArray::empty({6, 10}, DataType::Float(32));
  driver::build_kernels(m, target::Target("ref")).get_function("mm")(floats({6, 5}, 1), laid, floats({10}, 3), result);
  EXPECT_EQ(std::vector<float>(result.data_as<float>(), result.data_as<float>() + 60), want) << text;
  // Refused: a second layout, an output, what is not a layout.
  auto expect = [&](const std::function<void()>& f, const std::string& message) {
    std::string got = error_of(f);
    EXPECT_NE(got.find(message), std::string::npos) << got;
  };
  expect([&] { s.transform_layout("W", panels); },
         "schedule.transform_layout: 'W' already has the layout 0 // 4, 1, 0 % 4");
  expect([&] { s.transform_layout("Out", panels); }, "schedule.transform_layout: 'Out' is written by the function");
  expect(
      [&] {
        s.transform_layout("A", [](const std::vector<tir::PrimExpr>& v) { return std::vector<tir::PrimExpr>{v[0]}; });
      },
      "schedule.transform_layout: 'A': axis 1 must appear in the layout once");
  expect([&] { tir::parse_layout("0 // 4, 1", 2); }, "layout '0 // 4, 1': axis 0 must appear in the layout once");
  expect([&] { tir::parse_layout("0 * 4, 1", 2); }, "layout '0 * 4, 1': '0 * 4' is not 'A', 'A // F' or 'A % F'");
  expect([&] { tir::parse_layout("1, 2", 2); }, "layout '1, 2': axis 2 is out of range for 2 axes");
  EXPECT_EQ(tir::layout_to_string(tir::parse_layout("1,0 % 8, 0 // 8", 2)), "1, 0 % 8, 0 // 8");
}

// A concatenation's pieces written by three nests (one transposed, one
// a single column), then batch-norm and ReLU over the whole: the reader
// moves into each writer's store and the temporary goes.
TEST(Schedule, ReverseComputeInlineOfSeveralWritersMovesTheReaderIntoEachStore) {
  const char* text = R"(
@cat = prim_func(%A: Buffer[(4, 3), float32], %B: Buffer[(2, 4), float32], %C: Buffer[(4, 1), float32], %S: Buffer[(6), float32], %Out: Buffer[(4, 6), float32]) {
  alloc %t: Buffer[(4, 6), float32] {
    for %i: int64 from 0 extent 4 {
      for %j: int64 from 0 extent 3 {
        %t[%i, %j] = %A[%i, %j];
      }
    }
    for %j1: int64 from 0 extent 2 {
      for %i1: int64 from 0 extent 4 {
        %t[%i1, %j1 + 3] = %B[%j1, %i1] * 2.0;
      }
    }
    for %i2: int64 from 0 extent 4 {
      %t[%i2, 5] = %C[%i2, 0];
    }
    for %i3: int64 from 0 extent 4 {
      for %j3: int64 from 0 extent 6 {
        %Out[%i3, %j3] = max(%t[%i3, %j3] * %S[%j3] + 1.0, 0.0);
      }
    }
  }
}
)";
  auto parse = [&] { return text::parse_module(text, "cat.loom"); };
  auto run_cat = [&](const tir::PrimFunc& f) {
    NDArray out = NDArray::empty({4, 6}, DataType::Float(32));
    driver::build_kernels(parse().with_function("cat", f), target::Target("ref"))
        .get_function("cat")(floats({4, 3}, 1), floats({2, 4}, 2), floats({4, 1}, 3), floats({6}, 4), out);
    return std::vector<float>(out.data_as<float>(), out.data_as<float>() + 24);
  };
  tir::PrimFunc f = downcast<tir::PrimFunc>(parse().lookup("cat"));
  std::vector<float> want = run_cat(f);
  tir::Schedule s(f);
  s.reverse_compute_inline("t");
  std::string got = ir::to_text(Any(s.func()));
  EXPECT_EQ(got.find("%t"), std::string::npos) << got;
  EXPECT_NE(got.find("%Out[%i1, %j1 + 3] = max(%B[%j1, %i1] * 2.0 * %S[%j1 + 3] + 1.0, 0.0)"), std::string::npos)
      << got;
  EXPECT_NE(got.find("%Out[%i2, 5] = max(%C[%i2, 0] * %S[5] + 1.0, 0.0)"), std::string::npos) << got;
  EXPECT_EQ(run_cat(s.func()), want) << got;

  // A writer that reads what it wrote (an accumulation) keeps the buffer.
  std::string accumulating = text;
  accumulating.replace(accumulating.find("%t[%i2, 5] = %C[%i2, 0]"), 23, "%t[%i2, 5] = %t[%i2, 0]");
  tir::Schedule r(downcast<tir::PrimFunc>(text::parse_module(accumulating, "cat.loom").lookup("cat")));
  std::string why = error_of([&] { r.reverse_compute_inline("t"); });
  EXPECT_NE(why.find("schedule.reverse_compute_inline: a writer of 't' reads it"), std::string::npos) << why;

  // A reader of the first 5 columns only: the store to column 5 has no
  // place in its output.
  std::string partial = text;
  partial.replace(partial.find("%Out: Buffer[(4, 6), float32]"), 29, "%Out: Buffer[(4, 5), float32]");
  partial.replace(partial.find("for %j3: int64 from 0 extent 6"), 30, "for %j3: int64 from 0 extent 5");
  tir::Schedule p(downcast<tir::PrimFunc>(text::parse_module(partial, "cat.loom").lookup("cat")));
  why = error_of([&] { p.reverse_compute_inline("t"); });
  EXPECT_NE(why.find("schedule.reverse_compute_inline: the reader of 't' does not read all of it (loop %j3 against "
                     "dimension 1)"),
            std::string::npos)
      << why;
}

TEST(Schedule, RFactorSumsPerLaneThenAddsThePartialSums) {
  std::vector<float> want = run(original());
  tir::Schedule s(original());
  auto [ko, ki] = s.split("k", 2);
  tir::Schedule::RFactor rf = s.rfactor(ki);
  EXPECT_EQ(rf.buffer, "acc_rf");
  s.vectorize(rf.init);
  std::string text = ir::to_text(Any(s.func()));
  EXPECT_NE(text.find("alloc %acc_rf: Buffer[(2), float32, scope=\"local\"]"), std::string::npos) << text;
  EXPECT_NE(text.find("%acc_rf[%k_i] = %acc_rf[%k_i] + %A[%i, %k_o * 2 + %k_i] * %W[%j, %k_o * 2 + %k_i]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%acc[%i, %j] = %acc[%i, %j] + %acc_rf[%" + rf.final + "]"), std::string::npos) << text;
  // The order of the sum changed: equal up to rounding.
  std::vector<float> got = run(s.func());
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-6f * (1 + std::abs(want[k]))) << k;
}

TEST(Schedule, RFactorOfAMaxOrAMinStartsFromInfinityAndIsExact) {
  // A row's max and min (softmax's first step), per lane then combined.
  const char* text = R"(
@mm = prim_func(%A: Buffer[(6, 5), float32], %W: Buffer[(10, 5), float32], %B: Buffer[(10), float32], %Out: Buffer[(6, 10), float32]) {
  for %i: int64 from 0 extent 6 {
    for %j: int64 from 0 extent 10 {
      %Out[%i, %j] = float32("-inf");
      for %k: int64 from 0 extent 5 {
        %Out[%i, %j] = max(%Out[%i, %j], %A[%i, %k] * %W[%j, %k]);
      }
      for %k2: int64 from 0 extent 5 {
        %Out[%i, %j] = min(%Out[%i, %j], %A[%i, %k2] + %W[%j, %k2] + %B[%j]);
      }
    }
  }
}
)";
  auto f = downcast<tir::PrimFunc>(text::parse_module(text, "max.loom").lookup("mm"));
  auto run_text = [&](const tir::PrimFunc& g) {
    ir::IRModule m = text::parse_module(text, "max.loom").with_function("mm", g);
    NDArray out = NDArray::empty({6, 10}, DataType::Float(32));
    driver::build_kernels(m, target::Target("ref"))
        .get_function("mm")(floats({6, 5}, 1), floats({10, 5}, 2), floats({10}, 3), out);
    return std::vector<float>(out.data_as<float>(), out.data_as<float>() + 60);
  };
  std::vector<float> want = run_text(f);
  tir::Schedule s(f);
  tir::Schedule::RFactor hi = s.rfactor("k");
  tir::Schedule::RFactor lo = s.rfactor("k2");
  std::string printed = ir::to_text(Any(s.func()));
  EXPECT_NE(printed.find("%Out_rf[%" + hi.init + "] = float32(\"-inf\")"), std::string::npos) << printed;
  EXPECT_NE(printed.find("= max(%Out_rf[%k], %A[%i, %k] * %W[%j, %k])"), std::string::npos) << printed;
  EXPECT_NE(printed.find("%Out[%i, %j] = max(%Out[%i, %j], %Out_rf[%" + hi.final + "])"), std::string::npos) << printed;
  EXPECT_NE(printed.find("= float32(\"inf\")"), std::string::npos) << printed;
  EXPECT_NE(printed.find("%Out[%i, %j] = min(%Out[%i, %j], %" + lo.buffer + "[%" + lo.final + "])"), std::string::npos)
      << printed;
  EXPECT_EQ(run_text(s.func()), want);  // max and min do not round
}

// bind marks a loop as a thread axis (SplitHostDevice reads it); an axis
// is bound once on a path from the root.
TEST(Schedule, BindMarksThreadAxesOncePerPath) {
  tir::Schedule s(original());
  auto [io, ii] = s.split("i", 2);
  s.bind(io, "blockIdx.x");
  s.bind(ii, "threadIdx.x");
  std::string text = ir::to_text(Any(s.func()));
  EXPECT_NE(text.find("for %i_o: int64 from 0 extent 3 thread(\"blockIdx.x\")"), std::string::npos) << text;
  EXPECT_NE(text.find("for %i_i: int64 from 0 extent 2 thread(\"threadIdx.x\")"), std::string::npos) << text;
  std::string twice = error_of([&] { s.bind("j", "threadIdx.x"); });
  EXPECT_NE(twice.find("schedule.bind: %j is inside %i_i, already bound to threadIdx.x"), std::string::npos) << twice;
  std::string serial = error_of([&] { s.bind(io, "blockIdx.y"); });
  EXPECT_NE(serial.find("schedule.bind: %i_o is not a serial loop"), std::string::npos) << serial;
  EXPECT_TRUE(tir::is_thread_axis("threadIdx.z"));
  EXPECT_FALSE(tir::is_thread_axis("threadIdx.w"));
}

TEST(Schedule, RefusalsNameThePrimitiveAndTheReason) {
  tir::Schedule s(original());
  auto expect = [&](const std::function<void()>& f, const std::string& message) {
    std::string got = error_of(f);
    EXPECT_NE(got.find(message), std::string::npos) << got;
  };
  expect([&] { s.split("q", 2); }, "schedule.split: no loop %q; did you mean '");
  expect([&] { s.split("i", 0); }, "schedule.split: the factor must be positive, got 0");
  expect([&] { s.fuse("j", "k"); }, "schedule.fuse: %k is not the whole body of %j");
  expect([&] { s.reorder({"k", "i"}); }, "schedule.reorder: %k is not in the perfect nest below %i");
  expect([&] { s.parallel("k"); },
         "schedule.parallel: %k: buffer 'acc' is written at [%i, %j], which does not "
         "depend on %k, so iterations would race");
  expect([&] { s.compute_inline("acc"); },
         "schedule.compute_inline: 'acc' is not written by one loop nest storing each "
         "element once at its loop variables (a reduction, or a partial write)");
  expect([&] { s.compute_inline("nothing"); }, "schedule.compute_inline: no allocated buffer 'nothing'");
  expect(
      [&] {
        s.cache_read("W", {0, 0});
      },
      "schedule.cache_read: 'W': axis 0 must appear in the layout once, or as the pair v // c and v % c");
  expect([&] { s.cache_read("W", {1}); }, "schedule.cache_read: 'W': axis 0 must appear in the layout once, or as");
  expect([&] { s.cache_read("W", {2, 0}); }, "schedule.cache_read: axis 2 is out of range for the 2 axes of 'W'");
  expect(
      [&] {
        s.cache_read("W", [](const std::vector<tir::PrimExpr>& v) {
          return std::vector<tir::PrimExpr>{tir::Add(v[0], tir::IntImm(DataType::Int(64), 1)), v[1]};
        });
      },
      "schedule.cache_read: index 0 of the layout of 'W', %v0 + 1, is not an axis v, v // c or v % c");
  expect([&] { s.cache_write("A"); }, "schedule.cache_write: nothing writes 'A'");
  expect([&] { s.cache_write("Q"); }, "schedule.cache_write: no buffer 'Q'");
  expect([&] { s.compute_at("i2", "i"); },
         "schedule.compute_at: %i is not in a statement after the nest %i2 in one sequence");
  expect([&] { s.compute_at("i3", "i2"); }, "schedule.compute_at: %i2 comes before the nest %i3");
  expect([&] { s.compute_at("k", "i3"); }, "schedule.compute_at: %i3 is not in a statement after the nest %k");
  expect([&] { s.rfactor("j"); },
         "schedule.rfactor: the body of the perfect nest at %j is not one update B[i] = B[i] + e "
         "(or max(B[i], e), min(B[i], e))");
  expect([&] { s.cache_read("Out", {1, 0}); }, "schedule.cache_read: 'Out' is written by the function");
  expect([&] { s.decompose_reduction("k"); },
         "schedule.decompose_reduction: the innermost body of the nest at %k is not a sequence");
  expect([&] { s.bind("i", "warp.x"); },
         "schedule.bind: 'warp.x' is not a thread axis (blockIdx.x/y/z, threadIdx.x/y/z)");
  expect([&] { s.bind("k", "threadIdx.x"); },
         "schedule.bind: %k: buffer 'acc' is written at [%i, %j], which does not "
         "depend on %k, so iterations would race");
  // A refusal leaves the schedule as it was.
  EXPECT_EQ(ir::to_text(Any(s.func())), ir::to_text(Any(original())));

  // cache_write refuses a nest that reads what it did not write first;
  // compute_at, regions that iterations of a parallel loop share.
  tir::Schedule t(downcast<tir::PrimFunc>(text::parse_module(R"(
@f = prim_func(%X: Buffer[(4, 4), float32], %Out: Buffer[(4, 4), float32]) {
  alloc %T: Buffer[(4, 4), float32] {
    for %a: int64 from 0 extent 4 {
      for %b: int64 from 0 extent 4 {
        %T[%a, %b] = %X[%a, %b] * 2.0;
      }
    }
    for %i: int64 from 0 extent 4 parallel {
      for %j: int64 from 0 extent 4 {
        %Out[%i, %j] = %Out[%i, %j] + %T[0, %j];
      }
    }
  }
}
)",
                                                             "f.loom")
                                              .lookup("f")));
  expect([&] { t.cache_write("Out"); },
         "schedule.cache_write: the nest writing 'Out' reads it at [%i, %j] before writing it "
         "there, so a local copy would lose that value");
  tir::Schedule partial(downcast<tir::PrimFunc>(text::parse_module(R"(
@g = prim_func(%X: Buffer[(4), float32], %Out: Buffer[(4), float32]) {
  for %i: int64 from 0 extent 2 {
    %Out[%i] = %X[%i];
  }
}
)",
                                                                   "g.loom")
                                                    .lookup("g")));
  expect([&] { partial.cache_write("Out"); },
         "schedule.cache_write: the nest writing 'Out' does not write every element "
         "at its loop variables, so the copy back would overwrite the others");
  tir::Schedule rewrites(downcast<tir::PrimFunc>(text::parse_module(R"(
@h = prim_func(%X: Buffer[(4), float32], %Out: Buffer[(4), float32]) {
  alloc %T: Buffer[(4), float32] {
    for %a: int64 from 0 extent 4 {
      %T[%a] = %X[%a];
    }
    for %i: int64 from 0 extent 4 {
      %T[%i] = %T[%i] + 1.0;
      %Out[%i] = %T[%i];
    }
  }
}
)",
                                                                    "h.loom")
                                                     .lookup("h")));
  expect([&] { rewrites.compute_at("a", "i"); }, "schedule.compute_at: %i writes 'T' too");
  expect([&] { t.compute_at("a", "i"); },
         "schedule.compute_at: the regions of 'T' that iterations of the parallel loop %i "
         "read may overlap, so they would race to write them");
}

}  // namespace loom

namespace loom {

// A composite dimension (a reshape's %n * 4) binds its variable when no
// dimension is the variable alone; a plain dimension wins over it.
TEST(PrimBuilder, ScalarsBindFromALinearDimension) {
  tir::Var n("n", DataType::Int(64)), m("m", DataType::Int(64));
  auto buffer = [](const std::string& name, std::vector<tir::PrimExpr> shape) {
    return tir::Buffer(name, DataType::Float(32), shape, "global");
  };
  tir::PrimExpr four_n_plus_2 = tir::Add(tir::Mul(tir::PrimExpr(int64_t{4}), n), tir::PrimExpr(int64_t{2}));
  std::vector<tir::Buffer> composite{buffer("X", {four_n_plus_2, 8}), buffer("Y", {tir::Mul(n, m), 8})};
  auto bound = tir::bind_from_shapes(composite, n.get());
  ASSERT_TRUE(bound);
  EXPECT_EQ(bound->buffer, 0u);
  EXPECT_EQ(bound->scale, 4);
  EXPECT_EQ(bound->offset, 2);
  EXPECT_EQ(ir::to_text(Any(tir::solve_binding(*bound, tir::PrimExpr(int64_t{14})))), "(14 - 2) // 4");
  EXPECT_FALSE(tir::bind_from_shapes(composite, m.get()));  // only in %n * %m: not linear
  composite.push_back(buffer("Z", {8, n}));
  bound = tir::bind_from_shapes(composite, n.get());
  ASSERT_TRUE(bound);
  EXPECT_EQ(bound->buffer, 2u);
  EXPECT_EQ(bound->dim, 1u);
  EXPECT_EQ(bound->scale, 1);
}

// split decides the divisions and remainders of the split variable that
// the new loops' ranges fix: a grouped reduction reading A[j // 4 * 4 +
// k] (4 channels a group) split by 4 reads A[j_o * 4 + k], and A[j % 4]
// reads A[j_i]; split by 2 (a divisor of the group, not a multiple) it
// keeps (j_o * 2 + j_i) // 4.  The numbers stay.
TEST(Schedule, SplitDecidesDivisionsByItsFactor) {
  const char* text = R"(
@g = prim_func(%A: Buffer[(8), float32], %W: Buffer[(8, 4), float32], %Out: Buffer[(8), float32]) {
  for %j: int64 from 0 extent 8 {
    %Out[%j] = 0.0;
    for %k: int64 from 0 extent 4 {
      %Out[%j] = %Out[%j] + %A[%j // 4 * 4 + %k] * %W[%j, %k] + %A[%j % 4];
    }
  }
}
)";
  auto f = downcast<tir::PrimFunc>(text::parse_module(text, "g.loom").lookup("g"));
  auto value = [&](const tir::PrimFunc& g) {
    ir::IRModule m = text::parse_module(text, "g.loom").with_function("g", g);
    NDArray out = NDArray::empty({8}, DataType::Float(32));
    driver::build_kernels(m, target::Target("ref")).get_function("g")(floats({8}, 1), floats({8, 4}, 2), out);
    return std::vector<float>(out.data_as<float>(), out.data_as<float>() + 8);
  };
  std::vector<float> want = value(f);
  tir::Schedule by_group(f);
  by_group.split("j", 4);
  std::string split4 = ir::to_text(Any(by_group.func()));
  EXPECT_NE(split4.find("%A[%j_o * 4 + %k]"), std::string::npos) << split4;
  EXPECT_NE(split4.find("%A[%j_i]"), std::string::npos) << split4;
  EXPECT_EQ(value(by_group.func()), want);
  tir::Schedule by_two(f);
  by_two.split("j", 2);
  std::string split2 = ir::to_text(Any(by_two.func()));
  EXPECT_NE(split2.find("(%j_o * 2 + %j_i) // 4"), std::string::npos) << split2;
  EXPECT_EQ(value(by_two.func()), want);
}

}  // namespace loom
