// The loop passes numerically: operators lowered, then "scheduled" by the
// test (innermost loops split by 4 with a guard, the inner part marked
// vectorized, small outer loops unrolled), then the loop passes; the
// results must be bit-identical to the unscheduled lowering.  And the
// intrinsic expansions against the C library.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/text/text.h"
#include "loom/object/traversal.h"
#include "loom/runtime/ndarray.h"
#include "loom/target/target.h"
#include "loom/tir/function.h"
#include "loom/tir/intrinsic.h"
#include "loom/transform/pass.h"
#include "test_util.h"

namespace loom {
using runtime::NDArray;

namespace {
config::Config config_with(const std::string& passes) {
  return config::parse_config("target:\n  kind: ref\npipeline:\n  passes: " + passes + "\n", "loop.yaml");
}

ir::IRModule run(const std::vector<std::string>& names, const ir::IRModule& module) {
  std::vector<transform::Pass> passes;
  for (const std::string& name : names) passes.push_back(transform::PassRegistry::get(name));
  return transform::sequential(passes)(module, transform::PassContext());
}

// The test's schedule: every innermost loop of constant extent n > 1
// becomes `for o in ceil(n / 4): for v in 4 vectorized: if o*4+v < n:
// body[i := o*4+v]`; loops of extent 2 or 3 holding loops are unrolled.
tir::Stmt schedule(const tir::Stmt& s) {
  Mutator m(false);
  m.on<tir::ForNode>([&](const tir::ForNode* f, const ObjectRef& self) -> Any {
    tir::Stmt body = downcast<tir::Stmt>(m.mutate_children(self)).as<tir::ForNode>()->body;
    const auto* extent = f->extent.as<tir::IntImmNode>();
    bool innermost = true;
    Visitor v;
    v.on<tir::ForNode>([&](const tir::ForNode*) { innermost = false; });
    v.visit(Any(f->body));
    if (!extent || extent->value < 2) return Any(tir::For(f->loop_var, f->min, f->extent, f->for_kind(), body));
    if (!innermost) {
      auto kind = extent->value <= 3 ? tir::ForKind::kUnrolled : tir::ForKind::kSerial;
      return Any(tir::For(f->loop_var, f->min, f->extent, kind, body));
    }
    int64_t n = extent->value;
    tir::Var o(f->loop_var->name + "_o", DataType::Int(64)), vv(f->loop_var->name + "_v", DataType::Int(64));
    tir::PrimExpr at = tir::Add(tir::Add(f->min, tir::Mul(o, tir::PrimExpr(int64_t{4}))), vv);
    Mutator sub(false);
    sub.on<tir::VarNode>([&](const tir::VarNode* var, const ObjectRef& me) -> Any {
      return var == f->loop_var.get() ? Any(at) : Any(me);
    });
    tir::Stmt guarded =
        tir::IfThenElse(tir::LT(tir::Sub(at, f->min), tir::PrimExpr(n)), sub.mutate_as<tir::Stmt>(body));
    return Any(tir::For(
        o, tir::PrimExpr(int64_t{0}), tir::PrimExpr((n + 3) / 4), tir::ForKind::kSerial,
        tir::For(vv, tir::PrimExpr(int64_t{0}), tir::PrimExpr(int64_t{4}), tir::ForKind::kVectorized, guarded)));
  });
  return m.mutate_as<tir::Stmt>(s);
}

ir::IRModule scheduled(const ir::IRModule& lowered) {
  ir::IRModule out = lowered;
  for (const std::string& name : lowered.names()) {
    const auto* f = lowered.lookup(name).as<tir::PrimFuncNode>();
    if (!f) continue;
    std::vector<Any> params(f->params.begin(), f->params.end());
    out = out.with_function(name, tir::PrimFunc(params, schedule(f->body), f->ret, f->attrs));
  }
  return out;
}

NDArray random_tensor(const std::vector<int64_t>& shape, unsigned seed) {
  NDArray a = NDArray::empty(shape, DataType::Float(32));
  std::vector<float> v = test::random_floats(static_cast<size_t>(a->numel()), seed, -2, 2);
  std::memcpy(a.data_as<float>(), v.data(), v.size() * sizeof(float));
  return a;
}
}  // namespace

TEST(LoopPasses, ScheduledLoweringsGiveBitIdenticalResults) {
  const std::vector<std::string> loop_passes = {"FlattenBuffer", "Simplify",       "LoopPartition", "VectorizeLoop",
                                                "UnrollLoop",    "StorageRewrite", "Simplify"};
  struct Case {
    std::string params, body;
    std::vector<std::vector<int64_t>> shapes;
    bool vectorizes = true;
  };
  for (const Case& c : std::vector<Case>{
           {"%x: Tensor[(3, 7), float32], %y: Tensor[(7,), float32]", "relu(tanh(add(%x, %y)))", {{3, 7}, {7}}},
           {"%x: Tensor[(5, 9), float32]", "softmax(%x)", {{5, 9}}},
           {"%x: Tensor[(4, 6), float32], %w: Tensor[(6, 5), float32]", "matmul(%x, %w)", {{4, 6}, {6, 5}}, false},
           {"%x: Tensor[(1, 2, 6, 5), float32], %w: Tensor[(3, 2, 3, 3), float32]",
            "max_pool2d(conv2d(%x, %w, padding=[1]), pool_size=[2], strides=[2])",
            {{1, 2, 6, 5}, {3, 2, 3, 3}}},
           {"%x: Tensor[(6, 10), float32], %g: Tensor[(10,), float32]", "layer_norm(%x, %g, %g)", {{6, 10}, {10}}}}) {
    SCOPED_TRACE(c.body);
    ir::IRModule model = text::parse_module("@main = fn(" + c.params + ") { " + c.body + " }");
    config::Config o0 = config_with("[O0]");
    ir::IRModule lowered = o0.pipeline()(o0.constrain(model), o0.context);
    ir::IRModule loops = run(loop_passes, scheduled(lowered));
    std::string text = text::print_module(loops);
    // Something was vectorized, unless every innermost loop is a reduction
    // (matmul): those stay serial, saying why.  (conv2d's padded copy of
    // its input is elementwise.)
    EXPECT_EQ(text.find("ramp(") != std::string::npos, c.vectorizes) << text;
    EXPECT_EQ(text.find(" vectorized {"), std::string::npos) << text;
    EXPECT_EQ(text.find(" unrolled {"), std::string::npos) << text;
    std::vector<Any> args;
    for (size_t i = 0; i < c.shapes.size(); ++i) args.push_back(Any(random_tensor(c.shapes[i], 40 + i)));
    config::Config none = config_with("[]");
    NDArray want = driver::build(lowered, none)
                       .get_function("main")
                       .call(args.data(), static_cast<int32_t>(args.size()))
                       .cast<NDArray>();
    NDArray got = driver::build(loops, none)
                      .get_function("main")
                      .call(args.data(), static_cast<int32_t>(args.size()))
                      .cast<NDArray>();
    ASSERT_EQ(got.shape_vector(), want.shape_vector());
    EXPECT_EQ(std::memcmp(got.data_as<float>(), want.data_as<float>(), want->nbytes()), 0);
  }
}

TEST(LoopPasses, IntrinsicExpansionsAgreeWithTheCLibrary) {
  using Ref = double (*)(double);
  const std::vector<std::pair<std::string, Ref>> cases = {{"rsqrt", [](double x) { return 1 / std::sqrt(x); }},
                                                          {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
                                                          {"tanh", [](double x) { return std::tanh(x); }},
                                                          {"erf", [](double x) { return std::erf(x); }},
                                                          {"exp2", [](double x) { return std::exp2(x); }},
                                                          {"log2", [](double x) { return std::log2(x); }},
                                                          {"log10", [](double x) { return std::log10(x); }}};
  for (const auto& [op, ref] : cases) {
    SCOPED_TRACE(op);
    bool positive = op == "rsqrt" || op.rfind("log", 0) == 0;
    ir::IRModule m = text::parse_module(
        "@f = prim_func(%X: Buffer[(257), float32], %Y: Buffer[(257), float32]) {\n"
        "  for %i: int64 from 0 extent 257 {\n    %Y[%i] = call(float32, \"" +
        op + "\", %X[%i]);\n  }\n}\n");
    // The host CPU target implements no intrinsic natively: all expand.
    ir::IRModule lowered = run({"LowerIntrinsics"}, target::with_target(m, target::Target("cpu", Map::empty())));
    std::string text = text::print_module(lowered);
    EXPECT_EQ(text.find("\"" + op + "\""), std::string::npos) << text;
    NDArray x = NDArray::empty({257}, DataType::Float(32)), y = NDArray::empty({257}, DataType::Float(32));
    for (int i = 0; i < 257; ++i) x.data_as<float>()[i] = positive ? 0.01f + i * 0.05f : -6.0f + i * (12.0f / 256);
    driver::build(lowered.with_attr("target", target::Target("ref", Map::empty())), config_with("[]"))
        .get_function("f")(x, y);
    for (int i = 0; i < 257; ++i) {
      double want = ref(x.data_as<float>()[i]);
      EXPECT_NEAR(y.data_as<float>()[i], want, 3e-7 + 2e-6 * std::fabs(want)) << "x = " << x.data_as<float>()[i];
    }
  }
  // The ref target implements them all: nothing expands.
  ir::IRModule m = text::parse_module(
      "@f = prim_func(%X: Buffer[(2), float32], %Y: Buffer[(2), float32]) {\n  %Y[0] = call(float32, \"erf\", "
      "%X[0]);\n}\n");
  ir::IRModule kept = run({"LowerIntrinsics"}, target::with_target(m, target::Target("ref", Map::empty())));
  EXPECT_NE(text::print_module(kept).find("\"erf\""), std::string::npos);
  // Unknown intrinsics and wrong arity are errors naming the function.
  std::string e = test::error_of([] {
    run({"LowerIntrinsics"}, text::parse_module("@g = prim_func(%X: Buffer[(2), float32]) {\n  %X[0] = call(float32, "
                                                "\"expp\", %X[1]);\n}\n"));
  });
  EXPECT_NE(e.find("@g: "), std::string::npos) << e;
  EXPECT_NE(e.find("expp"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'exp'"), std::string::npos) << e;
  e = test::error_of([] {
    run({"LowerIntrinsics"}, text::parse_module("@g = prim_func(%X: Buffer[(2), float32]) {\n  %X[0] = call(float32, "
                                                "\"pow\", %X[1]);\n}\n"));
  });
  EXPECT_NE(e.find("@g: intrinsic 'pow' takes 2 argument(s), got 1"), std::string::npos) << e;
}

TEST(LoopPasses, RefusalsAndLimitsAreReported) {
  // A vectorized loop longer than max_lanes and an unrolled loop of a
  // symbolic extent stay serial, annotated with the reason.
  ir::IRModule m = text::parse_module(R"(@f = prim_func(%X: Buffer[(%n: int64), float32]) {
  for %i: int64 from 0 extent 100 vectorized {
    %X[%i] = 0.0;
  }
  for %j: int64 from 0 extent %n unrolled {
    %X[%j] = 1.0;
  }
}
)");
  std::string text = text::print_module(run({"VectorizeLoop", "UnrollLoop"}, m));
  EXPECT_NE(text.find("vectorize_refused: \"its extent 100 exceeds VectorizeLoop.max_lanes (64)\""), std::string::npos)
      << text;
  EXPECT_NE(text.find("unroll_refused: \"its extent is not a constant\""), std::string::npos) << text;
  EXPECT_EQ(text.find(" vectorized {"), std::string::npos) << text;
}

}  // namespace loom
