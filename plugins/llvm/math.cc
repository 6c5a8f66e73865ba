// Vectorizable float32 exp and log; see math.h.
#include "math.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <limits>
#include <utility>

namespace loom::llvm_backend {
namespace {

struct Helper {
  llvm::IRBuilder<>& b;
  llvm::Type* float_type;  // float or <N x float>
  llvm::Type* int_type;    // i32 or <N x i32>

  Helper(llvm::IRBuilder<>& builder, llvm::Value* x) : b(builder), float_type(x->getType()) {
    int_type = b.getInt32Ty();
    if (auto* v = llvm::dyn_cast<llvm::FixedVectorType>(float_type)) {
      int_type = llvm::FixedVectorType::get(b.getInt32Ty(), v->getNumElements());
    }
  }
  llvm::Value* f(double value) const { return llvm::ConstantFP::get(float_type, value); }
  llvm::Value* i(int32_t value) const { return llvm::ConstantInt::get(int_type, static_cast<uint64_t>(value), true); }
  llvm::Value* call(llvm::Intrinsic::ID id, llvm::Value* x) const {
    llvm::Module* m = b.GetInsertBlock()->getModule();
    return b.CreateCall(llvm::Intrinsic::getDeclaration(m, id, {x->getType()}), {x});
  }
  // Horner: ((c0 x + c1) x + c2) ...
  llvm::Value* polynomial(llvm::Value* x, std::initializer_list<double> coefficients) const {
    llvm::Value* y = nullptr;
    for (double c : coefficients) y = y ? b.CreateFAdd(b.CreateFMul(y, x), f(c)) : f(c);
    return y;
  }
  // exp(t) = y 2^n for t in exp's range, as {y, n} (n an integer vector):
  // t = n ln2 + r, |r| <= ln2 / 2, ln2 in two parts for precision; y the
  // Cephes polynomial of r.
  std::pair<llvm::Value*, llvm::Value*> exp_reduced(llvm::Value* t) const {
    llvm::Value* n = call(llvm::Intrinsic::roundeven, b.CreateFMul(t, f(1.44269504088896341)));
    llvm::Value* r = b.CreateFSub(t, b.CreateFMul(n, f(0.693359375)));
    r = b.CreateFSub(r, b.CreateFMul(n, f(-2.12194440e-4)));
    llvm::Value* p = polynomial(
        r, {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2, 1.6666665459E-1, 5.0000001201E-1});
    llvm::Value* y = b.CreateFAdd(b.CreateFAdd(b.CreateFMul(p, b.CreateFMul(r, r)), r), f(1.0));
    return {y, b.CreateFPToSI(n, int_type)};
  }
  // 2^n for integer n in [-126, 127].
  llvm::Value* pow2(llvm::Value* n) const {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(n, i(127)), i(23)), float_type);
  }
};

}  // namespace

llvm::Value* emit_exp_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  Helper h(b, x);
  const double kHigh = 88.72283935546875, kLow = -103.972084045410;
  // Clamp first (select, not minnum, so a NaN stays a NaN), so that every
  // conversion below is in range.
  llvm::Value* c = b.CreateSelect(b.CreateFCmpOGT(x, h.f(kHigh)), h.f(kHigh), x);
  c = b.CreateSelect(b.CreateFCmpOLT(c, h.f(kLow)), h.f(kLow), c);
  c = b.CreateSelect(b.CreateFCmpUNO(c, c), h.f(0.0), c);
  auto [y, ni] = h.exp_reduced(c);
  // Scale by 2^n in two steps, so that subnormal results come out right.
  llvm::Value* half = b.CreateAShr(ni, h.i(1));
  y = b.CreateFMul(b.CreateFMul(y, h.pow2(half)), h.pow2(b.CreateSub(ni, half)));
  y = b.CreateSelect(b.CreateFCmpOGT(x, h.f(kHigh)), h.f(std::numeric_limits<double>::infinity()), y);
  y = b.CreateSelect(b.CreateFCmpOLT(x, h.f(kLow)), h.f(0.0), y);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, y);
}

namespace {

// exp(t) for t already in [kBoundedLow, kBoundedHigh]: emit_exp_f32's
// reduction and polynomial without its clamps, edge cases and two-step
// scaling.  2^n is a normal float down to the low bound (n >= -126); from
// t = 88.4 up (n = 128, past exp's overflow at 88.72 by less than 2^n's
// step) 2^n is +inf, so is the result.  A NaN t gives NaN (through the
// polynomial).
constexpr double kBoundedLow = -87.0, kBoundedHigh = 89.0;

llvm::Value* exp_bounded(const Helper& h, llvm::Value* t) {
  auto [y, n] = h.exp_reduced(t);
  return h.b.CreateFMul(y, h.pow2(n));
}

// t clamped to [kBoundedLow, kBoundedHigh]; the selects keep a NaN (x86:
// one minps and one maxps).
llvm::Value* clamp_bounded(const Helper& h, llvm::Value* t) {
  llvm::IRBuilder<>& b = h.b;
  t = b.CreateSelect(b.CreateFCmpOGT(t, h.f(kBoundedHigh)), h.f(kBoundedHigh), t);
  return b.CreateSelect(b.CreateFCmpOLT(t, h.f(kBoundedLow)), h.f(kBoundedLow), t);
}

}  // namespace

llvm::Value* emit_sigmoid_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  Helper h(b, x);
  // From x = 87 up the result is 1 in float32; exp(-x) is +inf from x = -88.4
  // down, giving 0 (the true value is under 4e-39 there).
  llvm::Value* e = exp_bounded(h, clamp_bounded(h, b.CreateFNeg(x)));
  return b.CreateFDiv(h.f(1.0), b.CreateFAdd(h.f(1.0), e));
}

llvm::Value* emit_tanh_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  Helper h(b, x);
  // 1 - 2 / (exp(2x) + 1), the core's expansion; past the bounds it is
  // exactly +-1 in float32.
  llvm::Value* e = exp_bounded(h, clamp_bounded(h, b.CreateFMul(x, h.f(2.0))));
  return b.CreateFSub(h.f(1.0), b.CreateFDiv(h.f(2.0), b.CreateFAdd(e, h.f(1.0))));
}

llvm::Value* emit_erf_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  Helper h(b, x);
  llvm::Value* ax = h.call(llvm::Intrinsic::fabs, x);
  llvm::Value* k = b.CreateFDiv(h.f(1.0), b.CreateFAdd(h.f(1.0), b.CreateFMul(h.f(0.3275911), ax)));
  llvm::Value* poly = h.polynomial(k, {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592});
  // -x^2 at least the bounded range's low end (a select: a NaN stays).
  llvm::Value* t = b.CreateFNeg(b.CreateFMul(ax, ax));
  t = b.CreateSelect(b.CreateFCmpOLT(t, h.f(kBoundedLow)), h.f(kBoundedLow), t);
  llvm::Value* y = b.CreateFSub(h.f(1.0), b.CreateFMul(b.CreateFMul(k, poly), exp_bounded(h, t)));
  llvm::Value* sign = b.CreateAnd(b.CreateBitCast(x, h.int_type), h.i(std::numeric_limits<int32_t>::min()));
  return b.CreateBitCast(b.CreateOr(b.CreateBitCast(y, h.int_type), sign), h.float_type);
}

llvm::Value* emit_log_f32(llvm::IRBuilder<>& b, llvm::Value* x) {
  Helper h(b, x);
  // Subnormals: scale into the normal range first.
  llvm::Value* subnormal = b.CreateFCmpOLT(x, h.f(1.17549435e-38));
  llvm::Value* scaled = b.CreateSelect(subnormal, b.CreateFMul(x, h.f(8388608.0)), x);
  llvm::Value* bits = b.CreateBitCast(scaled, h.int_type);
  // x = m 2^e with m in [0.5, 1).
  llvm::Value* e = b.CreateSub(b.CreateAnd(b.CreateLShr(bits, h.i(23)), h.i(0xff)), h.i(126));
  e = b.CreateSub(e, b.CreateSelect(subnormal, h.i(23), h.i(0)));
  llvm::Value* m = b.CreateBitCast(
      b.CreateOr(b.CreateAnd(bits, h.i(static_cast<int32_t>(0x807fffff))), h.i(0x3f000000)), h.float_type);
  // Centre m around 1: m < sqrt(1/2) -> 2m - 1 (and e - 1), else m - 1.
  llvm::Value* small = b.CreateFCmpOLT(m, h.f(0.707106781186547524));
  e = b.CreateSub(e, b.CreateZExt(small, h.int_type));
  m = b.CreateFSub(b.CreateSelect(small, b.CreateFAdd(m, m), m), h.f(1.0));
  llvm::Value* z = b.CreateFMul(m, m);
  llvm::Value* y =
      h.polynomial(m, {7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1,
                       -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1});
  y = b.CreateFMul(b.CreateFMul(y, m), z);
  llvm::Value* ef = b.CreateSIToFP(e, h.float_type);
  y = b.CreateFAdd(y, b.CreateFMul(ef, h.f(-2.12194440e-4)));
  y = b.CreateFSub(y, b.CreateFMul(z, h.f(0.5)));
  llvm::Value* r = b.CreateFAdd(b.CreateFAdd(m, y), b.CreateFMul(ef, h.f(0.693359375)));
  const double inf = std::numeric_limits<double>::infinity();
  r = b.CreateSelect(b.CreateFCmpOEQ(x, h.f(inf)), h.f(inf), r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, h.f(0.0)), h.f(-inf), r);
  r = b.CreateSelect(b.CreateFCmpOLT(x, h.f(0.0)), h.f(std::numeric_limits<double>::quiet_NaN()), r);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, r);
}

}  // namespace loom::llvm_backend
