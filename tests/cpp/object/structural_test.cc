#include "loom/object/structural.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_nodes.h"

namespace loom {
using namespace loom::test;  // NOLINT

TEST(Printer, PrintsNodesThroughReflection) {
  EXPECT_EQ(repr(Add(Int(1), Var("x"))),
            "test.Add(dtype=int32, a=test.Int(dtype=int32, value=1), b=test.Var(dtype=int32, name=\"x\"))");
  EXPECT_EQ(repr(Array({1, 2.5, "s", true, Any(), DataType::Float(16)})), "[1, 2.5, \"s\", true, none, float16]");
  EXPECT_EQ(repr(Map({{"b", 2}, {"a", Array({})}})), "{\"a\": [], \"b\": 2}");
  EXPECT_EQ(repr(Device::parse("opencl:1")), "opencl:1");
  EXPECT_EQ(repr(0.1), "0.1");
  EXPECT_EQ(repr(3.0), "3.0");
  EXPECT_EQ(repr(10.0), "10.0");
  EXPECT_EQ(repr(-0.00125), "-0.00125");
  EXPECT_EQ(repr(1e20), "1e+20");
  EXPECT_EQ(repr(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(repr(0.0), "0.0");
}

TEST(StructuralEqual, ComparesFieldsNotIdentity) {
  EXPECT_TRUE(structural_equal(Add(Int(1), Int(2)), Add(Int(1), Int(2))));
  EXPECT_FALSE(structural_equal(Add(Int(1), Int(2)), Add(Int(1), Int(3))));
  EXPECT_FALSE(structural_equal(Int(1), Var("x")));
  EXPECT_TRUE(structural_equal(Array({1, "a"}), Array({1, "a"})));
  EXPECT_FALSE(structural_equal(Array({1}), Array({1, 2})));
  EXPECT_TRUE(structural_equal(std::nan(""), std::nan("")));
  EXPECT_TRUE(structural_equal(0.0, -0.0));
}

TEST(StructuralEqual, VariablesAreEqualUpToRenaming) {
  TExpr x = Var("x"), y = Var("y"), z = Var("z");
  // let x = 1 in x + x   ==   let y = 1 in y + y
  EXPECT_TRUE(structural_equal(Let(x, Int(1), Add(x, x)), Let(y, Int(1), Add(y, y))));
  // let x = 1 in x + x   !=   let y = 1 in y + z
  EXPECT_FALSE(structural_equal(Let(x, Int(1), Add(x, x)), Let(y, Int(1), Add(y, z))));
  EXPECT_EQ(structural_difference(Let(x, Int(1), Add(x, x)), Let(y, Int(1), Add(y, z))).value(),
            "root.body.b: variables bound to different definitions");
}

TEST(StructuralDifference, NamesThePathOfTheFirstDifference) {
  EXPECT_FALSE(structural_difference(Add(Int(1), Int(2)), Add(Int(1), Int(2))));
  EXPECT_EQ(structural_difference(Add(Int(1), Int(2)), Add(Int(1), Int(3))).value(), "root.b.value: 2 vs 3");
  EXPECT_EQ(structural_difference(Array({Int(1), Var("v")}), Array({Int(1), Int(0)})).value(),
            "root[1]: type test.Var vs test.Int");
  EXPECT_EQ(structural_difference(Map({{"k", 1}}), Map({{"k", 1}, {"j", 2}})).value(),
            "root: key \"j\" only on the right");
  EXPECT_EQ(structural_difference(Array({1}), Array({1, 2})).value(), "root: length 1 vs 2");
}

// Random expression trees: equal trees hash equally, and a one-leaf change
// is detected by equality (and, for these sizes, by the hash).
TExpr random_tree(std::mt19937& rng, int depth, std::vector<TExpr>& vars) {
  std::uniform_int_distribution<int> pick(0, depth > 0 ? 2 : 1);
  switch (pick(rng)) {
    case 0:
      return Int(std::uniform_int_distribution<int>(-50, 50)(rng));
    case 1: {
      if (vars.empty()) return Int(0);
      return vars[std::uniform_int_distribution<size_t>(0, vars.size() - 1)(rng)];
    }
    default:
      return Add(random_tree(rng, depth - 1, vars), random_tree(rng, depth - 1, vars));
  }
}

TEST(StructuralHash, ConsistentWithEqualityOnRandomTrees) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 200; ++trial) {
    std::mt19937 a_rng(trial), b_rng(trial);
    std::vector<TExpr> a_vars = {Var("a"), Var("b")}, b_vars = {Var("p"), Var("q")};
    TExpr a = Let(a_vars[0], Int(trial), random_tree(a_rng, 5, a_vars));
    TExpr b = Let(b_vars[0], Int(trial), random_tree(b_rng, 5, b_vars));
    ASSERT_TRUE(structural_equal(a, b)) << *structural_difference(a, b);
    ASSERT_EQ(structural_hash(a), structural_hash(b));
    TExpr c = Let(b_vars[0], Int(trial + 1), random_tree(b_rng, 5, b_vars));
    ASSERT_FALSE(structural_equal(a, c));
  }
  EXPECT_NE(structural_hash(Add(Int(1), Int(2))), structural_hash(Add(Int(2), Int(1))));
  EXPECT_EQ(structural_hash(0.0), structural_hash(-0.0));
}

}  // namespace loom
