// The integer bound analyzer (loom/arith/analyzer.h): the bounds of each
// kind of expression under the ranges of the variables in scope, overflow
// giving "unbounded" rather than a wrong bound, and the conditions it
// proves or disproves for every value in scope.
#include <gtest/gtest.h>

#include <climits>

#include "loom/arith/analyzer.h"
#include "loom/tir/stmt.h"

namespace loom::arith {
namespace {
using namespace tir;  // NOLINT: the prim IR reads best unqualified

const DataType kI64 = DataType::Int(64);

PrimExpr c(int64_t v) { return IntImm(kI64, v); }

// Two loop-like variables, i in [0, 7] and j in [0, 3], and one unbounded, n.
struct Scope {
  Var i{"i", kI64}, j{"j", kI64}, n{"n", kI64};
  Analyzer an;
  Scope() {
    an.bind(i.get(), Bound{0, 7});
    an.bind(j.get(), Bound{0, 3});
  }
};

void expect_bound(const Bound& b, std::optional<int64_t> lo, std::optional<int64_t> hi) {
  EXPECT_EQ(b.lo, lo);
  EXPECT_EQ(b.hi, hi);
}

TEST(Analyzer, ConstantsAreExactAndUnboundVariablesUnbounded) {
  Scope s;
  expect_bound(s.an.bound(c(42)), 42, 42);
  expect_bound(s.an.bound(s.i), 0, 7);
  expect_bound(s.an.bound(s.n), std::nullopt, std::nullopt);
  EXPECT_TRUE(Bound::exact(5).known());
  EXPECT_FALSE(s.an.bound(s.n).known());
  s.an.unbind(s.i.get());
  expect_bound(s.an.bound(s.i), std::nullopt, std::nullopt);
}

TEST(Analyzer, ALoopBindsItsVariableFromMinToMinPlusExtentMinusOne) {
  Scope s;
  Var k("k", kI64);
  For loop(k, c(2), c(5), ForKind::kSerial, Evaluate(c(0)));
  s.an.bind_loop(*loop.get());
  expect_bound(s.an.bound(k), 2, 6);
  // An extent bounded only through another variable: i + 1 is at most 8.
  Var m("m", kI64);
  For by_i(m, c(0), Add(s.i, c(1)), ForKind::kSerial, Evaluate(c(0)));
  s.an.bind_loop(*by_i.get());
  expect_bound(s.an.bound(m), 0, 7);
  // A symbolic extent leaves the top open.
  Var q("q", kI64);
  For open(q, c(3), s.n, ForKind::kSerial, Evaluate(c(0)));
  s.an.bind_loop(*open.get());
  expect_bound(s.an.bound(q), 3, std::nullopt);
}

TEST(Analyzer, SumsDifferencesAndProducts) {
  Scope s;
  expect_bound(s.an.bound(Add(Mul(s.i, c(4)), s.j)), 0, 31);  // a flattened index of 8 x 4
  expect_bound(s.an.bound(Sub(s.i, s.j)), -3, 7);
  // (i - 3) in [-3, 4] times (j - 1) in [-1, 2]: the corners 3, -6, -4, 8.
  expect_bound(s.an.bound(Mul(Sub(s.i, c(3)), Sub(s.j, c(1)))), -6, 8);
  // One unbounded operand: a sum keeps the side both have, a product none.
  expect_bound(s.an.bound(Add(s.i, s.n)), std::nullopt, std::nullopt);
  expect_bound(s.an.bound(Mul(s.i, s.n)), std::nullopt, std::nullopt);
  Var p("p", kI64);
  s.an.bind(p.get(), Bound{5, std::nullopt});
  expect_bound(s.an.bound(Add(s.i, p)), 5, std::nullopt);
  expect_bound(s.an.bound(Sub(s.i, p)), std::nullopt, 2);
}

TEST(Analyzer, OverflowGivesUnboundedNeverAWrongBound) {
  Scope s;
  Var big("big", kI64);
  s.an.bind(big.get(), Bound{0, INT64_MAX});
  expect_bound(s.an.bound(Add(big, c(1))), 1, std::nullopt);
  expect_bound(s.an.bound(Mul(big, c(2))), std::nullopt, std::nullopt);
  Var low("low", kI64);
  s.an.bind(low.get(), Bound{INT64_MIN, 0});
  expect_bound(s.an.bound(Sub(c(0), low)), 0, std::nullopt);  // -INT64_MIN does not exist
}

TEST(Analyzer, FloorDivisionAndModuloByAPositiveConstant) {
  Scope s;
  Var x("x", kI64);
  s.an.bind(x.get(), Bound{-5, 9});
  expect_bound(s.an.bound(FloorDiv(x, c(4))), -2, 2);  // floor(-5 / 4) = -2
  expect_bound(s.an.bound(FloorMod(x, c(4))), 0, 3);
  // A value already below the divisor is its own remainder.
  expect_bound(s.an.bound(FloorMod(s.j, c(4))), 0, 3);
  expect_bound(s.an.bound(FloorMod(s.j, c(8))), 0, 3);
  // A divisor that is not a positive constant gives nothing.
  expect_bound(s.an.bound(FloorDiv(x, c(-2))), std::nullopt, std::nullopt);
  expect_bound(s.an.bound(FloorDiv(x, s.j)), std::nullopt, std::nullopt);
  expect_bound(s.an.bound(FloorMod(x, s.n)), std::nullopt, std::nullopt);
}

TEST(Analyzer, MinMaxAndSelect) {
  Scope s;
  expect_bound(s.an.bound(Min(s.i, s.j)), 0, 3);
  expect_bound(s.an.bound(Max(s.i, s.j)), 0, 7);
  // min with an unbounded side: bounded above by the other, not below.
  expect_bound(s.an.bound(Min(s.i, s.n)), std::nullopt, 7);
  expect_bound(s.an.bound(Max(s.i, s.n)), 0, std::nullopt);
  expect_bound(s.an.bound(Select(LT(s.n, c(0)), Add(s.j, c(10)), Sub(s.i, c(2)))), -2, 13);
}

TEST(Analyzer, CastsKeepABoundTheNarrowTypeHolds) {
  Scope s;
  expect_bound(s.an.bound(Cast(DataType::Int(8), Mul(s.i, c(10)))), 0, 70);
  // 0..700 does not fit in int8: the cast wraps, so nothing is known.
  expect_bound(s.an.bound(Cast(DataType::Int(8), Mul(s.i, c(100)))), std::nullopt, std::nullopt);
  expect_bound(s.an.bound(Cast(DataType::UInt(8), Sub(s.j, c(1)))), std::nullopt, std::nullopt);
}

TEST(Analyzer, FloatsAndVectorsHaveNoIntegerBound) {
  Scope s;
  expect_bound(s.an.bound(FloatImm(DataType::Float(32), 1.5)), std::nullopt, std::nullopt);
  expect_bound(s.an.bound(Broadcast(c(3), 4)), std::nullopt, std::nullopt);
}

TEST(Analyzer, ProvesAndDisprovesComparisonsForEveryValueInScope) {
  Scope s;
  PrimExpr index = Add(Mul(s.i, c(4)), s.j);
  EXPECT_TRUE(s.an.prove(LT(index, c(32))));
  EXPECT_FALSE(s.an.prove(LT(index, c(31))));
  EXPECT_FALSE(s.an.disprove(LT(index, c(31))));  // neither: true for some values only
  EXPECT_TRUE(s.an.disprove(GE(index, c(32))));
  EXPECT_TRUE(s.an.prove(GE(s.i, c(0))));
  EXPECT_TRUE(s.an.prove(LE(s.j, Add(s.i, c(3)))));
  EXPECT_TRUE(s.an.prove(GT(Add(s.i, c(1)), Sub(s.j, c(3)))));
  EXPECT_TRUE(s.an.prove(NE(s.i, c(8))));
  EXPECT_TRUE(s.an.disprove(EQ(s.i, c(-1))));
  EXPECT_TRUE(s.an.prove(EQ(Sub(Add(s.i, c(2)), s.i), c(2))));
  EXPECT_FALSE(s.an.prove(EQ(s.i, c(0))));
}

TEST(Analyzer, CommonTermsCancelSoSymbolicComparisonsAreDecided) {
  Scope s;
  // n is unbounded, but n + i < n + 8 for every i in [0, 7].
  EXPECT_TRUE(s.an.prove(LT(Add(s.n, s.i), Add(s.n, c(8)))));
  EXPECT_TRUE(s.an.disprove(GE(Add(s.n, s.i), Add(s.n, c(8)))));
  EXPECT_FALSE(s.an.prove(LT(Add(s.n, s.i), c(8))));
  EXPECT_FALSE(s.an.disprove(LT(Add(s.n, s.i), c(8))));
}

TEST(Analyzer, LogicCombinesWhatItProves) {
  Scope s;
  PrimExpr yes = LT(s.i, c(8)), no = GT(s.i, c(7)), unknown = LT(s.i, c(4));
  EXPECT_TRUE(s.an.prove(And(yes, yes)));
  EXPECT_FALSE(s.an.prove(And(yes, unknown)));
  EXPECT_TRUE(s.an.disprove(And(unknown, no)));
  EXPECT_TRUE(s.an.prove(Or(unknown, yes)));
  EXPECT_TRUE(s.an.disprove(Or(no, no)));
  EXPECT_FALSE(s.an.disprove(Or(no, unknown)));
  EXPECT_TRUE(s.an.prove(Not(no)));
  EXPECT_TRUE(s.an.disprove(Not(yes)));
  EXPECT_TRUE(s.an.prove(IntImm(DataType::Bool(), 1)));
  EXPECT_TRUE(s.an.disprove(IntImm(DataType::Bool(), 0)));
}

TEST(Analyzer, FloatComparisonsAreNeitherProvedNorDisproved) {
  Scope s;
  PrimExpr one = FloatImm(DataType::Float(32), 1.0), two = FloatImm(DataType::Float(32), 2.0);
  EXPECT_FALSE(s.an.prove(LT(one, two)));
  EXPECT_FALSE(s.an.disprove(LT(one, two)));
}

}  // namespace
}  // namespace loom::arith
