// Small prim IR utilities: constants, loop nests, a prim function with a
// new body.
#ifndef LOOM_TIR_UTIL_H_
#define LOOM_TIR_UTIL_H_

#include <optional>
#include <string>
#include <vector>

#include "loom/tir/function.h"

namespace loom::tir {

std::optional<int64_t> const_int(const PrimExpr& e);
bool is_int(DataType t);

// `loop` as a serial loop whose annotations say why a pass left it:
// `key: "reason"` (VectorizeLoop's and UnrollLoop's refusals).
Stmt serial_with_note(const ForNode& loop, const std::string& key, const std::string& reason);

// The perfect nest from `top` down: `top`, then each loop that is the
// whole body of the one before.
std::vector<const ForNode*> perfect_nest(const ForNode* top);

// A prim function with a new body (parameters, result and attributes kept).
PrimFunc with_body(const PrimFuncNode& f, const Stmt& body);

}  // namespace loom::tir

#endif  // LOOM_TIR_UTIL_H_
