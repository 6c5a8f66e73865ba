// What AutoSchedule's files share (private to plugins/loop_passes/): the
// questions its rules ask about a loop nest, and StageScheduler, which
// schedules one nest.  Its methods live in one file per rule, as TVM's
// meta-schedule keeps one file per rule:
//   auto_schedule.cc                   the pass and the driver: the order of
//                                      the steps, and each nest's rule (run)
//   auto_schedule_analysis.cc          the questions about a nest (below)
//   auto_schedule_elementwise.cc       inner loops vectorized; a producer
//                                      computed inside its consumer (localize)
//   auto_schedule_parallel.cc          outer loops parallel
//   auto_schedule_vector_reduction.cc  partial sums per lane (rfactor)
//   auto_schedule_tiling.cc            register tiles of reductions
//   auto_schedule_channel_tile.cc      the channel tile of NCHW convolutions
//   auto_schedule_packing.cc           a tile's operands packed into panels
#ifndef LOOM_PLUGINS_LOOP_PASSES_AUTO_SCHEDULE_RULES_H_
#define LOOM_PLUGINS_LOOP_PASSES_AUTO_SCHEDULE_RULES_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "auto_schedule.h"
#include "pair_products.h"

#include <loom/object/traversal.h>
#include <loom/tir/functor.h>
#include <loom/schedule/schedule.h>
#include <loom/tir/util.h>

namespace loom::loop::auto_schedule {

using namespace tir;  // NOLINT: the prim IR and its utilities read best unqualified here

// ---- Questions about a nest (auto_schedule_analysis.cc)

// The loop named `name` in the schedule's function; null when there is none.
const ForNode* find(const Schedule& s, const std::string& name);

// The loops not inside another loop, in order, appended to `out`.
void roots(const Stmt& s, std::vector<std::string>& out);

// Whether a nest contains a reduction: a store inside a loop whose
// variable its indices do not use.
bool has_reduction(const ForNode* top);

// The work of a nest: its stores, each counted once per iteration of the
// loops around it; nullopt when a loop's extent is not a constant.
std::optional<int64_t> work_of(const ForNode* top);

// The buffers the schedule's function allocates, in order.
std::vector<std::string> allocated(const Schedule& s);

// How far the element `indices` of `buffer` moves in memory per step of
// `j` when that is a constant (0: invariant, 1: contiguous).
std::optional<int64_t> stride_along(const Buffer& buffer, const Array& indices, const VarNode* j);

// The same for a load or a store.
template <class Access>
std::optional<int64_t> stride_along(const Access* a, const VarNode* j) {
  return stride_along(a->buffer, a->indices, j);
}

// The accesses along j are contiguous, or invariant (a broadcast).
template <class Access>
bool contiguous_along(const Access* a, const VarNode* j) {
  std::optional<int64_t> step = stride_along(a, j);
  return step && (*step == 0 || *step == 1);
}

// Loads in `body` along `j` that are neither contiguous nor invariant.
std::vector<const BufferLoadNode*> strided_loads(const Stmt& body, const VarNode* j);

// How many loads in `body` do not vary along `j`, leaving out those of
// `written` (the nest's own accumulators): the shared input a step reads.
int64_t loads_not_along(const Stmt& body, const VarNode* j, const std::set<const Object*>& written);

// The loops of a tile's body (init; reduction loops; epilogue): its
// reduction nests.
std::vector<Stmt> reduction_loops(const Stmt& body);

// The stores of a tile's body that accumulate: those in its reduction
// loops, and the init stores of the same buffers.
std::vector<const BufferStoreNode*> accumulator_stores(const Stmt& body);

// Runs the schedule primitives in `f`; false when one refuses (a
// ScheduleError), the primitives before it left applied.
template <class F>
bool attempt(F&& f) {
  try {
    f();
    return true;
  } catch (const ScheduleError&) {
    return false;
  }
}

// ---- A tile's operands (auto_schedule_packing.cc)

// An operand of a tile: a load with one index exactly v (a row or a
// column of the tile), leading batch indices that use no reduction loop
// (the loops inside the tile's body) nor i or j, and the rest indexed by
// the reduction only (or constants), at least one of them.  With v = j:
// the right operand of a matmul (B[r, j]), a dense weight W[j, r], a
// batched B[b, j, r], a channels-last convolution's weight W[co, kh, kw,
// ci]; with v = i: the left operand read transposed (A[r, i]).
struct Operand {
  const BufferLoadNode* load;
  size_t at;     // the index that is v
  size_t batch;  // leading batch indices
};

// The operands in `body` of a tile with rows i and vectors along j that
// are read along `v` (Operand): at an index v, or with `group` (the outer
// loop split_groups made) at group * K + v, K constant.
std::vector<Operand> operands_along(const Stmt& body, const VarNode* i, const VarNode* j, const VarNode* v,
                                    const VarNode* group = nullptr);

// The layout of operand `o` in panels of `c` values of its index v; a
// copy whose panel is all of v (`extent` at most c) without the split.
// With `grouped` (PairProducts' loop, whose variable is one of o's
// indices, of an extent its group divides): that index's steps in groups
// of 2 or 4, each group's values side by side innermost, as PairProducts
// reads them.
Schedule::IndexMap panel_layout(int64_t c, const Operand& o, int64_t extent = 0, const GroupedLoop& grouped = {});
// The position of o's index that is `grouped`'s variable, of an extent
// its group divides, which panel_layout splits into groups; o's rank
// when none is.
size_t paired_index(const Operand& o, const GroupedLoop& grouped);

// ---- One nest's schedule

// Schedules the nests of one function, one at a time (run), applying the
// rules to `s`; a rule whose precondition fails leaves `s` as it was.
class StageScheduler {
 public:
  // `constant`: the buffer parameters every caller passes a constant,
  // which may take a layout instead of being packed per call.
  // `min_work`: a nest with less work (work_of) runs on one thread.
  // `native`: the target's native intrinsics; PairProducts will pair the
  // products whose dot2 intrinsic is among them, whose operands' panels
  // then keep pairs side by side.
  StageScheduler(Schedule& s, int vector_bits, std::set<std::string> constant, int64_t min_work, Decider& decider,
                 std::set<std::string> native = {})
      : s_(s),
        decider_(decider),
        vector_bits_(vector_bits),
        min_work_(min_work),
        constant_(std::move(constant)),
        native_(std::move(native)) {}

  // The elementwise nest `producer` computed per iteration of the
  // scheduled nest `consumer`'s outer loop; false (schedule unchanged)
  // when it does not fit (auto_schedule_elementwise.cc).
  bool localize(const std::string& producer, const std::string& consumer);

  // The nest `root` scheduled by the rule its shape calls for
  // (auto_schedule.cc).
  void run(const std::string& root);

 private:
  // auto_schedule_parallel.cc

  // Whether a nest has work enough for a parallel region.
  bool worth_threads(const ForNode* nest) const;
  // The nest's outer loop parallel, fused with the next when it is short.
  void parallel_outer(const std::string& root);

  // auto_schedule_packing.cc

  // The operand `name` in `layout`, packed at compile time or copied per
  // call; the buffer the nest now reads, "" when neither happened.
  std::string pack(const std::string& name, const Schedule::IndexMap& layout, bool copy,
                   std::vector<std::string>& copies, bool& relaid, const Schedule::IndexMap& copy_layout = nullptr);

  // auto_schedule_analysis.cc

  // The lanes of a vector of the widest value `body` stores.
  int lanes_for(const Stmt& body) const;
  // The one-store loops of a nest; `reduction`: those that reduce.
  std::vector<std::string> leaves(const std::string& root, bool reduction);

  // auto_schedule_elementwise.cc

  // The nest's innermost loop vectorized; returns the nest's root afterwards.
  std::string vectorize_inner(const std::string& root);
  // The other one-store loops of a nest vectorized where they can be.
  void vectorize_leaves(const std::string& root);

  // auto_schedule_vector_reduction.cc

  // Each reduction of the nest that is not tiled in partial sums per lane.
  void vector_reductions(const std::string& root);
  // One reduction loop in partial sums per lane.
  void vector_reduction(const std::string& loop);

  // auto_schedule_tiling.cc

  // The register-tiled reduction; false (schedule unchanged) when the nest
  // does not have the shape.
  bool tile_reduction(const std::string& root);
  // A reduction nest whose outer loop has a symbolic extent (%n rows)
  // partitioned into whole blocks of rows and a tail (Schedule::partition);
  // the roots of the two nests, or nothing when it does not apply.
  std::optional<std::pair<std::string, std::string>> partition_rows(const std::string& root);
  // The tail of partition_rows over operands its block packed into panels
  // `panel` wide: the reduction with the panel's columns innermost and
  // vectorized; false (schedule unchanged) when it does not fit.
  bool tail_over_panels(const std::string& root, int64_t panel);
  // The two innermost spatial loops fused when the inner one is short;
  // returns the nest's root.
  std::string fuse_short_rows(const std::string& root);
  // The innermost spatial loop split by a grouped convolution's channels
  // per group, where its reduction reads an operand at j // K.
  void split_groups(const std::string& root);
  // The loop over groups split_groups made for the tile() in progress, if
  // it did; read before channel_tile, whose own tile() resets it.
  const VarNode* group_ = nullptr;
  // The nest register-tiled; false when it does not have the shape.
  bool tile(const std::string& nest);
  // The tile's shape with the decider's say.
  std::pair<int64_t, int64_t> choose_tile(int64_t extent, int64_t vectors, int64_t ti, int64_t tj);
  static std::vector<int64_t> column_counts(int64_t vectors);
  // The loop that picks a channel block of a blocked nest, or null.
  static const ForNode* block_loop(const std::vector<const ForNode*>& chain, size_t spatial, const ForNode* i);
  // Multiply-adds per cycle of a ti x tj tile by tile_shape's model.
  static double tile_rate(int64_t ti, int64_t tj, bool own_rows = false);
  // The same over `extent` rows in tiles of ti, a guarded last tile's idle
  // rows counted against it.
  static double rows_rate(int64_t extent, int64_t ti, int64_t tj, bool own_rows = false);
  // The register tile with the most multiply-adds per cycle by the model.
  std::pair<int64_t, int64_t> tile_shape(int64_t extent, int64_t vectors, bool own_rows = false,
                                         bool tails = false) const;
  // The tile's loops unrolled, unrolled and vectorized; the reduction
  // loops below them, outermost first.
  std::vector<std::string> register_tile(const std::string& rows, const std::string& vectors, const std::string& lanes);
  // The innermost window loop of a tile (`order`: the reduction loops,
  // then the tile's) unrolled where selects check its taps (a padded
  // input read in place) and the tile stays small.
  void unroll_guarded_window(const std::vector<std::string>& order);
  // Each column tile's panels packed, then each row tile's init,
  // reduction and epilogue; `panels_outer`: the column tiles outside the
  // spatial loops above the tile's rows; `accumulator`, the buffer the
  // reduction accumulates in, allocated per tile where it can be.
  bool tile_panels(const std::string& root, const std::string& joo, const std::string& io, const std::string& ii,
                   const std::string& joi, const std::string& ji, bool rows_outer, bool panels_outer,
                   const std::string& accumulator, const std::string& half = "");

  // auto_schedule_channel_tile.cc

  // A window nest tiled with its output channels as the vector axis when
  // the model says it is faster than `rate`; false (schedule unchanged)
  // otherwise.
  bool channel_tile(const std::string& root, double rate);

  // A yes/no decision (docs/tuning.md, "Search space").
  bool decide(const std::string& name, bool preferred) { return decider_.choose(name, {0, 1}, preferred ? 1 : 0) != 0; }

  Schedule& s_;
  Decider& decider_;
  int vector_bits_;
  bool channel_mode_ = false;  // tiling the nest channel_tile reordered
  int64_t min_work_;
  bool parallel_ = true;  // the nest being scheduled has work enough for threads
  std::set<std::string> constant_;
  std::vector<std::string> copies_;      // the roots of the packing copies tile() made
  std::vector<std::string> row_copies_;  // the roots of the left operand's copies
  std::vector<std::string> moved_;       // their roots once moved into the column-tile loop
  std::set<std::string> partitioned_;    // the nests partition_rows made (not partitioned again)
  int64_t panel_ = 0;                    // the panel width tile() gave a constant's layout, 0 for none
  std::set<std::string> native_;         // the target's native intrinsics (which products PairProducts pairs)
};

}  // namespace loom::loop::auto_schedule

#endif  // LOOM_PLUGINS_LOOP_PASSES_AUTO_SCHEDULE_RULES_H_
