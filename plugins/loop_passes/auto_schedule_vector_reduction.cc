// AutoSchedule's rule for reductions that are not tiled: where the
// innermost reduction loop reads contiguously (a row's sum or max), partial
// results per lane (rfactor) in a few independent vector accumulators,
// combined as vectors, then lane by lane.  The only rule that changes the
// order in which an output element accumulates.
#include "auto_schedule_rules.h"

namespace loom::loop::auto_schedule {

// Each reduction that is not tiled but whose innermost loop reads along
// it contiguously (a row's sum, a row's max: softmax has both): its
// partial results per lane (rfactor) in a few independent vector
// accumulators.  This changes the order of a sum.
void StageScheduler::vector_reductions(const std::string& root) {
  for (const std::string& name : leaves(root, true)) vector_reduction(name);
}

// One reduction loop in partial sums per lane (vector_reductions).
void StageScheduler::vector_reduction(const std::string& loop) {
  const ForNode* r = find(s_, loop);
  if (!r) return;
  int lanes = lanes_for(r->body);
  auto extent = const_int(r->extent);
  if (lanes < 2 || !extent || *extent < 2 * lanes) return;
  if (!strided_loads(r->body, r->loop_var.get()).empty()) return;
  std::vector<int64_t> counts{1};
  for (int64_t c : {2, 4, 8})
    if (*extent >= 2 * c * lanes) counts.push_back(c);
  int64_t chains = decider_.choose("reduction.chains", counts, *extent >= 8 * lanes ? 4 : *extent >= 4 * lanes ? 2 : 1);
  Schedule saved = s_;
  try {
    auto [ro, ri] = s_.split(r->loop_var->name, chains * lanes);
    Schedule::RFactor rf = s_.rfactor(ri);
    auto [rio, rii] = s_.split(ri, lanes);
    s_.unroll(rio);
    s_.vectorize(rii);
    auto [io, ii] = s_.split(rf.init, lanes);
    s_.vectorize(ii);
    // The chains combined as vectors first, then the lanes: chains - 1
    // vector steps and `lanes` scalar ones instead of chains x lanes
    // scalar ones (a 256-long row spent a quarter of its time there).
    if (chains > 1) {
      auto [fo, fi] = s_.split(rf.final, lanes);
      Schedule::RFactor lanes_rf = s_.rfactor(fi);
      s_.vectorize(fi);
      s_.unroll(fo);
      s_.vectorize(lanes_rf.init);
      s_.unroll(lanes_rf.final);
    } else {
      s_.unroll(rf.final);
    }
  } catch (const ScheduleError&) {
    s_ = saved;
  }
}

}  // namespace loom::loop::auto_schedule
