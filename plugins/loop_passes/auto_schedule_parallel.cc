// AutoSchedule's parallelism rule: a nest's outer loop (fused with the next
// when it is short) runs in parallel when the nest has work enough for a
// parallel region (AutoSchedule.parallel_min_work).
#include "auto_schedule_rules.h"

namespace loom::loop::auto_schedule {

// Whether a nest has work enough for a parallel region (work_of; a
// symbolic extent counts as enough).
bool StageScheduler::worth_threads(const ForNode* nest) const {
  std::optional<int64_t> work = work_of(nest);
  return !work || *work >= min_work_;
}

// The nest's outer loop parallel (fused with the next when it is short),
// where the nest has work enough and the loop more than one iteration.
void StageScheduler::parallel_outer(const std::string& root) {
  const ForNode* top = find(s_, root);
  std::vector<const ForNode*> chain = perfect_nest(top);
  std::string outer = root;
  // A short outer loop shares the work badly: fuse it with the next.
  if (chain.size() >= 2 && chain[0]->for_kind() == ForKind::kSerial && chain[1]->for_kind() == ForKind::kSerial) {
    auto extent = const_int(chain[0]->extent);
    if (extent && decide("parallel.fuse_outer", *extent < 16)) {
      std::string second = chain[1]->loop_var->name;
      attempt([&] { outer = s_.fuse(root, second); });
    }
  }
  // Loops of one iteration (a batch of one, a blocked convolution's
  // blocks all in one tile) hold no work to share: fuse on through them.
  for (;;) {
    std::vector<const ForNode*> rest = perfect_nest(find(s_, outer));
    auto first = const_int(rest[0]->extent);
    if (rest.size() < 2 || !first || *first != 1 || rest[0]->for_kind() != ForKind::kSerial ||
        rest[1]->for_kind() != ForKind::kSerial)
      break;
    std::string second = rest[1]->loop_var->name;
    if (!attempt([&] { outer = s_.fuse(outer, second); })) break;
  }
  const ForNode* f = find(s_, outer);
  auto extent = const_int(f->extent);
  if (extent && *extent < 2) return;
  if (parallel_) attempt([&] { s_.parallel(outer); });
}

}  // namespace loom::loop::auto_schedule
