// Building prim IR: sequences, the statement that does nothing, and (in a
// later step) the builder operator lowerings use.
#ifndef LOOM_TIR_BUILDER_H_
#define LOOM_TIR_BUILDER_H_

#include <vector>

#include "loom/tir/stmt.h"

namespace loom::tir {

// The statement that does nothing (`evaluate(0)`), and the test for it.
Stmt no_op();
bool is_no_op(const Stmt& s);

// A sequence: nested sequences flattened, no-ops dropped, one statement
// as itself, none as no_op().
Stmt seq(std::vector<Stmt> stmts);

}  // namespace loom::tir

#endif  // LOOM_TIR_BUILDER_H_
