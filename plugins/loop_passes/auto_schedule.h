// AutoSchedule: a schedule for every prim function, from its shape alone
// (docs/passes.md, docs/target-llvm.md "The default schedule").
#ifndef LOOM_PLUGINS_LOOP_PASSES_AUTO_SCHEDULE_H_
#define LOOM_PLUGINS_LOOP_PASSES_AUTO_SCHEDULE_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "loom/schedule/schedule.h"
#include "loom/transform/pass.h"

namespace loom::loop {

transform::Pass AutoSchedule();

// AutoSchedule's choices (docs/tuning.md, "Search space"): where a rule
// picks a value from the function's shape (a tile's rows and vectors,
// whether to pack an operand, the reduction's block, how many partial
// sums, whether a nest runs in parallel, ...) it asks a Decider for the
// named decision among the values the rule allows, offering its own
// choice.  The base class takes that choice; a tuning search samples.
class Decider {
 public:
  virtual ~Decider() = default;
  // `options` is not empty and holds `preferred`.
  virtual int64_t choose(const std::string& name, const std::vector<int64_t>& options, int64_t preferred);
};

// One prim function scheduled by AutoSchedule's rules with `decider`'s
// choices: `vector_bits` the target's vector width, `constant` the buffer
// parameters every caller passes a constant (they may take a layout),
// `min_work` the smallest nest that runs in parallel, `native` the
// target's native intrinsics (PairProducts will pair the products whose
// dot2_i16 or dot2_bf16 is among them).  The Schedule holds the trace;
// finish_schedule gives the function AutoSchedule would.
tir::Schedule schedule_with(const tir::PrimFunc& f, int vector_bits, const std::set<std::string>& constant,
                            int64_t min_work, Decider& decider, const std::set<std::string>& native = {});
tir::PrimFunc finish_schedule(const tir::Schedule& s, const tir::PrimFunc& original);

// The attribute that makes AutoSchedule leave a function as it is: set on
// a function scheduled by hand, by a tuning database, or by a candidate.
inline constexpr const char* kScheduledAttr = "scheduled";

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_AUTO_SCHEDULE_H_
