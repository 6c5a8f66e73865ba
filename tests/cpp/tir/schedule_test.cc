// The schedule primitives: each one's result runs to the same numbers as
// the unscheduled function (the reference interpreter), and each refusal
// names the primitive and the reason.
#include <gtest/gtest.h>

#include <cstring>

#include "loom/driver/build.h"
#include "loom/ir/text.h"
#include "loom/runtime/ndarray.h"
#include "loom/target/target.h"
#include "loom/tir/schedule.h"
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

tir::PrimFunc original() {
  return downcast<tir::PrimFunc>(ir::parse_module(kModule, "mm.loom").lookup("mm"));
}

NDArray floats(std::vector<int64_t> shape, uint32_t seed) {
  NDArray a = NDArray::empty(shape, DataType::Float(32));
  std::vector<float> v = test::random_floats(a->numel(), seed, -1, 1);
  std::memcpy(a.data_as<float>(), v.data(), v.size() * sizeof(float));
  return a;
}

std::vector<float> run(const tir::PrimFunc& f) {
  ir::IRModule m = ir::parse_module(kModule, "mm.loom").with_function("mm", f);
  NDArray out = NDArray::empty({6, 10}, DataType::Float(32));
  driver::build_kernels(m, target::Target("ref")).get_function("mm")(floats({6, 5}, 1), floats({10, 5}, 2),
                                                                      floats({10}, 3), out);
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
  expect([&] { s.parallel("k"); }, "schedule.parallel: %k: buffer 'acc' is written at [%i, %j], which does not "
                                   "depend on %k, so iterations would race");
  expect([&] { s.compute_inline("acc"); }, "schedule.compute_inline: 'acc' is not written by one loop nest storing each "
                                           "element once at its loop variables (a reduction, or a partial write)");
  expect([&] { s.compute_inline("nothing"); }, "schedule.compute_inline: no allocated buffer 'nothing'");
  expect([&] { s.cache_read("W", {0, 0}); }, "schedule.cache_read: the axes must be a permutation of the 2 axes of 'W'");
  expect([&] { s.cache_read("Out", {1, 0}); }, "schedule.cache_read: 'Out' is written by the function");
  expect([&] { s.decompose_reduction("k"); }, "schedule.decompose_reduction: the innermost body of the nest at %k is not a sequence");
  // A refusal leaves the schedule as it was.
  EXPECT_EQ(ir::to_text(Any(s.func())), ir::to_text(Any(original())));
}

}  // namespace loom
