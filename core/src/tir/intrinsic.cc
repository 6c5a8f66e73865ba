// The intrinsic registry and the standard intrinsics with their expansions.
#include "loom/tir/intrinsic.h"

#include <cmath>
#include <map>
#include <mutex>

#include "loom/support/registry.h"
#include "loom/tir/builder.h"

namespace loom::tir {

namespace {

PrimExpr arg(const CallNode& c, size_t i) { return c.args[i].cast<PrimExpr>(); }
PrimExpr call(DataType t, const std::string& op, std::vector<PrimExpr> args) { return Call(t, op, std::move(args)); }

// erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7):
// sign(x) (1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-x^2)),
// t = 1 / (1 + p |x|).
PrimExpr expand_erf(const CallNode& c) {
  DataType t = c.dtype;
  PrimExpr x = arg(c, 0);
  PrimExpr ax = call(t, "abs", {x});
  PrimExpr k = Div(make_const(t, 1), Add(make_const(t, 1), Mul(make_const(t, 0.3275911), ax)));
  PrimExpr poly = make_const(t, 1.061405429);
  for (double a : {-1.453152027, 1.421413741, -0.284496736, 0.254829592}) poly = Add(make_const(t, a), Mul(k, poly));
  PrimExpr y = Sub(make_const(t, 1), Mul(Mul(k, poly), call(t, "exp", {Sub(make_const(t, 0), Mul(x, x))})));
  return Select(LT(x, make_const(t, 0)), Sub(make_const(t, 0), y), y);
}

// atan by Cephes' atanf: the argument reduced to [-tan(pi/8), tan(pi/8)]
// (x > tan(3pi/8): pi/2 + atan(-1/x); x > tan(pi/8): pi/4 + atan((x - 1) /
// (x + 1))), an odd polynomial there, the sign restored; about 2 ulp in
// float32.
PrimExpr expand_atan(const PrimExpr& x_in) {
  DataType t = x_in.dtype();
  auto c = [&](double v) { return make_const(t, v); };
  PrimExpr ax = call(t, "abs", {x_in});
  PrimExpr big = GT(ax, c(2.414213562373095)), mid = GT(ax, c(0.4142135623730950));
  PrimExpr x = Select(big, Div(c(-1), ax), Select(mid, Div(Sub(ax, c(1)), Add(ax, c(1))), ax));
  PrimExpr base = Select(big, c(M_PI_2), Select(mid, c(M_PI_4), c(0)));
  PrimExpr z = Mul(x, x);
  PrimExpr poly = c(8.05374449538e-2);
  for (double k : {-1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1}) poly = Add(Mul(poly, z), c(k));
  PrimExpr y = Add(base, Add(Mul(Mul(poly, z), x), x));
  return Select(LT(x_in, c(0)), Sub(c(0), y), y);
}

NamedRegistry<IntrinsicEntry>& registry();

void register_standard(NamedRegistry<IntrinsicEntry>& r) {
  auto primitive = [&](const std::string& name, int args, const std::string& doc, bool float_only = true) {
    r.add(IntrinsicEntry{name, args, float_only, doc, nullptr, "core"});
  };
  auto expanded = [&](const std::string& name, const std::string& doc, std::function<PrimExpr(const CallNode&)> f) {
    r.add(IntrinsicEntry{name, 1, true, doc, std::move(f), "core"});
  };
  primitive("exp", 1, "e^x");
  primitive("log", 1, "natural logarithm");
  primitive("sqrt", 1, "square root");
  primitive("floor", 1, "round down");
  primitive("ceil", 1, "round up");
  primitive("round", 1, "round to nearest, ties to even");
  primitive("trunc", 1, "round toward zero");
  primitive("sin", 1, "sine");
  primitive("cos", 1, "cosine");
  primitive("abs", 1, "absolute value (integers too)", false);
  primitive("pow", 2, "x^y");
  primitive("fmod", 2, "remainder of x / y with x's sign");
  primitive("isnan", 1, "x is NaN (bool result)");
  primitive("isinf", 1, "x is infinite (bool result)");
  primitive("ret", 1, "ends the prim function with x as its result", false);
  // The device path (docs/devices.md): SplitHostDevice writes launches
  // into host functions, whose codegen implements them; a device codegen
  // implements the barrier.
  primitive("tir.launch", -1,
            "launches a device kernel: (kernel name, grid x/y/z, block x/y/z, its arguments...), any number of "
            "arguments",
            false);
  primitive("tir.barrier", 0, "waits until every thread of the block reaches it (shared memory is then consistent)",
            false);
  expanded("rsqrt", "1 / sqrt(x)",
           [](const CallNode& c) { return PrimExpr(Div(make_const(c.dtype, 1), call(c.dtype, "sqrt", {arg(c, 0)}))); });
  expanded("sigmoid", "1 / (1 + exp(-x))", [](const CallNode& c) {
    DataType t = c.dtype;
    return PrimExpr(Div(make_const(t, 1), Add(make_const(t, 1), call(t, "exp", {Sub(make_const(t, 0), arg(c, 0))}))));
  });
  // 1 - 2 / (exp(2x) + 1): exact limits at +-inf; absolute error ~1e-7.
  expanded("tanh", "hyperbolic tangent; expands to 1 - 2 / (exp(2x) + 1)", [](const CallNode& c) {
    DataType t = c.dtype;
    PrimExpr e = call(t, "exp", {Mul(make_const(t, 2), arg(c, 0))});
    return PrimExpr(Sub(make_const(t, 1), Div(make_const(t, 2), Add(e, make_const(t, 1)))));
  });
  expanded("erf", "error function; expands to Abramowitz-Stegun 7.1.26 (absolute error < 1.5e-7)", expand_erf);
  // Trigonometric and hyperbolic functions: the llvm, c and ref targets
  // call the C library's; elsewhere they expand into exp, log, sqrt, sin,
  // cos and the atan polynomial above.
  expanded("tan", "tangent; expands to sin(x) / cos(x)", [](const CallNode& c) {
    return PrimExpr(Div(call(c.dtype, "sin", {arg(c, 0)}), call(c.dtype, "cos", {arg(c, 0)})));
  });
  expanded("atan", "arc tangent; expands to Cephes' atanf polynomial",
           [](const CallNode& c) { return expand_atan(arg(c, 0)); });
  expanded("asin", "arc sine; expands to atan(x / sqrt(1 - x^2))", [](const CallNode& c) {
    DataType t = c.dtype;
    PrimExpr x = arg(c, 0);
    return expand_atan(Div(x, call(t, "sqrt", {Sub(make_const(t, 1), Mul(x, x))})));
  });
  expanded("acos", "arc cosine; expands to pi/2 - asin(x)", [](const CallNode& c) {
    DataType t = c.dtype;
    PrimExpr x = arg(c, 0);
    return PrimExpr(
        Sub(make_const(t, M_PI_2), expand_atan(Div(x, call(t, "sqrt", {Sub(make_const(t, 1), Mul(x, x))})))));
  });
  expanded("sinh", "hyperbolic sine; expands to (exp(x) - exp(-x)) / 2", [](const CallNode& c) {
    DataType t = c.dtype;
    PrimExpr x = arg(c, 0);
    return PrimExpr(Mul(make_const(t, 0.5), Sub(call(t, "exp", {x}), call(t, "exp", {Sub(make_const(t, 0), x)}))));
  });
  expanded("cosh", "hyperbolic cosine; expands to (exp(x) + exp(-x)) / 2", [](const CallNode& c) {
    DataType t = c.dtype;
    PrimExpr x = arg(c, 0);
    return PrimExpr(Mul(make_const(t, 0.5), Add(call(t, "exp", {x}), call(t, "exp", {Sub(make_const(t, 0), x)}))));
  });
  expanded("asinh", "inverse hyperbolic sine; expands to sign(x) log(|x| + sqrt(x^2 + 1))", [](const CallNode& c) {
    DataType t = c.dtype;
    PrimExpr x = arg(c, 0), ax = call(t, "abs", {x});
    PrimExpr y = call(t, "log", {Add(ax, call(t, "sqrt", {Add(Mul(x, x), make_const(t, 1))}))});
    return PrimExpr(Select(LT(x, make_const(t, 0)), Sub(make_const(t, 0), y), y));
  });
  expanded("acosh", "inverse hyperbolic cosine; expands to log(x + sqrt(x^2 - 1))", [](const CallNode& c) {
    DataType t = c.dtype;
    PrimExpr x = arg(c, 0);
    return call(t, "log", {Add(x, call(t, "sqrt", {Sub(Mul(x, x), make_const(t, 1))}))});
  });
  expanded("atanh", "inverse hyperbolic tangent; expands to log((1 + x) / (1 - x)) / 2", [](const CallNode& c) {
    DataType t = c.dtype;
    PrimExpr x = arg(c, 0);
    return PrimExpr(Mul(make_const(t, 0.5), call(t, "log", {Div(Add(make_const(t, 1), x), Sub(make_const(t, 1), x))})));
  });
  // Bitwise operations on integers (and bool): every target implements them.
  for (const char* name : {"bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"}) {
    primitive(name, 2, std::string(name) + " of two integers (a shift by the type's width or more gives 0)", false);
  }
  primitive("bitwise_not", 1, "bitwise complement of an integer", false);
  // A sum of two products of narrow integers, what x86's pmaddwd computes
  // per lane (PairProducts writes it into integer reductions; the llvm
  // target implements it natively).  Each argument is an integer of at
  // most 16 bits (uint16 excluded), widened exactly; the result int32.
  r.add(IntrinsicEntry{"dot2_i16", 4, false,
                       "a0 * b0 + a1 * b1 in int32, of dot2_i16(a0, b0, a1, b1) integers of at most 16 bits (no "
                       "uint16); expands to widened products and a sum",
                       [](const CallNode& c) {
                         auto wide = [&](size_t k) {
                           PrimExpr a = arg(c, k);
                           return PrimExpr(Cast(DataType(DataType::kInt, 32, a.dtype().lanes), a));
                         };
                         return PrimExpr(Add(Mul(wide(0), wide(1)), Mul(wide(2), wide(3))));
                       },
                       "core"});
  // A sum of four products of uint8 by int8 values, what x86's vpdpbusd
  // (AVX-512 VNNI, AVX-VNNI) adds to each int32 lane without saturating
  // (PairProducts writes it where the target implements it natively).
  // Exact: four products of at most 255 x 128 in magnitude fit in int32.
  r.add(IntrinsicEntry{"dot4_u8i8", 8, false,
                       "a0 * b0 + a1 * b1 + a2 * b2 + a3 * b3 in int32, of dot4_u8i8(a0, b0, .., a3, b3) with each a "
                       "uint8 and each b int8; expands to widened products and a sum",
                       [](const CallNode& c) {
                         auto wide = [&](size_t k) {
                           PrimExpr a = arg(c, k);
                           DataType want = k % 2 == 0 ? DataType::UInt(8) : DataType::Int(8), t = a.dtype();
                           if (t.code != want.code || t.bits != 8)
                             LOOM_THROW(Error) << "dot4_u8i8 takes uint8 and int8 arguments in turn, got "
                                               << t.to_string() << " as argument " << k + 1;
                           return PrimExpr(Cast(DataType(DataType::kInt, 32, t.lanes), a));
                         };
                         PrimExpr sum = Mul(wide(0), wide(1));
                         for (size_t k = 2; k < 8; k += 2) sum = Add(sum, Mul(wide(k), wide(k + 1)));
                         return sum;
                       },
                       "core"});
  // A sum of two products of bfloat16 values in float32, what AVX-512
  // BF16's vdpbf16ps adds to each float32 lane (PairProducts writes it
  // into float32 sums of bfloat16 products where the target implements it
  // natively).  The products are exact in float32; the sum rounds once per
  // addition, in an order the target chooses.
  r.add(IntrinsicEntry{"dot2_bf16", 4, true,
                       "a0 * b0 + a1 * b1 in float32, of dot2_bf16(a0, b0, a1, b1) bfloat16 values (exact products; "
                       "the target may add them to the sum one by one, and vdpbf16ps flushes subnormals); expands "
                       "to widened products and a sum",
                       [](const CallNode& c) {
                         auto wide = [&](size_t k) {
                           PrimExpr a = arg(c, k);
                           if (a.dtype().code != DataType::kBFloat || a.dtype().bits != 16)
                             LOOM_THROW(Error) << "dot2_bf16 takes bfloat16 arguments, got " << a.dtype().to_string()
                                               << " as argument " << k + 1;
                           return PrimExpr(Cast(DataType(DataType::kFloat, 32, a.dtype().lanes), a));
                         };
                         return PrimExpr(Add(Mul(wide(0), wide(1)), Mul(wide(2), wide(3))));
                       },
                       "core"});
  expanded("exp2", "2^x; expands to exp(x ln 2)", [](const CallNode& c) {
    return call(c.dtype, "exp", {Mul(arg(c, 0), make_const(c.dtype, std::log(2.0)))});
  });
  expanded("log2", "log base 2; expands to log(x) / ln 2", [](const CallNode& c) {
    return PrimExpr(Mul(call(c.dtype, "log", {arg(c, 0)}), make_const(c.dtype, 1 / std::log(2.0))));
  });
  expanded("log10", "log base 10; expands to log(x) / ln 10", [](const CallNode& c) {
    return PrimExpr(Mul(call(c.dtype, "log", {arg(c, 0)}), make_const(c.dtype, 1 / std::log(10.0))));
  });
}

NamedRegistry<IntrinsicEntry>& registry() {
  static auto* instance = [] {
    auto* r = new NamedRegistry<IntrinsicEntry>("intrinsic", "intrinsic", /*overridable=*/true);
    register_standard(*r);
    return r;
  }();
  return *instance;
}

}  // namespace

bool dot2_i16_operand(DataType t) {
  return t.bits <= 16 && (t.code == DataType::kInt || (t.code == DataType::kUInt && t.bits < 16));
}

void IntrinsicRegistry::register_intrinsic(IntrinsicEntry entry, bool allow_override) {
  if (entry.num_args < 0) LOOM_THROW(Error) << "intrinsic '" << entry.name << "' needs a number of arguments";
  registry().add(std::move(entry), allow_override);
}
std::optional<IntrinsicEntry> IntrinsicRegistry::entry(const std::string& name) { return registry().entry(name); }
IntrinsicEntry IntrinsicRegistry::get(const std::string& name) { return registry().get(name); }
std::vector<std::string> IntrinsicRegistry::list() { return registry().names(); }

}  // namespace loom::tir
