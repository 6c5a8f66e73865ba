// The llvm target: the compiled entry's argument checks (every message),
// JIT and exported library giving the same numbers, results against the
// reference interpreter, vector exp/log against libm, target attribute
// errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/text/text.h"
#include "loom/runtime/library.h"
#include "loom/runtime/ndarray.h"
#include "loom/target/target.h"
#include "loom/schedule/schedule.h"
#include "test_util.h"

namespace loom {
using runtime::NDArray;

namespace {
NDArray floats(std::vector<int64_t> shape, uint32_t seed, float lo = -2, float hi = 2) {
  NDArray a = NDArray::empty(shape, DataType::Float(32));
  std::vector<float> v = test::random_floats(a->numel(), seed, lo, hi);
  std::memcpy(a.data_as<float>(), v.data(), v.size() * sizeof(float));
  return a;
}

const char* kKernel = R"(
@f = prim_func(%A: Buffer[(%n: int64, 8), float32], %B: Buffer[(8), float32], %C: Buffer[(%n, 8), float32]) {
  for %i: int64 from 0 extent %n parallel {
    for %j: int64 from 0 extent 8 {
      %C[%i, %j] = call(float32, "exp", %A[%i, %j]) + %B[%j];
    }
  }
}
)";

runtime::Module kernel() {
  return driver::build_kernels(text::parse_module(kKernel, "kernel.loom"), target::Target("llvm"));
}

using test::error_of;

// The function @f of `text`, its vectorized loops vectorized, built for llvm.
Function vectorized_f(const char* text, const char* file) {
  ir::IRModule module = text::parse_module(text, file);
  module = transform::PassRegistry::get("VectorizeLoop")(module, transform::PassContext());
  return driver::build_kernels(module, target::Target("llvm")).get_function("f");
}

}  // namespace

TEST(LLVM, ComputesAndChecksEveryArgument) {
  runtime::Module m = kernel();
  Function f = m.get_function("f");
  NDArray a = floats({5, 8}, 1), b = floats({8}, 2), c = NDArray::empty({5, 8}, DataType::Float(32));
  f(a, b, c);
  for (int i = 0; i < 40; ++i) {
    float want = std::exp(a.data_as<float>()[i]) + b.data_as<float>()[i % 8];
    EXPECT_NEAR(c.data_as<float>()[i], want, 2e-6f * std::fabs(want)) << i;
  }
  EXPECT_NE(error_of([&] { f(a, b); }).find("f: takes 3 tensors (or 3 values), got 2"), std::string::npos);
  EXPECT_NE(error_of([&] { f(a, int64_t{1}, c); }).find("argument 1 (buffer 'B') must be a tensor"), std::string::npos);
  NDArray d = NDArray::empty({5, 8}, DataType::Float(64));
  EXPECT_NE(error_of([&] { f(a, b, d); }).find("argument 2 (buffer 'C') must have dtype float32"), std::string::npos);
  NDArray flat = floats({40}, 3);
  EXPECT_NE(error_of([&] { f(flat, b, c); }).find("buffer 'A' has 1 dimensions, expected 2"), std::string::npos);
  NDArray wide = floats({5, 9}, 4);
  EXPECT_NE(error_of([&] { f(wide, b, c); }).find("buffer 'A' has dimension 1 = 9, but the buffer says 8"),
            std::string::npos);
  NDArray other = NDArray::empty({6, 8}, DataType::Float(32));
  EXPECT_NE(error_of([&] { f(a, b, other); }).find("buffer 'C' has dimension 0 = 6, but the buffer says %n"),
            std::string::npos);
}

TEST(LLVM, VectorExpAndLogFollowLibm) {
  const char* text = R"(
@f = prim_func(%X: Buffer[(1031), float32], %E: Buffer[(1031), float32], %L: Buffer[(1031), float32]) {
  for %o: int64 from 0 extent 128 {
    for %v: int64 from 0 extent 8 vectorized {
      %E[%o * 8 + %v] = call(float32, "exp", %X[%o * 8 + %v]);
      %L[%o * 8 + %v] = call(float32, "log", %X[%o * 8 + %v]);
    }
  }
  for %t: int64 from 1024 extent 7 {
    %E[%t] = call(float32, "exp", %X[%t]);
    %L[%t] = call(float32, "log", %X[%t]);
  }
}
)";
  Function f = vectorized_f(text, "math.loom");
  NDArray x = floats({1031}, 5, -90, 90), e = NDArray::empty({1031}, DataType::Float(32)),
          l = NDArray::empty({1031}, DataType::Float(32));
  float* xs = x.data_as<float>();
  const float special[] = {0.0f, -0.0f, -1.0f, INFINITY, -INFINITY, NAN, 1e-40f, 88.8f, -104.0f, 1.0f, 1e30f};
  for (size_t k = 0; k < sizeof(special) / sizeof(float); ++k) xs[k * 37] = special[k];
  for (int i = 500; i < 1031; ++i) xs[i] = std::fabs(xs[i]) * 1e-3f * static_cast<float>(i);
  f(x, e, l);
  auto ulps = [](float got, float want) {
    if (std::isnan(want)) return std::isnan(got) ? 0.0 : 1e9;
    if (std::isinf(want) || want == 0) return got == want ? 0.0 : 1e9;
    return std::fabs(static_cast<double>(got) - want) / (std::nextafter(std::fabs(want), INFINITY) - std::fabs(want));
  };
  for (int i = 0; i < 1031; ++i) {
    EXPECT_LE(ulps(e.data_as<float>()[i], std::exp(xs[i])), 2.0) << "exp(" << xs[i] << ")";
    EXPECT_LE(ulps(l.data_as<float>()[i], std::log(xs[i])), 2.0) << "log(" << xs[i] << ")";
  }
}

// sigmoid, tanh and erf are native on llvm (a bounded exp inside, no
// overflow or subnormal handling): against double precision, vector and
// scalar lanes, with their limits at +-inf and NaN; float64 goes through
// LLVM's exp (erf: the C library's).
TEST(LLVM, SigmoidTanhAndErfFollowTheirDoubleValues) {
  const char* text = R"(
@f = prim_func(%X: Buffer[(1031), float32], %S: Buffer[(1031), float32], %T: Buffer[(1031), float32],
               %E: Buffer[(1031), float32], %D: Buffer[(4), float64], %DS: Buffer[(4), float64],
               %DT: Buffer[(4), float64], %DE: Buffer[(4), float64]) {
  for %o: int64 from 0 extent 128 {
    for %v: int64 from 0 extent 8 vectorized {
      %S[%o * 8 + %v] = call(float32, "sigmoid", %X[%o * 8 + %v]);
      %T[%o * 8 + %v] = call(float32, "tanh", %X[%o * 8 + %v]);
      %E[%o * 8 + %v] = call(float32, "erf", %X[%o * 8 + %v]);
    }
  }
  for %t: int64 from 1024 extent 7 {
    %S[%t] = call(float32, "sigmoid", %X[%t]);
    %T[%t] = call(float32, "tanh", %X[%t]);
    %E[%t] = call(float32, "erf", %X[%t]);
  }
  for %d: int64 from 0 extent 4 {
    %DS[%d] = call(float64, "sigmoid", %D[%d]);
    %DT[%d] = call(float64, "tanh", %D[%d]);
    %DE[%d] = call(float64, "erf", %D[%d]);
  }
}
)";
  Function f = vectorized_f(text, "sigmoid.loom");
  NDArray x = floats({1031}, 6, -20, 20), s = NDArray::empty({1031}, DataType::Float(32)),
          t = NDArray::empty({1031}, DataType::Float(32)), e = NDArray::empty({1031}, DataType::Float(32));
  float* xs = x.data_as<float>();
  const float special[] = {0.0f,  -0.0f,  INFINITY, -INFINITY, NAN,   1e-30f, -1e-30f, 86.9f,  -86.9f, 88.5f, -88.5f,
                           89.5f, -89.5f, 100.0f,   -100.0f,   44.0f, -44.0f, 43.3f,   -43.3f, 1e-4f,  -3e-3f};
  for (size_t k = 0; k < sizeof(special) / sizeof(float); ++k) xs[k * 37 + 3] = special[k];
  NDArray d = NDArray::empty({4}, DataType::Float(64)), ds = NDArray::empty({4}, DataType::Float(64)),
          dt = NDArray::empty({4}, DataType::Float(64)), de = NDArray::empty({4}, DataType::Float(64));
  const double dx[] = {-3.5, 0.25, 40.0, -800.0};
  std::copy(dx, dx + 4, d.data_as<double>());
  f(x, s, t, e, d, ds, dt, de);
  for (int i = 0; i < 1031; ++i) {
    double v = xs[i], sig = 1 / (1 + std::exp(-v)), th = std::tanh(v);
    float gs = s.data_as<float>()[i], gt = t.data_as<float>()[i], ge = e.data_as<float>()[i];
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(gs) && std::isnan(gt) && std::isnan(ge)) << "sigmoid/tanh/erf(nan)";
      continue;
    }
    // erf: Abramowitz-Stegun's 1.5e-7 and float32's roundings, absolute;
    // an odd function, -0 included.
    EXPECT_LE(std::fabs(ge - std::erf(v)), 6e-7) << "erf(" << v << ")";
    EXPECT_EQ(std::signbit(ge), std::signbit(v)) << "erf(" << v << ")";
    // sigmoid: 4 ulp of its value, or 4e-39 where it is that small (exp
    // overflows to +inf from x = -88.4 down: 0 there).
    double ulp = std::nextafter(static_cast<float>(sig), INFINITY) - static_cast<float>(sig);
    EXPECT_LE(std::fabs(gs - sig), std::max(4 * ulp, 4e-39)) << "sigmoid(" << v << ")";
    // tanh as 1 - 2 / (exp(2x) + 1): absolute, the cancellation near 0.
    EXPECT_LE(std::fabs(gt - th), 2.5e-7) << "tanh(" << v << ")";
    if (std::isinf(v)) {
      EXPECT_EQ(gs, v > 0 ? 1.0f : 0.0f) << "sigmoid(" << v << ")";
      EXPECT_EQ(gt, v > 0 ? 1.0f : -1.0f) << "tanh(" << v << ")";
      EXPECT_EQ(ge, v > 0 ? 1.0f : -1.0f) << "erf(" << v << ")";
    }
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(ds.data_as<double>()[i], 1 / (1 + std::exp(-dx[i])), 1e-15) << "sigmoid(" << dx[i] << ")";
    EXPECT_NEAR(dt.data_as<double>()[i], std::tanh(dx[i]), 1e-15) << "tanh(" << dx[i] << ")";
    EXPECT_NEAR(de.data_as<double>()[i], std::erf(dx[i]), 1e-15) << "erf(" << dx[i] << ")";
  }
}

// Vector accesses with a constant stride: stride 2 and 3 (a pool's window)
// are one contiguous load and a shuffle that ends at the last lane's
// element (the buffers end there, so a wider load would be caught by
// ASan); stride 5 gathers; a strided store scatters; a vector access to a
// buffer not yet flattened (Y) computes its flat index in vectors.
TEST(LLVM, StridedVectorAccessesReadAndWriteTheRightElements) {
  const char* text = R"(
@f = prim_func(%X: Buffer[(63), float32], %Y: Buffer[(8, 8), float32], %Z: Buffer[(40), float32]) {
  for %o: int64 from 0 extent 4 {
    for %v: int64 from 0 extent 8 vectorized {
      %Y[%o, %v] = %X[%o * 16 + %v * 2 - %o] + %X[%v * 3 + 38];
      %Y[%o + 4, %v] = %X[%v * 5 + %o];
      %Z[%v * 5 + %o] = %X[%v * 2 + 48];
    }
  }
}
)";
  // Vectorized through the passes (VectorizeLoop needs flat buffers), and
  // written vectorized by hand over the two-dimensional Y (vector indices
  // of an unflattened buffer in codegen).
  const char* by_hand = R"(
@f = prim_func(%X: Buffer[(63), float32], %Y: Buffer[(8, 8), float32], %Z: Buffer[(40), float32]) {
  for %o: int64 from 0 extent 4 {
    %Y[broadcast(%o, 8), ramp(0, 1, 8)] = %X[ramp(%o * 16 - %o, 2, 8)] + %X[ramp(38, 3, 8)];
    %Y[broadcast(%o + 4, 8), ramp(0, 1, 8)] = %X[ramp(%o, 5, 8)];
    %Z[ramp(%o, 5, 8)] = %X[ramp(48, 2, 8)];
  }
}
)";
  ir::IRModule passes = transform::sequential(
      {transform::PassRegistry::get("FlattenBuffer"), transform::PassRegistry::get("VectorizeLoop")})(
      text::parse_module(text, "strided.loom"), transform::PassContext());
  std::string ir_text = text::print_module(passes);
  EXPECT_NE(ir_text.find("%Z[ramp(%o, 5, 8)]"), std::string::npos) << ir_text;  // really vectorized
  for (const ir::IRModule& module : {passes, text::parse_module(by_hand, "strided_by_hand.loom")}) {
    Function f = driver::build_kernels(module, target::Target("llvm")).get_function("f");
    NDArray x = floats({63}, 11), y = NDArray::empty({8, 8}, DataType::Float(32)), z = floats({40}, 12);
    std::vector<float> z0(z.data_as<float>(), z.data_as<float>() + 40);
    f(x, y, z);
    const float* xs = x.data_as<float>();
    for (int o = 0; o < 4; ++o) {
      for (int v = 0; v < 8; ++v) {
        EXPECT_EQ(y.data_as<float>()[o * 8 + v], xs[o * 16 + v * 2 - o] + xs[v * 3 + 38]) << o << " " << v;
        EXPECT_EQ(y.data_as<float>()[(o + 4) * 8 + v], xs[v * 5 + o]) << o << " " << v;
        z0[v * 5 + o] = xs[v * 2 + 48];
      }
    }
    for (int k = 0; k < 40; ++k) EXPECT_EQ(z.data_as<float>()[k], z0[k]) << k;
  }
}

TEST(LLVM, JitAndExportedLibraryAgreeAndMatchRef) {
  // A small CNN (examples/cnn.loom's structure at a size the interpreter
  // runs quickly).
  ir::IRModule model = text::parse_module(R"(
@main = fn(%x: Tensor[(2, 3, 10, 10), float32], %k: Tensor[(4, 3, 3, 3), float32], %c: Tensor[(4, 1, 1), float32],
           %w: Tensor[(5, 100), float32], %b: Tensor[(5), float32]) -> Tensor[(2, 5), float32] {
  let %y = max_pool2d(relu(add(conv2d(%x, %k, padding=[1]), %c)), pool_size=[2, 2], strides=[2, 2]);
  softmax(add(dense(flatten(%y), %w), %b), axis=-1)
}
)",
                                          "cnn.loom");
  auto host = config::load_config(std::string(LOOM_SOURCE_DIR) + "/configs/host.yaml");
  auto ref = config::load_config(std::string(LOOM_SOURCE_DIR) + "/configs/ref.yaml");
  std::vector<NDArray> args = {floats({2, 3, 10, 10}, 11), floats({4, 3, 3, 3}, 12), floats({4, 1, 1}, 13),
                               floats({5, 100}, 14, -0.1f, 0.1f), floats({5}, 15)};
  auto call = [&](const runtime::Module& m) {
    std::vector<Any> a(args.begin(), args.end());
    return m.get_function("main").call(a.data(), static_cast<int32_t>(a.size())).cast<NDArray>();
  };
  runtime::Module jit = driver::build(model, host);
  NDArray y_jit = call(jit);
  std::string path = (std::filesystem::temp_directory_path() / "loom_llvm_cnn_test.so").string();
  runtime::export_library(jit, path);
  NDArray y_lib = call(runtime::load_module(path));
  std::filesystem::remove(path);
  NDArray y_ref = call(driver::build(model, ref));
  ASSERT_EQ(y_jit->numel(), 10);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(y_jit.data_as<float>()[i], y_lib.data_as<float>()[i]) << i;  // the same machine code
    EXPECT_NEAR(y_jit.data_as<float>()[i], y_ref.data_as<float>()[i], 1e-6) << i;
  }
}

// docs/target-llvm.md's example, line for line: a naive matmul to the
// packed, register-tiled, parallel one, compiled and checked.
TEST(LLVM, TheDocumentedMatmulScheduleComputesTheProduct) {
  const int64_t n = 64;
  ir::IRModule m = text::parse_module(R"(
@matmul = prim_func(%A: Buffer[(64, 64), float32], %B: Buffer[(64, 64), float32], %C: Buffer[(64, 64), float32]) {
  for %i: int64 from 0 extent 64 {
    for %j: int64 from 0 extent 64 {
      %C[%i, %j] = 0.0;
      for %k: int64 from 0 extent 64 {
        %C[%i, %j] = %C[%i, %j] + %A[%i, %k] * %B[%k, %j];
      }
    }
  }
}
)",
                                      "matmul.loom");
  using namespace tir;  // NOLINT: as in the documentation
  Schedule s(downcast<PrimFunc>(m.lookup("matmul")));
  // --- the documented schedule ---
  // Pack B into panels of 16 columns: B_local[j // 16, k, j % 16].
  std::string panel = s.cache_read("B", [](const std::vector<PrimExpr>& v) {
    PrimExpr c = IntImm(DataType::Int(64), 16);
    return std::vector<PrimExpr>{FloorDiv(v[1], c), v[0], FloorMod(v[1], c)};
  });
  auto [io, ii] = s.split("i", 4);         // 4 rows per register tile
  auto [jo, ji] = s.split("j", 8);         // one 256-bit vector of columns
  auto [joo, joi] = s.split(jo, 2);        // 2 vectors: one 16-column panel
  s.reorder({joo, io, ii, joi, ji});       // panels, then row tiles, then the tile
  auto nests = s.decompose_reduction(ii);  // per tile: init nest, reduction nest
  for (auto& nest : nests) {               // {ii, joi, ji}: 8 accumulators
    s.unroll(nest[0]);
    s.unroll(nest[1]);
    s.vectorize(nest[2]);
  }
  s.reorder({"k", nests[1][0], nests[1][1], nests[1][2]});  // k outside the tile
  s.compute_at("c0", joo);                                  // pack each panel right before its row tiles
  s.parallel(joo);                                          // panels over the threads
  // ---
  EXPECT_EQ(panel, "B_local");
  auto config = config::parse_config(
      "target:\n  kind: llvm\npipeline:\n  passes: [LowerIntrinsics, FlattenBuffer, Simplify, VectorizeLoop, "
      "UnrollLoop, "
      "Simplify]\n",
      "lowering.yaml");
  ir::IRModule lowered = config.pipeline()(config.constrain(m.with_function("matmul", s.func())), config.context);
  std::string text = text::print_module(lowered);
  EXPECT_NE(text.find("for %j_o_o: int64 from 0 extent 4 parallel {\n      for %c1: int64 from 0 extent 64 {"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("broadcast(%A"), std::string::npos) << text;  // the vector FMA of the tile
  NDArray a = floats({n, n}, 21), b = floats({n, n}, 22), c = NDArray::empty({n, n}, DataType::Float(32));
  driver::build_kernels(lowered, config.target).get_function("matmul")(a, b, c);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t k = 0; k < n; ++k) want += double(a.data_as<float>()[i * n + k]) * b.data_as<float>()[k * n + j];
      ASSERT_NEAR(c.data_as<float>()[i * n + j], want, 1e-4) << i << ", " << j;
    }
  }
}

TEST(LLVM, TargetAttributesAreChecked) {
  EXPECT_NE(error_of([] {
              target::Target("llvm", Map{{"mcpu", Any(std::string("znver9"))}});
            }).find("mcpu 'znver9' is not a CPU of"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              target::Target("llvm", Map{{"mattr", Any(std::string("avx2"))}});
            }).find("mattr entry 'avx2' must start with + or -"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              target::Target("llvm", Map{{"mtriple", Any(std::string("nonsense-x-y"))}});
            }).find("mtriple 'nonsense-x-y' is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              target::Target("llvm", Map{{"opt-level", Any(int64_t{7})}});
            }).find("attribute 'opt-level' must be from 0 to 3, got 7"),
            std::string::npos);
}

}  // namespace loom
