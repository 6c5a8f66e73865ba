// Schedules (docs/target-llvm.md, "Schedules"): loop transformations of one prim function,
// written by hand or picked by the AutoSchedule pass.  Each primitive
// checks its preconditions and throws ScheduleError naming the primitive,
// the loop or buffer, and why; a failed primitive leaves the schedule as it
// was.  Loops are named by their loop variable (unique in the function;
// new loops get new unique names, which the primitives return); buffers by
// their name.  The primitives keep the function's results, up to the order
// of floating-point reductions where one says so (rfactor; every other
// primitive keeps each output's summation order).
// A schedule records its trace: each primitive that succeeded, with its
// arguments, as a JSON step (["split", "i", 16]); replaying the trace on
// the same function gives the same schedule (docs/tuning.md, "Traces").
#ifndef LOOM_SCHEDULE_SCHEDULE_H_
#define LOOM_SCHEDULE_SCHEDULE_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "loom/support/error.h"
#include "loom/support/json.h"
#include "loom/tir/function.h"

namespace loom {
// A schedule primitive's precondition failed (loom::ScheduleError, for
// LOOM_THROW).
class ScheduleError : public Error {
 public:
  using Error::Error;
};
}  // namespace loom

namespace loom::tir {

// Whether `axis` names a thread axis (blockIdx.x/y/z, threadIdx.x/y/z).
bool is_thread_axis(const std::string& axis);

class Schedule {
 public:
  explicit Schedule(PrimFunc func);
  PrimFunc func() const { return func_; }

  // Every loop's name, outermost first (pre-order).
  std::vector<std::string> loops() const;

  // loop -> (outer, inner) with inner extent `factor`; a guard keeps the
  // iterations in range when the extent is not a multiple (it goes around
  // the innermost body of the perfect nest below, so reorder still works).
  std::pair<std::string, std::string> split(const std::string& loop, int64_t factor);
  // loop -> {outer, inner, tail}: a nest over the whole multiples of
  // `factor` (outer, then inner of extent `factor`: no guard) followed by
  // the loop's last `extent % factor` iterations (tail, a copy of the body
  // whose loops are renamed with a `_t` suffix).  The iteration order is
  // unchanged, so it is always legal; it is how a symbolic extent (%n rows)
  // gets whole tiles.
  std::vector<std::string> partition(const std::string& loop, int64_t factor);
  // Two directly nested loops -> one over both.
  std::string fuse(const std::string& outer, const std::string& inner);
  // Permutes the named loops, which must lie in one perfect nest (each
  // loop's body the next loop); the loops not named keep their places.
  void reorder(const std::vector<std::string>& order);
  // split + split + reorder: {x_o, y_o, x_i, y_i}.
  std::vector<std::string> tile(const std::string& x, const std::string& y, int64_t fx, int64_t fy);
  // Loop kinds.  parallel: every buffer written in the loop (and not
  // allocated inside it) is written at indices that use the loop variable.
  // vectorize / unroll: a constant extent (VectorizeLoop and UnrollLoop do
  // the work, and say so in an annotation when they cannot).
  void parallel(const std::string& loop);
  // Binds `loop` to a thread axis of a parallel device (blockIdx.x/y/z,
  // threadIdx.x/y/z): each iteration runs on its own thread, and
  // SplitHostDevice makes the loop's extent the launch's size along that
  // axis.  The loop starts at 0, is serial, is not inside another loop
  // bound to the same axis, and its iterations do not race (parallel's
  // condition).
  void bind(const std::string& loop, const std::string& axis);
  void vectorize(const std::string& loop);
  void unroll(const std::string& loop);
  // Loop distribution: the perfect nest from `loop` down, whose innermost
  // body is a sequence (perhaps under a split's guard, which each new nest
  // keeps), becomes one nest per statement (the init, the reduction and
  // any epilogue of a reduction).  Each buffer written in the
  // nest must be accessed there at one index only.  Returns each new nest's
  // loop names, outermost first.
  std::vector<std::vector<std::string>> decompose_reduction(const std::string& loop);
  // An allocated buffer written by one elementwise nest (`B[i, j] = e`) is
  // replaced by `e` at each of its loads, and disappears.  (Here and in
  // reverse_compute_inline, the statements in the buffer's scope are those
  // of its allocation's body, through allocations directly inside it.)
  void compute_inline(const std::string& buffer);
  // The other way: a nest that reads `buffer` only at its own indices and
  // writes another buffer (`C[i, j] = g(B[i, j])`) moves into the nest
  // that produces `buffer`, right after the element is complete.  Where
  // several statements write `buffer` (the pieces of a concatenation),
  // none reading it, each store `B[x] = v` becomes `C[x] = g(v)` and the
  // buffer disappears.
  void reverse_compute_inline(const std::string& buffer);
  // Loads of `buffer` (a parameter the function does not write) read a
  // copy in a new local buffer, filled at the top of the function in the
  // order of `buffer`'s elements.  `layout` maps `buffer`'s indices to
  // the copy's: each of its results is an axis `v`, or a split axis as
  // the pair `v // c` and `v % c` (c > 0 a constant), and every axis
  // appears once (or as one such pair).  So a copy may permute the axes
  // (a transposed weight) and split them (a packed panel,
  // `(k, n) -> (n // 16, k, n % 16)`).  A split whose factor does not
  // divide the extent pads the copy; the padding is never read.  Returns
  // the copy's name.  `scope`: the copy's memory scope, global (the
  // default), or shared or local for a device kernel (see compute_at).
  using IndexMap = std::function<std::vector<PrimExpr>(const std::vector<PrimExpr>& indices)>;
  std::string cache_read(const std::string& buffer, const IndexMap& layout, const std::string& scope = "global");
  // The parameter `buffer` itself (an input the function does not write)
  // takes `layout` (the forms of cache_read; a split that does not divide
  // pads): its shape becomes the layout's and every load is rewritten.
  // The function's attribute param_layouts records it ({"K": "0 // 16, 1,
  // 0 % 16"} for input K, loom/tir/layout.h), a contract: every caller
  // passes that input re-laid out (docs/target-llvm.md, "Parameter
  // layouts").  Refuses a parameter that already has a layout.  An
  // allocated buffer may take a layout too: its stores and loads are
  // rewritten and nothing is recorded (a reduction's accumulator laid
  // out so that the tile's vector axis is its last).
  void transform_layout(const std::string& buffer, const IndexMap& layout);
  // The copy's axis k is buffer's axis axes[k].
  std::string cache_read(const std::string& buffer, const std::vector<int>& axes, const std::string& scope = "global");
  // The loop nest that writes `buffer` (a parameter or allocation; one
  // nest not inside another loop, writing every element, reading none it
  // has not written) writes, and reads back, a new local buffer of the
  // same shape instead; a nest right after it copies that into `buffer`.
  // With reverse_compute_inline of the copy, each element is written out
  // once, when it is complete.  Returns the local buffer's name.  `scope`
  // as for cache_read (a local accumulator: compute_at the writing nest
  // into the copy's loops).
  std::string cache_write(const std::string& buffer, const std::string& scope = "global");
  // The nest rooted at loop `nest` (a producer: every store in it writes
  // one buffer at indices that are its own loop variables) moves to the
  // top of `loop`'s body, its loops cut down to the region of the buffer
  // that one iteration of `loop` reads; so the producer runs per
  // iteration, on the data that iteration needs, while it is in cache.
  // The producer must come before the statement holding `loop` in one
  // sequence; only `loop` may read its buffer, and may not write it;
  // nothing between them may write what the producer reads; under a
  // parallel loop, or one bound to a thread axis whose threads share the
  // buffer, the regions of different iterations must not overlap.  A
  // global buffer keeps its shape.  A shared or local one (cache_read or
  // cache_write into that scope) holds the region only: its shape becomes
  // the region's extents, which must be constants; its indices are taken
  // from the region's start; the producer's loops run from 0 over the
  // region (guarded where it passes their range), so they can be bound to
  // threads that fill it together; and its allocation moves into `loop`.
  // A shared buffer is one per block (iterations of blockIdx loops may
  // read overlapping regions), a local one one per thread.  Barriers
  // between a shared buffer's writes and reads are ThreadSync's.
  void compute_at(const std::string& nest, const std::string& loop);
  // The allocation `buffer`, used only inside `loop`, moves into `loop`'s
  // body and holds only the region one iteration of `loop` touches (its
  // shape the region's extents, which must be constants; its indices
  // taken from the region's start): a tile's accumulator becomes a few
  // registers' worth, not an output-sized array written out and read
  // back.  Refused where a value could pass between iterations of `loop`
  // or of a loop between it and the allocation (each must move the
  // region by at least its extent along an axis that no other moves).
  void allocate_at(const std::string& buffer, const std::string& loop);
  // Reduction factoring: a reduction `B[idx] = B[idx] + e` inside a
  // perfect nest of reduction loops (whose variables idx does not use)
  // accumulates instead into partial sums rf[v], one per value of the
  // constant-extent reduction loop `loop` (variable v), which are set to
  // zero before the nest and added into B[idx] after it, so `loop` can be
  // vectorized or run in parallel.  This primitive changes the order of
  // the floating-point sum.  Updates B[idx] = max(B[idx], e) and min
  // work the same way, the partial results starting from -inf and +inf
  // (the lowest and highest integers), combined with max or min (the
  // result is exact).  Returns the partial buffer and the loops that set
  // and combine it.
  struct RFactor {
    std::string buffer, init, final;
  };
  RFactor rfactor(const std::string& loop);

  // The trace: the primitives that succeeded, in order, each a JSON array
  // of the primitive's name and its arguments (loop and buffer names,
  // factors, scopes; a layout as its text, "0 // 16, 1, 0 % 16").  tile
  // records the splits and the reorder it makes; a primitive called by
  // another is not recorded twice.
  const std::vector<JsonValue>& trace() const { return trace_; }
  std::string trace_json() const;
  // Applies one step of a trace; a malformed step or a failed primitive
  // is a ScheduleError naming the step.
  void apply(const JsonValue& step);
  // A schedule of `func` with every step of `trace` (JSON text, an array
  // of steps) applied; ScheduleError naming the first step that fails
  // ("step 3 (reorder): ..."), ParseError for text that is not JSON.
  static Schedule replay(PrimFunc func, const std::string& trace);

 private:
  class Recorder;
  void unique_buffer_names();
  PrimFunc func_;
  std::vector<JsonValue> trace_;
  int depth_ = 0;  // primitives running: only the outermost records its step
};

}  // namespace loom::tir

#endif  // LOOM_SCHEDULE_SCHEDULE_H_
