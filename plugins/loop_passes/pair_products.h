// PairProducts: reductions over products of narrow integers (or of
// bfloat16 values into float32) take their reduction two steps at a time,
// each pair one dot2_i16 (dot2_bf16) (docs/passes.md).
#ifndef LOOM_PLUGINS_LOOP_PASSES_PAIR_PRODUCTS_H_
#define LOOM_PLUGINS_LOOP_PASSES_PAIR_PRODUCTS_H_

#include <set>
#include <string>

#include "loom/tir/stmt.h"
#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass PairProducts();

// The variable of the loop PairProducts pairs in the first nest of `s` it
// pairs on a target whose native intrinsics are `native`, null when it
// pairs none: AutoSchedule lays out panels for it.
const tir::VarNode* paired_loop(const tir::Stmt& s, const std::set<std::string>& native);

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_PAIR_PRODUCTS_H_
