// The graph pass library, beyond its golden files (tests/fixtures/passes,
// run by loom_pass_golden): constant folding checked numerically, named
// pipelines from YAML, and a disabled pass that is really skipped.
#include <gtest/gtest.h>

#include <cstring>

#include "loom/config/config.h"
#include "loom/driver/build.h"
#include "loom/graph/function.h"
#include "loom/object/traversal.h"
#include "loom/text/text.h"
#include "loom/runtime/ndarray.h"
#include "loom/support/strings.h"
#include "loom/transform/pass.h"
#include "test_util.h"

namespace loom {
using runtime::NDArray;

namespace {
ir::IRModule run(const std::vector<std::string>& names, const ir::IRModule& module,
                 const transform::PassContext& context = transform::PassContext()) {
  std::vector<transform::Pass> passes;
  for (const std::string& name : names) passes.push_back(transform::PassRegistry::get(name));
  return transform::sequential(passes)(module, context);
}

NDArray floats(std::vector<int64_t> shape, std::vector<float> values) {
  NDArray a = NDArray::empty(shape, DataType::Float(32));
  std::memcpy(a.data_as<float>(), values.data(), values.size() * sizeof(float));
  return a;
}

// main(x) = add(x, relu(add(c1, c2)))
ir::IRModule constant_module() {
  graph::Var x("x", tir::tensor_type({3}, DataType::Float(32)));
  graph::Constant c1(floats({3}, {1, -5, 2})), c2(floats({3}, {0.5f, 1, -4}));
  graph::Var s("s");
  ir::Expr body = graph::Let(s, graph::Call(ir::Op::get("add"), {c1, c2}),
                             graph::Call(ir::Op::get("add"), {x, graph::Call(ir::Op::get("relu"), {s})}));
  return ir::IRModule(std::map<std::string, Any>{{"main", graph::Function({x}, body)}});
}
}  // namespace

TEST(Passes, FoldConstantEvaluatesConstantSubgraphs) {
  ir::IRModule folded = run({"FoldConstant", "DeadCodeElimination"}, constant_module());
  const auto* main = folded.lookup("main").as<graph::FunctionNode>();
  const auto* add = main->body.as<graph::CallNode>();
  ASSERT_NE(add, nullptr) << text::print_module(folded);
  const auto* constant = add->args[1].as_object_ref().as<graph::ConstantNode>();
  ASSERT_NE(constant, nullptr) << text::print_module(folded);
  const float* v = constant->data.data_as<float>();
  EXPECT_EQ(v[0], 1.5f);
  EXPECT_EQ(v[1], 0.0f);
  EXPECT_EQ(v[2], 0.0f);
  EXPECT_EQ(add->args[0].as_object_ref().as<graph::VarNode>()->name, "x");
}

// reshape, expand_dims and squeeze of a constant fold to its bytes under
// the new shape (copied, not run through the interpreter); an operator
// that moves elements (transpose) still goes through it.
TEST(Passes, FoldConstantRenamesShapesWithoutMovingBytes) {
  auto ints = [](std::vector<int64_t> v) {
    std::vector<Any> items(v.begin(), v.end());
    return Any(Array(items));
  };
  graph::Var x("x", tir::tensor_type({2, 3}, DataType::Float(32)));
  graph::Constant c(floats({3, 2}, {1, 2, 3, 4, 5, 6}));
  ir::Expr renamed = graph::Call(ir::Op::get("reshape"), {c}, Map(std::map<std::string, Any>{{"shape", ints({2, 3})}}));
  renamed = graph::Call(ir::Op::get("expand_dims"), {renamed}, Map(std::map<std::string, Any>{{"axis", Any(0)}}));
  renamed = graph::Call(ir::Op::get("squeeze"), {renamed}, Map(std::map<std::string, Any>{{"axis", ints({0})}}));
  ir::Expr moved = graph::Call(ir::Op::get("transpose"), {c}, Map(std::map<std::string, Any>{{"axes", ints({1, 0})}}));
  ir::Expr body = graph::Call(ir::Op::get("add"), {graph::Call(ir::Op::get("add"), {x, renamed}), moved});
  ir::IRModule folded =
      run({"FoldConstant"}, ir::IRModule(std::map<std::string, Any>{{"main", graph::Function({x}, body)}}));
  const auto* outer = folded.lookup("main").as<graph::FunctionNode>()->body.as<graph::CallNode>();
  ASSERT_NE(outer, nullptr) << text::print_module(folded);
  const auto* inner = outer->args[0].as_object_ref().as<graph::CallNode>();
  ASSERT_NE(inner, nullptr) << text::print_module(folded);
  const auto* same = inner->args[1].as_object_ref().as<graph::ConstantNode>();
  const auto* transposed = outer->args[1].as_object_ref().as<graph::ConstantNode>();
  ASSERT_TRUE(same && transposed) << text::print_module(folded);
  EXPECT_EQ(same->data.shape_vector(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(transposed->data.shape_vector(), (std::vector<int64_t>{2, 3}));
  const float* s = same->data.data_as<float>();
  const float* t = transposed->data.data_as<float>();
  std::vector<float> want_same{1, 2, 3, 4, 5, 6}, want_transposed{1, 3, 5, 2, 4, 6};
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(s[k], want_same[k]) << k;
    EXPECT_EQ(t[k], want_transposed[k]) << k;
  }
  EXPECT_NE(same->data.data_as<float>(), c->data.data_as<float>());  // a copy: constants own their bytes
}

TEST(Passes, NamedPipelinesAreSelectableFromYaml) {
  for (const std::string name : {"O0", "cpu"}) {
    config::Config config = config::parse_config(
        "target:\n  kind: ref\npipeline:\n  opt-level: 2\n  passes: [" + name + "]\n", name + ".yaml");
    ir::IRModule out = config.pipeline()(config.constrain(constant_module()), config.context);
    std::string text = text::print_module(out);
    // Both lower every operator; only default folds the constant add.
    EXPECT_EQ(text.find("relu("), std::string::npos) << text;
    EXPECT_EQ(text.find("let %s = call_dps") != std::string::npos, name == "O0") << text;
    runtime::Module built = driver::build(constant_module(), config);
    NDArray y = built.get_function("main")(floats({3}, {1, 2, 3})).cast<NDArray>();
    EXPECT_EQ(y.data_as<float>()[0], 2.5f) << name;
    EXPECT_EQ(y.data_as<float>()[1], 2.0f) << name;
    EXPECT_EQ(y.data_as<float>()[2], 3.0f) << name;
  }
}

namespace {
const char* kConvChain = R"(
@main = fn(%x: Tensor[(1, 3, 7, 7), float32], %w1: Tensor[(4, 3, 3, 3), float32], %w2: Tensor[(4, 4, 3, 3), float32], %b: Tensor[(4, 1, 1), float32]) -> Tensor[(1, 4, 7, 7), float32] {
  let %c1 = conv2d(%x, %w1, padding=[1]);
  let %c2 = conv2d(%c1, %w2, padding=[1]);
  let %cb = add(%c2, %b);
  let %r = relu(%cb);
  let %t = tanh(%r);
  sigmoid(%t)
}
)";

std::string function_names(const ir::IRModule& m) { return join(m.names(), " "); }

config::Config fusing_config(const std::string& passes) {
  return config::parse_config("target:\n  kind: ref\npipeline:\n  opt-level: 2\n  passes: " + passes + "\n",
                              "fuse.yaml");
}

// A user's fusion pass: the two convolutions of kConvChain into one
// primitive function of its own, before the built-in fuser runs.
transform::Pass user_double_conv() {
  return transform::module_pass(
      transform::PassInfo::named("UserFuseDoubleConv")
          .summary("test: fuses conv2d(conv2d(x)) its own way")
          .required({"InferType"}),
      [](const ir::IRModule& m, const transform::PassContext&) {
        const auto* main = m.lookup("main").as<graph::FunctionNode>();
        const auto* l1 = main->body.as<graph::LetNode>();
        const auto* l2 = l1->body.as<graph::LetNode>();
        graph::Var x("x", main->params[0].cast<graph::Var>()->annotation);
        graph::Var w1("w1", main->params[1].cast<graph::Var>()->annotation);
        graph::Var w2("w2", main->params[2].cast<graph::Var>()->annotation);
        const auto* conv1 = l1->value.as<graph::CallNode>();
        graph::Var c1("c1"), c2("c2");
        ir::Expr body = graph::Let(c1, graph::Call(conv1->callee, {x, w1}, conv1->attrs),
                                   graph::Let(c2, graph::Call(conv1->callee, {c1, w2}, conv1->attrs), c2));
        graph::Function fused({x, w1, w2}, body, l2->var->checked_type, Map({{"primitive", int64_t{1}}}));
        graph::Call call(
            ir::GlobalVar("user_double_conv"),
            {main->params[0].cast<ir::Expr>(), main->params[1].cast<ir::Expr>(), main->params[2].cast<ir::Expr>()});
        ir::Expr rest = graph::Let(l2->var, call, l2->body);
        std::vector<graph::Var> params;
        for (const Any& p : main->params) params.push_back(p.cast<graph::Var>());
        return m.with_function("user_double_conv", fused)
            .with_function("main", graph::Function(params, rest, main->ret_type));
      });
}
}  // namespace

TEST(Passes, FusionGroupsAndTheirDepthLimit) {
  ir::IRModule chain = text::parse_module(kConvChain);
  config::Config config = fusing_config("[InferType, FuseOps]");
  EXPECT_EQ(function_names(config.pipeline()(config.constrain(chain), config.context)),
            "fused_conv2d_add_relu_tanh_sigmoid main");
  config = fusing_config("[InferType, {name: FuseOps, options: {max_depth: 3}}]");
  EXPECT_EQ(function_names(config.pipeline()(config.constrain(chain), config.context)),
            "fused_conv2d_add_relu fused_tanh_sigmoid main");
}

TEST(Passes, AUserFusionRunsFirstAndTheBuiltInFuserTakesTheTail) {
  static const bool registered = [] {
    transform::PassRegistry::register_pass(user_double_conv());
    return true;
  }();
  (void)registered;
  ir::IRModule chain = text::parse_module(kConvChain);
  config::Config config = fusing_config("[UserFuseDoubleConv, FuseOps]");
  ir::IRModule fused = config.pipeline()(config.constrain(chain), config.context);
  EXPECT_EQ(function_names(fused), "fused_user_double_conv_add_relu_tanh_sigmoid main user_double_conv");
  std::string text = text::print_module(fused);
  EXPECT_NE(text.find("  @fused_user_double_conv_add_relu_tanh_sigmoid(%x, %w1, %w2, %b)\n}"), std::string::npos)
      << text;

  // Whatever the fusion, the numbers are those of the unfused model.
  std::vector<NDArray> args = {floats({1, 3, 7, 7}, test::random_floats(147, 1, -1, 1)),
                               floats({4, 3, 3, 3}, test::random_floats(108, 2, -1, 1)),
                               floats({4, 4, 3, 3}, test::random_floats(144, 3, -1, 1)),
                               floats({4, 1, 1}, test::random_floats(4, 4, -1, 1))};
  auto run_with = [&](const std::string& passes) {
    runtime::Module m = driver::build(chain, fusing_config(passes));
    return m.get_function("main")(args[0], args[1], args[2], args[3]).cast<NDArray>();
  };
  NDArray reference = run_with("[O0]");
  for (const std::string passes : {"[default]", "[UserFuseDoubleConv, default]"}) {
    NDArray y = run_with(passes);
    ASSERT_EQ(y.shape_vector(), reference.shape_vector());
    for (int64_t i = 0; i < y->numel(); ++i)
      ASSERT_EQ(y.data_as<float>()[i], reference.data_as<float>()[i]) << passes << " " << i;
  }
  // After default, main calls one fused prim function whose intermediates
  // are allocated inside it, flattened: the elementwise ones inlined by
  // AutoSchedule (a convolution reads no inlined value), the first
  // convolution's result and the two padded inputs left, the padded
  // inputs sharing one allocation (StorageRewrite); the second
  // convolution accumulates in one tile's worth allocated in the tile's
  // loop (AutoSchedule's allocate_at), as its epilogue follows it.  The
  // two padded inputs were both X_pad: the schedule names the second
  // X_pad_1 (tir::Schedule keeps buffer names unique).
  config = fusing_config("[UserFuseDoubleConv, default]");
  text = text::print_module(config.pipeline()(config.constrain(chain), config.context));
  EXPECT_NE(text.find("@fused_user_double_conv_add_relu_tanh_sigmoid = prim_func("), std::string::npos) << text;
  EXPECT_NE(
      text.find("alloc %X_pad_X_pad_1: Buffer[(324), float32] {\n    alloc %c1: Buffer[(196), float32] {\n      for"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("alloc %c2: Buffer[(32), float32] {"), std::string::npos) << text;
  EXPECT_EQ(text.find("@relu = prim_func"), std::string::npos) << text;
}

// Channels-last computes the same sums in the same order: bit-identical,
// with batch_norm's axis moved and a lower-rank bias reshaped.
TEST(Passes, ConvertLayoutKeepsTheNumbers) {
  ir::IRModule model = text::parse_module(R"(
@main = fn(%x: Tensor[(2, 3, 9, 8), float32], %w1: Tensor[(6, 3, 3, 3), float32], %w2: Tensor[(6, 2, 3, 3), float32], %g: Tensor[(6), float32], %b: Tensor[(6, 1, 1), float32]) {
  let %c1 = conv2d(%x, %w1, padding=[1], strides=[2, 1]);
  let %n = batch_norm(%c1, %g, %g, %g, %g);
  let %c2 = conv2d(clip(add(%n, %b), a_min=0.0, a_max=6.0), %w2, groups=3, padding=[1]);
  avg_pool2d(sigmoid(%c2), pool_size=[3], padding=[1])
}
)");
  std::vector<NDArray> args = {floats({2, 3, 9, 8}, test::random_floats(432, 11, -1, 1)),
                               floats({6, 3, 3, 3}, test::random_floats(162, 12, -1, 1)),
                               floats({6, 2, 3, 3}, test::random_floats(108, 13, -1, 1)),
                               floats({6}, test::random_floats(6, 14, 0.5f, 1.5f)),
                               floats({6, 1, 1}, test::random_floats(6, 15, -1, 1))};
  auto run_with = [&](const std::string& passes) {
    runtime::Module m = driver::build(model, fusing_config(passes));
    return m.get_function("main")(args[0], args[1], args[2], args[3], args[4]).cast<NDArray>();
  };
  NDArray reference = run_with("[O0]"), converted = run_with("[ConvertLayout, default]");
  ASSERT_EQ(converted.shape_vector(), reference.shape_vector());
  EXPECT_EQ(std::memcmp(converted.data_as<float>(), reference.data_as<float>(), reference->nbytes()), 0);
  config::Config config = fusing_config("[ConvertLayout]");
  std::string text = text::print_module(config.pipeline()(config.constrain(model), config.context));
  EXPECT_NE(text.find("batch_norm(%c1_nhwc, %g, %g, %g, %g, axis=3)"), std::string::npos) << text;
  EXPECT_NE(text.find("avg_pool2d(%t2_nhwc, layout=\"NHWC\""), std::string::npos) << text;
  EXPECT_EQ(text.find("transpose(%c2_nhwc"), std::string::npos) << text;  // no round trip between converted ops
}

// A constant weight is re-laid out by ConvertLayout itself (no transpose
// call left for FoldConstant's interpreter), element for element.
TEST(Passes, ConvertLayoutRelaysConstantWeightsItself) {
  graph::Var x("x", tir::tensor_type({1, 3, 6, 7}, DataType::Float(32)));
  NDArray w = floats({5, 3, 2, 4}, test::random_floats(120, 21, -1, 1));
  ir::Expr body = graph::Call(ir::Op::get("conv2d"), {x, graph::Constant(w)});
  ir::IRModule model(std::map<std::string, Any>{{"main", graph::Function({x}, body)}});
  config::Config config = fusing_config("[ConvertLayout]");
  ir::IRModule out = config.pipeline()(config.constrain(model), config.context);
  std::string text = text::print_module(out);
  EXPECT_EQ(text.find("transpose(meta"), std::string::npos) << text;
  const graph::ConstantNode* relaid = nullptr;
  Visitor find;
  find.on<graph::ConstantNode>([&](const graph::ConstantNode* c) { relaid = c; });
  find.visit(out.lookup("main"));
  ASSERT_NE(relaid, nullptr) << text;
  ASSERT_EQ(relaid->data.shape_vector(), (std::vector<int64_t>{5, 2, 4, 3}));  // OIHW -> OHWI
  for (int64_t o = 0; o < 5; ++o)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t k = 0; k < 4; ++k)
          ASSERT_EQ(relaid->data.data_as<float>()[((o * 2 + h) * 4 + k) * 3 + i],
                    w.data_as<float>()[((o * 3 + i) * 2 + h) * 4 + k]);
  // And the model computes what it did channels-first.
  NDArray input = floats({1, 3, 6, 7}, test::random_floats(126, 22, -1, 1));
  NDArray reference = driver::build(model, fusing_config("[O0]")).get_function("main")(input).cast<NDArray>();
  NDArray converted =
      driver::build(model, fusing_config("[ConvertLayout, default]")).get_function("main")(input).cast<NDArray>();
  EXPECT_EQ(std::memcmp(converted.data_as<float>(), reference.data_as<float>(), reference->nbytes()), 0);
}

TEST(Passes, ADisabledPassIsReallySkipped) {
  config::Config config = config::parse_config(R"(
target:
  kind: ref
pipeline:
  opt-level: 3
  passes:
    - FoldConstant
    - DeadCodeElimination
  disabled: [FoldConstant]
)",
                                               "disabled.yaml");
  ir::IRModule input = config.constrain(constant_module());
  ir::IRModule out = config.pipeline()(input, config.context);
  // Nothing was folded: the add of the two constants is still there.
  std::string text = text::print_module(out);
  EXPECT_NE(text.find("let %s = add(meta[1], meta[2]);"), std::string::npos) << text;
  config.context.disabled.clear();
  text = text::print_module(config.pipeline()(input, config.context));
  EXPECT_EQ(text.find("let %s"), std::string::npos) << text;
}

}  // namespace loom

namespace loom {
// The ordering rules of the pass library are contracts (docs/passes.md,
// "Pass contracts"): a pipeline that breaks one stops before the pass
// that would run on the wrong IR, naming what is missing and who makes it.
TEST(Passes, APipelineThatBreaksAnOrderingRuleIsRefused) {
  const char* model = R"(
@main = fn(%a: Tensor[(4, 8), float32], %b: Tensor[(8, 16), float32]) { relu(matmul(%a, %b)) }
)";
  auto error = [&](const std::string& passes) {
    config::Config config =
        config::parse_config("target: {kind: ref}\npipeline: {passes: " + passes + "}\n", "order.yaml");
    return test::error_of([&] { config.pipeline()(config.constrain(text::parse_module(model)), config.context); });
  };
  EXPECT_EQ(error("[O0, AutoSchedule, VectorizeLoop, FlattenBuffer]"),
            "pass 'VectorizeLoop' needs the property 'buffers_flat' (every buffer a prim function for a CPU target "
            "allocates or accesses is one-dimensional and compact), which does not hold here (@matmul: buffer 'C' is "
            "written with 2 dimensions); pass 'FlattenBuffer' establishes it: run FlattenBuffer before VectorizeLoop");
  EXPECT_EQ(error("[InferType, LegalizeOps, FuseTIR]"),
            "pass 'FuseTIR' needs the property 'fused' (operator calls are grouped into primitive functions), which "
            "does not hold here; pass 'FuseOps' establishes it: run FuseOps before FuseTIR");
  EXPECT_EQ(error("[FuseOps, FuseTIR]"),
            "pass 'FuseTIR' needs the property 'ops_lowered' (no graph function calls an operator that has a lowering "
            "(FLower)), which does not hold here (@fused_matmul_relu calls the operator 'matmul', which has a "
            "lowering); pass 'LegalizeOps' establishes it: run LegalizeOps before FuseTIR");
  // A pass that needs types gets InferType run for it: no InferType listed.
  config::Config config =
      config::parse_config("target: {kind: ref}\npipeline: {passes: [LegalizeOps]}\n", "types.yaml");
  auto timing = std::make_shared<transform::TimingInstrument>();
  config.context.instruments.push_back(timing);
  ir::IRModule lowered = config.pipeline()(config.constrain(text::parse_module(model)), config.context);
  EXPECT_EQ(text::print_module(lowered).find("matmul("), std::string::npos);
  std::vector<std::string> ran;
  for (const auto& row : timing->rows()) ran.push_back(row.pass);
  EXPECT_EQ(ran, (std::vector<std::string>{"pipeline", "InferType", "LegalizeOps"}));
}
}  // namespace loom
