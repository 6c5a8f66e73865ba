// The arithmetic simplifier (loom/arith/simplify.h): integer constants
// folded at their type's width, linear terms combined, floor division and
// modulo removed where bounds allow, comparisons decided, float
// arithmetic left alone; and over statements, loops of extent 0 and 1 and
// decided ifs removed.
#include <gtest/gtest.h>

#include <climits>

#include "loom/arith/simplify.h"
#include "loom/text/text.h"
#include "loom/object/structural.h"
#include "loom/tir/function.h"
#include "loom/tir/util.h"

namespace loom::arith {
namespace {
using namespace tir;  // NOLINT: the prim IR reads best unqualified

const DataType kI64 = DataType::Int(64);

PrimExpr c(int64_t v) { return IntImm(kI64, v); }

std::string text(const PrimExpr& e) { return ir::to_text(Any(e)); }

// The value of an integer constant, or nullopt.
std::optional<int64_t> value(const PrimExpr& e) { return const_int(e); }

struct Scope {
  Var i{"i", kI64}, j{"j", kI64}, x{"x", kI64}, f{"f", kI64};
  Analyzer an;
  Scope() {
    an.bind(i.get(), Bound{0, 3});
    an.bind(j.get(), Bound{0, 7});
  }
  std::string simplified(const PrimExpr& e) const { return text(simplify(e, an)); }
};

TEST(Simplify, FoldsIntegerConstants) {
  EXPECT_EQ(value(simplify(Mul(Add(c(2), c(3)), c(4)))), 20);
  EXPECT_EQ(value(simplify(Sub(c(2), c(9)))), -7);
  // Floor semantics: towards minus infinity, the remainder the divisor's sign.
  EXPECT_EQ(value(simplify(FloorDiv(c(-7), c(2)))), -4);
  EXPECT_EQ(value(simplify(FloorMod(c(-7), c(2)))), 1);
  EXPECT_EQ(value(simplify(FloorDiv(c(7), c(-2)))), -4);
  EXPECT_EQ(value(simplify(FloorMod(c(7), c(-2)))), -1);
}

TEST(Simplify, ConstantsWrapToTheirTypesWidth) {
  PrimExpr a = IntImm(DataType::Int(8), 100);
  PrimExpr sum = simplify(Add(a, a));
  EXPECT_EQ(sum.dtype(), DataType::Int(8));
  EXPECT_EQ(value(sum), -56);  // 200 wraps in int8
  EXPECT_EQ(value(simplify(Cast(DataType::Int(8), c(300)))), 44);
  EXPECT_EQ(value(simplify(Cast(DataType::UInt(8), c(-1)))), 255);
}

TEST(Simplify, CombinesLinearTerms) {
  Scope s;
  EXPECT_EQ(s.simplified(Add(Add(s.x, c(1)), c(2))), "%x + 3");
  EXPECT_EQ(value(simplify(Sub(s.x, s.x))), 0);
  EXPECT_EQ(s.simplified(Add(Mul(s.x, c(2)), s.x)), "%x * 3");
  EXPECT_EQ(s.simplified(Sub(Add(s.x, s.f), Add(s.x, c(5)))), "%f - 5");
  EXPECT_EQ(s.simplified(Sub(c(3), s.x)), "3 - %x");
  EXPECT_EQ(s.simplified(Mul(c(4), Add(s.x, c(1)))), "%x * 4 + 4");
}

TEST(Simplify, AnOverflowingSumIsLeftAsWritten) {
  Scope s;
  PrimExpr e = Add(Add(s.x, c(INT64_MAX)), c(1));
  EXPECT_TRUE(simplify(e).same_as(e)) << text(simplify(e));
}

TEST(Simplify, RebuildsAValueFromItsQuotientAndRemainder) {
  Scope s;
  // A flattened index of loops fused over two axes: (f // 7) * 7 + f % 7 = f.
  EXPECT_EQ(s.simplified(Add(Mul(FloorDiv(s.f, c(7)), c(7)), FloorMod(s.f, c(7)))), "%f");
  EXPECT_EQ(s.simplified(Add(Mul(FloorDiv(s.f, c(7)), c(14)), Mul(FloorMod(s.f, c(7)), c(2)))), "%f * 2");
  // Over three axes: (f // 12) * 12 + ((f // 3) % 4) * 3 + f % 3 = f.
  PrimExpr three =
      Add(Add(Mul(FloorDiv(s.f, c(12)), c(12)), Mul(FloorMod(FloorDiv(s.f, c(3)), c(4)), c(3))), FloorMod(s.f, c(3)));
  EXPECT_EQ(s.simplified(three), "%f");
  // Different divisors do not pair up.
  EXPECT_EQ(s.simplified(Add(Mul(FloorDiv(s.f, c(6)), c(7)), FloorMod(s.f, c(7)))), "%f // 6 * 7 + %f % 7");
}

TEST(Simplify, RemovesFloorDivisionAndModuloWhereBoundsAllow) {
  Scope s;
  // j * 4 + i with i in [0, 3]: the quotient is j, the remainder i.
  EXPECT_EQ(s.simplified(FloorDiv(Add(Mul(s.j, c(4)), s.i), c(4))), "%j");
  EXPECT_EQ(s.simplified(FloorMod(Add(Mul(s.j, c(4)), s.i), c(4))), "%i");
  EXPECT_EQ(s.simplified(FloorDiv(Add(Mul(s.j, c(8)), c(5)), c(4))), "%j * 2 + 1");
  // j in [0, 7] may reach the divisor: both stay.
  EXPECT_EQ(s.simplified(FloorDiv(Add(Mul(s.i, c(4)), s.j), c(4))), "(%i * 4 + %j) // 4");
  EXPECT_EQ(s.simplified(FloorMod(Add(Mul(s.i, c(4)), s.j), c(4))), "(%i * 4 + %j) % 4");
  // An unbounded remainder: nothing is known.
  EXPECT_EQ(s.simplified(FloorMod(Add(Mul(s.x, c(4)), s.f), c(4))), "(%x * 4 + %f) % 4");
}

TEST(Simplify, DecidesMinMaxAndComparisonsFromBounds) {
  Scope s;
  EXPECT_EQ(s.simplified(Min(s.i, c(8))), "%i");
  EXPECT_EQ(value(simplify(Max(s.i, c(8)), s.an)), 8);
  EXPECT_EQ(s.simplified(Min(s.i, c(2))), "min(%i, 2)");
  EXPECT_EQ(s.simplified(Max(s.x, s.x)), "%x");
  EXPECT_EQ(value(simplify(LT(s.i, c(4)), s.an)), 1);
  EXPECT_EQ(value(simplify(GE(Add(s.i, s.j), c(11)), s.an)), 0);
  EXPECT_EQ(simplify(LT(s.i, c(4)), s.an).dtype(), DataType::Bool());
  EXPECT_EQ(s.simplified(LT(s.i, c(3))), "%i < 3");
  // Without the bounds, neither is decided.
  EXPECT_EQ(text(simplify(LT(s.i, c(4)))), "%i < 4");
}

TEST(Simplify, LogicWithAConstantSide) {
  Scope s;
  PrimExpr t = IntImm(DataType::Bool(), 1), f = IntImm(DataType::Bool(), 0), u = LT(s.x, s.f);
  EXPECT_EQ(text(simplify(And(t, u))), "%x < %f");
  EXPECT_EQ(value(simplify(And(u, f))), 0);
  EXPECT_EQ(value(simplify(Or(u, t))), 1);
  EXPECT_EQ(text(simplify(Or(f, u))), "%x < %f");
  EXPECT_EQ(value(simplify(Not(t))), 0);
  // A condition the bounds decide, inside logic.
  EXPECT_EQ(s.simplified(And(LT(s.i, c(4)), u)), "%x < %f");
}

TEST(Simplify, SelectsDecidedOrWithEqualBranches) {
  Scope s;
  EXPECT_EQ(s.simplified(Select(LT(s.i, c(4)), s.x, s.f)), "%x");
  EXPECT_EQ(s.simplified(Select(GT(s.i, c(3)), s.x, s.f)), "%f");
  EXPECT_EQ(s.simplified(Select(LT(s.x, s.f), s.j, s.j)), "%j");
  EXPECT_EQ(s.simplified(Select(LT(s.x, s.f), s.i, s.j)), "select(%x < %f, %i, %j)");
}

TEST(Simplify, CastsAndLets) {
  Scope s;
  EXPECT_EQ(s.simplified(Cast(kI64, s.x)), "%x");
  Var v("v", kI64);
  EXPECT_EQ(value(simplify(Let(v, c(3), Add(v, c(1))))), 4);
  EXPECT_EQ(s.simplified(Let(v, s.x, Sub(v, s.x))), "0");
}

TEST(Simplify, NeverRewritesFloatArithmetic) {
  Scope s;
  Var y("y", DataType::Float(32));
  PrimExpr one = FloatImm(DataType::Float(32), 1.0), two = FloatImm(DataType::Float(32), 2.0);
  // (y + 1) + 2 is not y + 3 in floating point (rounding), nor y - y zero (NaN).
  EXPECT_EQ(text(simplify(Add(Add(y, one), two))), "%y + 1.0 + 2.0");
  EXPECT_EQ(text(simplify(Sub(y, y))), "%y - %y");
  EXPECT_EQ(text(simplify(Add(one, two))), "1.0 + 2.0");
}

// The statement simplifier over a function's body, compared with the
// expected function structurally.
void expect_body(const char* input, const char* expected) {
  auto f = downcast<PrimFunc>(text::parse_module(input, "input.loom").lookup("f"));
  auto g = downcast<PrimFunc>(text::parse_module(expected, "expected.loom").lookup("f"));
  PrimFunc simplified = with_body(*f.get(), simplify(f->body));
  auto difference = structural_difference(Any(simplified), Any(g));
  EXPECT_FALSE(difference) << *difference << "\ngot:\n" << ir::to_text(Any(simplified));
}

TEST(SimplifyStmt, RemovesEmptyLoopsAndInlinesLoopsOfOneIteration) {
  expect_body(R"(
@f = prim_func(%A: Buffer[(4, 4), float32]) {
  for %i: int64 from 0 extent 4 {
    for %j: int64 from 2 extent 1 {
      %A[%i, %j] = 1.0;
    }
    for %k: int64 from 0 extent 0 {
      %A[%i, %k] = 2.0;
    }
  }
}
)",
              R"(
@f = prim_func(%A: Buffer[(4, 4), float32]) {
  for %i: int64 from 0 extent 4 {
    %A[%i, 2] = 1.0;
  }
}
)");
}

TEST(SimplifyStmt, DecidesIfsFromTheLoopsAroundThem) {
  // i * 4 + j < 16 always holds in the nest; i * 4 + j < 12 does not.
  expect_body(R"(
@f = prim_func(%A: Buffer[(16), float32]) {
  for %i: int64 from 0 extent 4 {
    for %j: int64 from 0 extent 4 {
      if %i * 4 + %j < 16 {
        %A[%i * 4 + %j] = 1.0;
      }
      if %i * 4 + %j >= 16 {
        %A[0] = 2.0;
      }
      if %i * 4 + %j < 12 {
        %A[(%i * 4 + %j) // 4] = 3.0;
      }
    }
  }
}
)",
              R"(
@f = prim_func(%A: Buffer[(16), float32]) {
  for %i: int64 from 0 extent 4 {
    for %j: int64 from 0 extent 4 {
      %A[%i * 4 + %j] = 1.0;
      if %i * 4 + %j < 12 {
        %A[%i] = 3.0;
      }
    }
  }
}
)");
}

}  // namespace
}  // namespace loom::arith
