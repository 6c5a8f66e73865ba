// Patterns over graph expressions (docs/partitioning.md): operator calls
// through let bindings, wildcards and constants, alternatives, a pattern
// DAG (one sub-pattern used twice), predicates on dtype, rank, shape and
// attributes, and what a match reports (calls, inputs).
#include "loom/graph/pattern.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "loom/graph/bindings.h"
#include "loom/graph/function.h"
#include "loom/graph/type_infer.h"
#include "loom/ir/op.h"
#include "loom/text/text.h"
#include "loom/graph/pattern_table.h"
#include "loom/runtime/ndarray.h"
#include "test_util.h"

namespace loom::graph {
namespace {

// @main of `text`, typed, and what its let-bound variables stand for.
struct Typed {
  ir::IRModule module;
  ir::Expr result;
  std::map<const VarNode*, ir::Expr> lets;
  Bindings bindings() const {
    return [this](const VarNode* v) -> std::optional<ir::Expr> {
      auto found = lets.find(v);
      if (found == lets.end()) return std::nullopt;
      return found->second;
    };
  }
};

Typed typed(const std::string& text) {
  Typed t;
  std::vector<ir::Diagnostic> problems;
  t.module = graph::infer_types(text::parse_module(text, "pattern.loom"), &problems);
  EXPECT_TRUE(problems.empty()) << problems[0].message;
  ir::Expr e = t.module.lookup("main").as<FunctionNode>()->body;
  e = for_each_binding(e, [&](const LetNode& let) { t.lets[let.var.get()] = let.value; });
  t.result = e;
  return t;
}

const char* kConvBlock = R"(@main = fn(%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(8, 4, 3, 3), float32],
           %b: Tensor[(8, 1, 1), float32]) -> Tensor[(1, 8, 6, 6), float32] {
  let %c = conv2d(%x, %w, padding=[1, 1]);
  let %a = add(%c, %b);
  relu(%a)
}
)";

TEST(Pattern, MatchesThroughLetsAndReportsCallsAndInputs) {
  Typed t = typed(kConvBlock);
  Pattern x = wildcard(), w = wildcard(), b = wildcard();
  Pattern conv = op("conv2d", {x, w});
  Pattern p = op("relu", {op("add", {conv, b})});
  std::optional<Match> m = match(p, t.result, t.bindings());
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->root.same_as(t.result));
  ASSERT_EQ(m->calls.size(), 3u);  // conv2d, add, relu: arguments first
  EXPECT_EQ(m->calls[0].as<CallNode>()->callee.as<ir::OpNode>()->name, "conv2d");
  EXPECT_TRUE(m->calls[2].same_as(t.result));
  ASSERT_EQ(m->inputs.size(), 3u);  // %x, %w, %b as written
  EXPECT_EQ(m->inputs[0].as<VarNode>()->name, "x");
  EXPECT_EQ(m->inputs[2].as<VarNode>()->name, "b");
  EXPECT_EQ(m->bound.at(conv.get()).as<CallNode>()->callee.as<ir::OpNode>()->name, "conv2d");
  // Without the bindings a variable is only a variable.
  EXPECT_FALSE(match(p, t.result));
  // Another operator, another arity.
  EXPECT_FALSE(match(op("relu", {op("multiply", {wildcard(), wildcard()})}), t.result, t.bindings()));
  EXPECT_FALSE(match(op("relu", {wildcard(), wildcard()}), t.result, t.bindings()));
}

TEST(Pattern, AlternativesAndConstants) {
  Typed t = typed(kConvBlock);
  Pattern act = op("relu", {wildcard()}) | op("clip", {wildcard()});
  EXPECT_TRUE(match(act, t.result, t.bindings()));
  Pattern clip_first = op("clip", {wildcard()}) | op("relu", {wildcard()});
  std::optional<Match> m = match(clip_first, t.result, t.bindings());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->calls.size(), 1u);  // the failed clip left nothing behind
  // The bias is a parameter, not a constant.
  EXPECT_FALSE(match(op("relu", {op("add", {wildcard(), constant()})}), t.result, t.bindings()));
  // A constant bias.
  ir::Expr x = t.module.lookup("main").as<FunctionNode>()->params[0].cast<ir::Expr>();
  Constant one(runtime::NDArray::empty({1}, DataType::Float(32), Device{}));
  ir::Expr biased = Call(ir::Op::get("add"), {x, one});
  m = match(op("add", {wildcard(), constant()}), biased);
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->inputs[1].same_as(one));
}

TEST(Pattern, OneSubPatternTwiceMatchesOneExpression) {
  Typed t = typed(R"(@main = fn(%a: Tensor[(4), float32], %b: Tensor[(4), float32]) -> Tensor[(4), float32] {
  let %s = add(%a, %a);
  add(%s, %b)
}
)");
  Pattern v = wildcard();
  Pattern twice = op("add", {v, v});
  EXPECT_FALSE(match(twice, t.result, t.bindings()));  // add(%s, %b)
  std::optional<Match> m = match(op("add", {twice, wildcard()}), t.result, t.bindings());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->inputs.size(), 2u);  // %a once, then %b
  EXPECT_EQ(m->inputs[0].as<VarNode>()->name, "a");
}

TEST(Pattern, PredicatesOnTypesAndAttributes) {
  Typed t = typed(kConvBlock);
  auto conv = [](Pattern p) { return op("relu", {op("add", {p, wildcard()})}); };
  Pattern base = op("conv2d", {wildcard(), wildcard()});
  EXPECT_TRUE(match(conv(base.has_dtype(DataType::Float(32)).has_rank(4)), t.result, t.bindings()));
  EXPECT_FALSE(match(conv(base.has_dtype(DataType::Float(16))), t.result, t.bindings()));
  EXPECT_FALSE(match(conv(base.has_rank(3)), t.result, t.bindings()));
  EXPECT_TRUE(match(conv(base.has_shape({1, 8, 6, 6})), t.result, t.bindings()));
  EXPECT_FALSE(match(conv(base.has_shape({1, 8, 3, 3})), t.result, t.bindings()));
  EXPECT_TRUE(match(conv(base.has_attr("groups", int64_t{1})), t.result, t.bindings()));
  EXPECT_FALSE(match(conv(base.has_attr("groups", int64_t{8})), t.result, t.bindings()));
  Pattern pointwise = base.where(
      [](const ir::Expr& e) {
        ir::Expr kernel = e.as<CallNode>()->args[1].cast<ir::Expr>();
        return kernel->checked_type.as<ir::TensorTypeNode>()->shape.size() == 4;
      },
      "a 4-d kernel");
  EXPECT_TRUE(match(conv(pointwise), t.result, t.bindings()));
  EXPECT_EQ(conv(base.has_dtype(DataType::Float(32))).describe(),
            "op(\"relu\", [op(\"add\", [op(\"conv2d\", [*, *]) where dtype float32, *])])");
  EXPECT_EQ((op("relu", {constant()}) | wildcard()).describe(), "(op(\"relu\", [const]) | *)");
}

TEST(PatternTable, RegisteredOncePerCodegenAndFoundBySuggestion) {
  Pattern conv = op("conv2d", {wildcard(), wildcard()});
  PatternTableRegistry::register_table("test_accel",
                                       {{"test_accel.conv_relu", op("relu", {conv}), {}},
                                        {"test_accel.conv", conv, [](const Match& m) { return m.calls.size() == 1; }}});
  PatternTable table = PatternTableRegistry::get("test_accel");
  ASSERT_EQ(table.entries.size(), 2u);
  EXPECT_EQ(table.entries[0].name, "test_accel.conv_relu");  // in the order given: the priority
  Typed t = typed(kConvBlock);
  ir::Expr c;  // conv2d's binding
  for (const auto& [var, value] : t.lets)
    if (var->name == "c") c = value;
  std::optional<Match> m = match(table.entries[1].pattern, c, t.bindings());
  ASSERT_TRUE(m);
  EXPECT_TRUE(table.entries[1].check(*m));
  std::vector<std::string> listed = PatternTableRegistry::list();
  EXPECT_NE(std::find(listed.begin(), listed.end(), "test_accel"), listed.end());
  EXPECT_EQ(test::error_of([&] { PatternTableRegistry::register_table("test_accel", {}); }),
            "pattern table 'test_accel' is already registered by core; a name is registered once");
  EXPECT_NE(test::error_of([&] { PatternTableRegistry::get("test_acel"); }).find("did you mean 'test_accel'"),
            std::string::npos);
  EXPECT_EQ(test::error_of([&] {
              PatternTableRegistry::register_table("other", {{"", conv, {}}});
            }),
            "pattern table 'other': an entry without a name");
  EXPECT_EQ(test::error_of([&] {
              PatternTableRegistry::register_table("other", {{"a", conv, {}}, {"a", conv, {}}});
            }),
            "pattern table 'other': the entry name 'a' is used twice");
  EXPECT_EQ(test::error_of([&] {
              PatternTableRegistry::register_table("other", {{"a", Pattern(), {}}});
            }),
            "pattern table 'other': entry 'a' has no pattern");
  EXPECT_FALSE(PatternTableRegistry::entry("other"));
  EXPECT_EQ(test::error_of([&] { match(Pattern(), c); }), "match: an empty pattern (made by Pattern())");
  EXPECT_EQ(test::error_of([&] { op("relu", {Pattern()}); }),
            "op(\"relu\", ...): an empty pattern among its arguments");
}

}  // namespace
}  // namespace loom::graph
