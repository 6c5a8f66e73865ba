// The ref plugin (reference interpreter) and the build driver: prim
// function semantics checked against C++ references, faults as errors, and
// whole graph functions through build() -> VM -> ref, in memory and
// through export_library / load_module.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "loom/driver/build.h"
#include "loom/ir/op.h"
#include "loom/text/text.h"
#include "loom/runtime/library.h"
#include "loom/runtime/ndarray.h"
#include "loom/target/codegen.h"
#include "loom/target/target.h"
#include "test_util.h"

namespace loom {
using runtime::Module;
using runtime::NDArray;
using test::error_of;

namespace {
Module build_ref(const std::string& text) {
  return driver::build(text::parse_module(text, "ref_test.loom"), target::Target("ref"));
}

template <class T>
NDArray tensor(std::vector<int64_t> shape, DataType dtype, const std::vector<T>& values) {
  NDArray out = NDArray::empty(shape, dtype);
  std::memcpy(out.data_as<char>(), values.data(), values.size() * sizeof(T));
  return out;
}

std::vector<float> random_floats(size_t n, unsigned seed) { return test::random_floats(n, seed, -3, 3); }
}  // namespace

TEST(Ref, ArithmeticFollowsTheDtype) {
  Module m = build_ref(R"(
@f = prim_func(%A: Buffer[(%n), float32], %I: Buffer[(%n), int8], %O: Buffer[(%n), float32], %Q: Buffer[(%n), int8], %n: int64) {
  for %i: int64 from 0 extent %n {
    %O[%i] = %A[%i] * float32(0.1) + call(float32, "exp", %A[%i]) - cast(float32, (cast(int64, %i) - 3) // 2) + cast(float32, (cast(int64, %i) - 3) % 4);
    %Q[%i] = %I[%i] * int8(3) + int8(100);
  }
}
)");
  std::vector<float> a = random_floats(7, 1);
  std::vector<int8_t> q_in = {-128, -1, 0, 1, 50, 127, 3};
  NDArray A = tensor({7}, DataType::Float(32), a), I = tensor({7}, DataType::Int(8), q_in);
  NDArray O = NDArray::empty({7}, DataType::Float(32)), Q = NDArray::empty({7}, DataType::Int(8));
  m.get_function("f")(A, I, O, Q);
  for (int64_t i = 0; i < 7; ++i) {
    int64_t d = i - 3;
    int64_t floordiv = d >= 0 ? d / 2 : -((-d + 1) / 2), floormod = ((d % 4) + 4) % 4;
    float expect = a[i] * 0.1f;
    expect = expect + static_cast<float>(std::exp(static_cast<double>(a[i])));
    expect = expect - static_cast<float>(floordiv);
    expect = expect + static_cast<float>(floormod);
    EXPECT_EQ(O.data_as<float>()[i], expect) << i;
    EXPECT_EQ(Q.data_as<int8_t>()[i], static_cast<int8_t>(static_cast<int8_t>(q_in[i] * 3) + 100)) << i;
  }
}

TEST(Ref, VectorsLocalBuffersLetsAndBranches) {
  Module m = build_ref(R"(
@g = prim_func(%X: Buffer[(8), float32], %Y: Buffer[(8), float32]) {
  alloc %T: Buffer[(8), float32, scope="local"] {
    %T[ramp(0, 1, 8)] = %X[ramp(0, 1, 8)] * broadcast(2.0, 8);
    for %i: int64 from 0 extent 8 unrolled {
      let %v: float32 = %T[7 - %i] {
        if %v > 0.0 {
          %Y[%i] = select(%i % 2 == 0, %v, 0.0 - %v);
        } else {
          %Y[%i] = (let %w: float32 = max(%v, -1.0) in %w * %w);
        }
      }
    }
  }
}
)");
  std::vector<float> x = random_floats(8, 2);
  NDArray X = tensor({8}, DataType::Float(32), x), Y = NDArray::empty({8}, DataType::Float(32));
  m.get_function("g")(X, Y);
  for (int i = 0; i < 8; ++i) {
    float v = x[7 - i] * 2.0f;
    float expect = v > 0 ? (i % 2 == 0 ? v : -v) : std::max(v, -1.0f) * std::max(v, -1.0f);
    EXPECT_EQ(Y.data_as<float>()[i], expect) << i;
  }
}

TEST(Ref, FaultsAreErrorsThatNameTheFunctionAndTheAccess) {
  Module m = build_ref(R"(
@oob = prim_func(%X: Buffer[(4), float32], %Y: Buffer[(4), float32]) {
  for %i: int64 from 0 extent 5 { %Y[%i] = %X[%i]; }
}
@div = prim_func(%X: Buffer[(4), int32], %Y: Buffer[(4), int32]) {
  for %i: int64 from 0 extent 4 { %Y[%i] = %X[%i] // int32(0); }
}
@intrin = prim_func(%X: Buffer[(4), float32], %Y: Buffer[(4), float32]) {
  for %i: int64 from 0 extent 4 { %Y[%i] = call(float32, "expp", %X[%i]); }
}
)");
  NDArray f = NDArray::empty({4}, DataType::Float(32)), g = NDArray::empty({4}, DataType::Float(32));
  NDArray i = NDArray::empty({4}, DataType::Int(32)), j = NDArray::empty({4}, DataType::Int(32));
  EXPECT_EQ(error_of([&] { m.get_function("oob")(f, g); }), "@oob: load from 'X'[4] is out of bounds (element 4 of 4)");
  EXPECT_EQ(error_of([&] { m.get_function("div")(i, j); }), "@div: integer division by zero in %X[%i] // int32(0)");
  EXPECT_EQ(error_of([&] { m.get_function("intrin")(f, g); }),
            "@intrin: unknown intrinsic 'expp'; did you mean 'exp'?");
  EXPECT_EQ(error_of([&] { m.get_function("oob")(f, i); }),
            "@oob: argument 1 (buffer 'Y') has dtype int32, expected float32");
  EXPECT_EQ(error_of([&] { m.get_function("oob")(f); }), "@oob: takes 2 tensors (or 2 values), got 1");
  NDArray five = NDArray::empty({5}, DataType::Float(32));
  EXPECT_EQ(error_of([&] { m.get_function("oob")(f, five); }),
            "@oob: argument 1 (buffer 'Y') has dimension 0 = 5, but the buffer says 4 = 4");
}

TEST(Ref, GraphFunctionsRunThroughTheVMAndExport) {
  const std::string text = R"(
@main = fn(%x: Tensor[(%b: int64, 5), float32]) -> (Tensor[(%b, 5), float32], Tensor[(%b, 5), float32]) {
  let %y = call_dps<Tensor[(%b, 5), float32]>(@affine, (%x,));
  let %z = call_dps<Tensor[(%b, 5), float32]>(@relu, (%y,));
  (%z, %y)
}
@affine = prim_func(%X: Buffer[(%n, 5), float32], %Y: Buffer[(%n, 5), float32], %n: int64) {
  for %i: int64 from 0 extent %n { for %j: int64 from 0 extent 5 { %Y[%i, %j] = %X[%i, %j] * 3.0 - 1.0; } }
}
@relu = prim_func(%X: Buffer[(%n, 5), float32], %Y: Buffer[(%n, 5), float32], %n: int64) {
  for %i: int64 from 0 extent %n { for %j: int64 from 0 extent 5 { %Y[%i, %j] = max(%X[%i, %j], 0.0); } }
}
)";
  Module built = build_ref(text);
  EXPECT_EQ(built->type_key(), "vm");
  ASSERT_EQ(built.imports().size(), 1u);
  EXPECT_EQ(built.imports()[0]->type_key(), "ref");
  test::TempDir dir;
  runtime::export_library(built, dir.file("model.so"));
  Module loaded = runtime::load_module(dir.file("model.so"));
  for (const Module& m : {built, loaded}) {
    for (int64_t b : {1, 3, 6}) {
      std::vector<float> x = random_floats(static_cast<size_t>(b * 5), static_cast<unsigned>(b));
      Array out = m.get_function("main")(tensor({b, 5}, DataType::Float(32), x)).cast<Array>();
      NDArray z = out[0].cast<NDArray>(), y = out[1].cast<NDArray>();
      for (size_t k = 0; k < x.size(); ++k) {
        float affine = x[k] * 3.0f - 1.0f;
        ASSERT_EQ(y.data_as<float>()[k], affine);
        ASSERT_EQ(z.data_as<float>()[k], std::max(affine, 0.0f));
      }
    }
  }
}

TEST(Ref, ExternFunctionsAndUnknownTargetsAreRefused) {
  // A kind that does not build itself leaves its functions to the target's
  // codegen, which refuses them.
  if (!ir::ExternKindRegistry::entry("ref_test_blob")) {
    ir::ExternKindRegistry::register_kind("ref_test_blob", Function::typed([](ObjectRef, std::string) {}),
                                          "a test kind");
  }
  ir::IRModule blob = text::parse_module(R"(
@fast = extern "ref_test_blob" dps fn(Tensor[(16), float32], Tensor[(16), float32]) -> none payload "ret"
)");
  EXPECT_EQ(error_of([&] { driver::build_kernels(blob, target::Target("ref")); }),
            "ref: @fast is an extern function of kind 'ref_test_blob'; the reference interpreter runs prim functions "
            "only");
  // A kind nobody registers stops a build at the input's check.
  ir::IRModule unknown = text::parse_module(R"(
@fast = extern "npu_x" dps fn(Tensor[(16), float32], Tensor[(16), float32]) -> none payload "ret"
)");
  EXPECT_EQ(error_of([&] { driver::build(unknown, target::Target("ref")); }),
            "build: the module is not well formed (1 problem):\n  @fast: no extern kind named 'npu_x' is registered or "
            "provided by a plugin");
  EXPECT_EQ(error_of([&] { target::CodegenRegistry::get("vulkan_x"); }),
            "no codegen for target kind 'vulkan_x': none is registered and no plugin in the search path provides "
            "'codegen:vulkan_x'");
}

}  // namespace loom
