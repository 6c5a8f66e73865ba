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
  expanded("rsqrt", "1 / sqrt(x)", [](const CallNode& c) {
    return PrimExpr(Div(make_const(c.dtype, 1), call(c.dtype, "sqrt", {arg(c, 0)})));
  });
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

void IntrinsicRegistry::register_intrinsic(IntrinsicEntry entry, bool allow_override) {
  if (entry.num_args < 0) LOOM_THROW(Error) << "intrinsic '" << entry.name << "' needs a number of arguments";
  registry().add(std::move(entry), allow_override);
}
std::optional<IntrinsicEntry> IntrinsicRegistry::entry(const std::string& name) { return registry().entry(name); }
IntrinsicEntry IntrinsicRegistry::get(const std::string& name) { return registry().get(name); }
std::vector<std::string> IntrinsicRegistry::list() { return registry().names(); }

}  // namespace loom::tir
