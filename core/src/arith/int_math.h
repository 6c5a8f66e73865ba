// Checked integer arithmetic shared by the bound analyzer and the
// simplifier (private to core/src/arith).
#ifndef LOOM_SRC_ARITH_INT_MATH_H_
#define LOOM_SRC_ARITH_INT_MATH_H_

#include <cstdint>

#include "loom/tir/expr.h"

namespace loom::arith::detail {

inline bool checked_add(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }
inline bool checked_mul(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }

inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Wraps `v` to the width of integer type `t`.
inline int64_t wrap(DataType t, int64_t v) {
  if (t.bits >= 64) return v;
  uint64_t mask = (uint64_t{1} << t.bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (t.code == DataType::kInt && (u >> (t.bits - 1)) & 1) u |= ~mask;
  return static_cast<int64_t>(u);
}

}  // namespace loom::arith::detail

#endif  // LOOM_SRC_ARITH_INT_MATH_H_
