// Generic Visitor and copy-on-write Mutator over IR.
#include "loom/object/traversal.h"

#include <gtest/gtest.h>

#include "loom/graph/function.h"
#include "loom/object/structural.h"
#include "loom/tir/function.h"
#include "sample_module.h"

namespace loom {
using namespace loom::test;  // NOLINT

TEST(Visitor, HandlersMatchSubtypesAndSharedNodesOnce) {
  ir::IRModule mod = sample_module();
  int binary = 0, vars = 0, loads = 0;
  Visitor v;
  v.on<tir::BinaryOpNode>([&](const tir::BinaryOpNode* op) {
    ++binary;
    v.visit(op->a);
    v.visit(op->b);
  });
  v.on<tir::VarNode>([&](const tir::VarNode*) { ++vars; });
  v.on<tir::BufferLoadNode>([&](const tir::BufferLoadNode* op) {
    ++loads;
    v.visit_children(op);
  });
  v.visit(mod);
  EXPECT_EQ(binary, 1);  // the Add in add_one
  EXPECT_EQ(loads, 1);
  // i (shared by loop, load and store) once, plus the data vars of A and B.
  EXPECT_EQ(vars, 3);
}

TEST(Visitor, WithoutMemoEveryUseIsSeen) {
  tir::Var i("i");
  tir::PrimExpr e = tir::Add(tir::Mul(i, i), i);
  int uses = 0;
  Visitor v(/*memoize=*/false);
  v.on<tir::VarNode>([&](const tir::VarNode*) { ++uses; });
  v.visit(e);
  EXPECT_EQ(uses, 3);
}

TEST(Mutator, NothingChangedReturnsTheSameObjects) {
  ir::IRModule mod = sample_module();
  Mutator m;
  m.on<tir::IntImmNode>([](const tir::IntImmNode*, const ObjectRef& self) { return Any(self); });
  ir::IRModule out = m.mutate_as(mod);
  EXPECT_TRUE(out.same_as(mod));
}

TEST(Mutator, CopyOnWriteSharesUnchangedSubtrees) {
  ir::IRModule mod = sample_module(16);
  // Replace every constant 16 by 32: the prim function's buffers change.
  Mutator m;
  m.on<tir::IntImmNode>([](const tir::IntImmNode* op, const ObjectRef& self) -> Any {
    if (op->value == 16) return tir::IntImm(op->dtype, 32);
    return Any(self);
  });
  ir::IRModule out = m.mutate_as(mod);
  EXPECT_FALSE(out.same_as(mod));
  EXPECT_TRUE(structural_equal(out->functions.at("add_one"), sample_module(32)->functions.at("add_one")));
  // Untouched parts are shared, not copied: the extern function has no 16...
  // (its signature's tensor type does), but the module attributes are untouched.
  EXPECT_TRUE(out->attrs.same_as(mod->attrs));
  // The original is unchanged.
  EXPECT_TRUE(structural_equal(mod, sample_module(16)));
  // The shared loop variable stays shared after the rewrite (memoised).
  auto loop = downcast<tir::PrimFunc>(out.lookup("add_one"))->body.as<tir::ForNode>();
  auto store = loop->body.as<tir::BufferStoreNode>();
  EXPECT_TRUE(store->indices[0].cast<tir::Var>().same_as(loop->loop_var));
}

TEST(Mutator, HandlerCanRebuildFromMutatedChildren) {
  // Constant-fold x + 0 -> x bottom-up.
  tir::Var x("x");
  tir::PrimExpr e = tir::Mul(tir::Add(x, 0), tir::Add(tir::Add(x, 0), 0));
  Mutator fold;
  fold.on<tir::AddNode>([&](const tir::AddNode*, const ObjectRef& self) -> Any {
    auto add = downcast<tir::Add>(fold.mutate_children(self));
    const auto* rhs = add->b.as<tir::IntImmNode>();
    if (rhs && rhs->value == 0) return add->a;
    return add;
  });
  EXPECT_TRUE(structural_equal(fold.mutate(e), tir::Mul(x, x)));
}

}  // namespace loom

namespace loom {
// checked_type is a derived cache: a rewritten copy must not keep it (it
// may no longer hold), an untouched node keeps it.
TEST(Mutator, DerivedFieldsAreDroppedFromChangedCopies) {
  graph::Var x("x", tir::tensor_type({4}, DataType::Float(32)));
  graph::Var y("y", tir::tensor_type({2}, DataType::Int(8)));
  graph::Tuple tuple({x, x});
  const_cast<graph::TupleNode*>(tuple.get())->checked_type = ir::TupleType({x->annotation, x->annotation});
  Mutator same;
  EXPECT_TRUE(same.mutate_as<graph::Tuple>(tuple)->checked_type.defined());
  Mutator swap;
  swap.on<graph::VarNode>(
      [&](const graph::VarNode* v, const ObjectRef& self) -> Any { return v == x.get() ? Any(y) : Any(self); });
  graph::Tuple changed = swap.mutate_as<graph::Tuple>(tuple);
  ASSERT_FALSE(changed.same_as(tuple));
  EXPECT_FALSE(changed->checked_type.defined());
}
}  // namespace loom
