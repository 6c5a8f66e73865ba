// The two kernels DefaultDeviceSchedule builds beyond a thread per output
// (docs/devices.md, "The default device schedule"): a cross-thread
// reduction per row, and shared-memory tiles for a contraction (matmul,
// dense, conv2d).  Both return the loop nest that replaces a root nest,
// or nullopt when the nest does not have the form they take (the caller
// then gives it a thread per output).
//
// Inside a thread-bound loop, the body runs on every thread of the block
// at once and tir.barrier() waits for all of them: these kernels are
// written for that (SIMT) reading, which a device's codegen gives them.
#ifndef LOOM_PLUGINS_LOOP_PASSES_DEVICE_KERNELS_H_
#define LOOM_PLUGINS_LOOP_PASSES_DEVICE_KERNELS_H_

#include <loom/tir/function.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace loom::loop {

// Fresh names for loops and buffers, none in `taken` (which grows).
class FreshNames {
 public:
  explicit FreshNames(std::set<std::string>& taken) : taken_(taken) {}
  std::string operator()(const std::string& base);

 private:
  std::set<std::string>& taken_;
};

// Whether every store in `loop`, to a buffer not allocated inside it,
// uses its variable in an index that reads no memory: its iterations
// write disjoint elements (the spatial loops of an elementwise operator,
// the rows of a reduction; not a scatter's data-dependent positions).
bool writes_disjoint(const tir::ForNode* loop);

// A block per row: `row_body` (what runs for one row, the body under the
// fused spatial loops, or a whole nest with no spatial loop) on `threads`
// threads of one block, rounded down to a power of two (at least 2).
// Each reduction loop nest in it (an update B[i] = op(B[i], e), op +,
// max or min) becomes a cross-thread reduction: each thread combines a strided share, then a tree in shared
// memory with barriers; each loop whose iterations write disjoint
// elements is spread over the threads; stores to the row's private
// (local) buffers run on every thread alike, other stores on thread 0,
// each followed by a barrier.  nullopt for any other statement, a private
// buffer written by a spread loop, or a row without a reduction of at
// least `threads / 4` elements.  The sum's order changes (as rfactor's);
// max and min are exact.
std::optional<tir::Stmt> cross_thread_rows(const tir::Stmt& row_body, int64_t threads, FreshNames& names);

// The number of elements of the largest reduction in `row_body` (the
// largest int64 for one of symbolic extent; 0 when none): the rows
// schedule pays when there are fewer rows than that.
int64_t largest_reduction(const tir::Stmt& row_body);

// Shared-memory tiles for a contraction: the perfect nest `spatial`
// (constant extents; its loops' variables index the output C, each once)
// whose body is C[i] = init; a perfect nest of reduction loops (constant
// extents) around C[i] = C[i] + x * y.  The spatial loops used by x only
// form M, those used by y only N, the rest Z; K is the reduction loops.
// Each block computes a tile of M x N for one Z: per chunk of K it loads
// the chunk of x and y into shared memory (cooperatively, zero outside
// the ranges), waits at a barrier, and each thread accumulates a register
// tile of up to 8 x 8 outputs in K order, so results are bit-identical to
// the serial nest.  The block has 16 x 16 threads where `threads` is at
// least 256, else 8 x 8.  nullopt for another form, when M or N has fewer
// than 16 elements, or `threads` is below 64.
std::optional<tir::Stmt> tiled_contraction(const std::vector<const tir::ForNode*>& spatial, int64_t threads,
                                           FreshNames& names);

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_DEVICE_KERNELS_H_
