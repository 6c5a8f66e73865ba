// PairProducts: reductions over products of narrow integers (or of
// bfloat16 values into float32) take their reduction two steps at a time,
// each pair one dot2_i16 (dot2_bf16), or uint8 by int8 four at a time, one
// dot4_u8i8 each (docs/passes.md).
#ifndef LOOM_PLUGINS_LOOP_PASSES_PAIR_PRODUCTS_H_
#define LOOM_PLUGINS_LOOP_PASSES_PAIR_PRODUCTS_H_

#include <cstdint>
#include <set>
#include <string>

#include "loom/tir/stmt.h"
#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass PairProducts();

// The loop PairProducts groups in the first nest of `s` it groups on a
// target whose native intrinsics are `native` (var null when it groups
// none), and how many steps at a time (2 or 4): AutoSchedule lays out
// panels for it.
struct GroupedLoop {
  const tir::VarNode* var = nullptr;
  int64_t group = 0;
};
GroupedLoop grouped_loop(const tir::Stmt& s, const std::set<std::string>& native);

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_PAIR_PRODUCTS_H_
