// AutoSchedule's register tiling of reductions over two or more spatial
// loops (matmul, dense, batch matmul, convolutions, pools): ti rows by tj
// vectors, unrolled, the innermost loop vectorized.  With packed panels
// (auto_schedule_packing.cc) or for a window nest each tile runs its
// init, whole reduction and epilogue (tile_panels); otherwise init,
// reduction and epilogue become nests over the whole output and a long
// reduction is blocked for the L1 cache.  The shape comes from a simple
// model of the core (tile_shape); the decider may pick another.
#include "auto_schedule_rules.h"
#include "pair_products.h"

#include <algorithm>
#include <optional>
#include <tuple>

namespace loom::loop::auto_schedule {

// The register-tiled reduction; false (schedule unchanged) when the nest
// does not have the shape.
bool StageScheduler::tile_reduction(const std::string& root) {
  Schedule saved = s_;
  try {
    copies_.clear();
    moved_.clear();
    row_copies_.clear();
    if (tile(root)) {
      // The packing copies, now inside the column-tile loop.
      for (const std::string& c : moved_) vectorize_inner(c);
      // The left operand's copies, nests of their own.
      bool parallel = parallel_;
      for (const std::string& c : row_copies_) {
        parallel_ = worth_threads(find(s_, c));
        parallel_outer(vectorize_inner(c));
      }
      parallel_ = parallel;
      return true;
    }
  } catch (const ScheduleError&) {
  }
  s_ = saved;
  panel_ = 0;  // whatever a failed attempt packed is undone
  return false;
}

// Rows of a symbolic count (a dense over %n tokens) cannot be tiled as
// they are: a tile needs a constant extent, and a guard inside the tile
// would check every row at every step of the reduction.  The nest is
// partitioned instead into blocks of kRowBlock rows, which tile() tiles
// like any constant extent (a constant operand packed into panels at
// compile time), and a tail of fewer rows (a decode step's one token),
// which reads the same panels with their columns innermost and
// vectorized (tail_over_panels).  Only a root loop is partitioned (a
// batch loop of constant extent outside the rows keeps the nest as it
// is).
namespace {
constexpr int64_t kRowBlock = 32;
// The bytes a core keeps in its cache for the tile order's model (the L2
// of current x86 server cores: 1 MiB on Zen 4 and 5, 1.25 on Ice Lake,
// 2 on Sapphire and Granite Rapids; the smallest).  A constant, not the
// build machine's, so a build does not depend on where it runs.
constexpr int64_t kCoreCacheBytes = int64_t{1} << 20;
}  // namespace

std::optional<std::pair<std::string, std::string>> StageScheduler::partition_rows(const std::string& root) {
  const ForNode* top = find(s_, root);
  std::vector<const ForNode*> chain = perfect_nest(top);
  if (const_int(top->extent) || chain.size() < 2 || chain.back()->body.as<SeqStmtNode>() == nullptr ||
      partitioned_.count(root) || !decide("rows.partition", true)) {
    return std::nullopt;
  }
  std::vector<std::string> parts;
  if (!attempt([&] { parts = s_.partition(root, kRowBlock); })) return std::nullopt;
  partitioned_.insert(parts[0]);
  partitioned_.insert(parts[2]);
  return std::make_pair(parts[0], parts[2]);
}

bool StageScheduler::tail_over_panels(const std::string& root, int64_t panel) {
  Schedule saved = s_;
  try {
    for (const std::vector<std::string>& nest : s_.decompose_reduction(root)) {
      const ForNode* top = find(s_, nest[0]);
      if (!has_reduction(top)) {
        parallel_outer(vectorize_inner(nest[0]));
        continue;
      }
      // rows, columns, reduction: the columns split by the panel, whose
      // part inside a panel goes innermost (contiguous in the packed
      // operand) and becomes the vector.
      const auto* reduction = nest.size() == 2 ? find(s_, nest[1])->body.as<ForNode>() : nullptr;
      if (!reduction) throw ScheduleError("tail_over_panels: not a rows x columns nest over one reduction loop");
      const std::string k = reduction->loop_var->name;
      // Every operand the reduction reads along the columns must be in
      // panels (its last index the column modulo the panel); one still in
      // its own layout would be gathered lane by lane.
      const VarNode* column = find(s_, nest[1])->loop_var.get();
      std::set<const Object*> accumulators;  // the buffers the reduction writes (and reads back)
      Visitor stores;
      stores.on<BufferStoreNode>([&](const BufferStoreNode* st) {
        accumulators.insert(st->buffer->data.get());
        stores.visit_children(st);
      });
      stores.visit(Any(reduction->body));
      bool panels = true;
      Visitor loads;
      loads.on<BufferLoadNode>([&](const BufferLoadNode* l) {
        if (!accumulators.count(l->buffer->data.get()) && uses_var(Any(l->indices), column)) {
          const auto* last =
              l->indices.size() ? l->indices[l->indices.size() - 1].cast<PrimExpr>().as<FloorModNode>() : nullptr;
          auto width = last ? const_int(last->b) : std::nullopt;
          panels = panels && width && *width == panel;
        }
        loads.visit_children(l);
      });
      loads.visit(Any(reduction->body));
      if (!panels) throw ScheduleError("tail_over_panels: an operand is not in panels");
      // Several panels at once where a step is light (a float or int8
      // dense: one input per step): each panel is a stream of its own, and
      // one core reads memory faster over several streams than over one
      // (8.6-9 GB/s for one, 11-12.7 for four, in a plain C loop here).
      // A decode step's float32 denses took 0.75x their time over four
      // panels at one thread (0.83x at two), int8's 0.78x; an int4 step
      // (32 inputs, converted weights) ran 1.16x slower, its registers
      // spent.  At least 8 groups of panels are left to the threads.
      int64_t shared_loads = loads_not_along(reduction->body, column, accumulators);
      auto columns = const_int(find(s_, nest[1])->extent);
      int64_t count = columns && *columns % panel == 0 ? *columns / panel : 0, streams = 1;
      for (int64_t c : {4, 2})
        if (streams == 1 && shared_loads <= 2 && count % c == 0 && count / c >= 8) streams = c;
      streams = decider_.choose("tail.streams", {1, 2, 4}, streams);
      if (streams > 1 && (count == 0 || count % streams != 0)) streams = 1;
      auto [jo, ji] = s_.split(nest[1], panel);
      if (streams > 1) {
        std::string group;
        std::tie(jo, group) = s_.split(jo, streams);
        s_.reorder({jo, k, group, ji});
        s_.unroll(group);
      } else {
        s_.reorder({jo, k, ji});
      }
      // Whole vectors of the target's width (a panel of 24 as one <24 x
      // i8> vector converted to float ran 4 times slower than 3 of 8).
      int lanes = lanes_for(find(s_, ji)->body);
      if (lanes > 1 && panel % lanes == 0 && panel > lanes) {
        auto [jio, jii] = s_.split(ji, lanes);
        s_.unroll(jio);
        s_.vectorize(jii);
      } else {
        s_.vectorize(ji);
      }
      // The threads share the columns: the rows are few (one in decode).
      std::string outer = nest[0];
      attempt([&] { outer = s_.fuse(nest[0], jo); });
      if (parallel_) attempt([&] { s_.parallel(outer); });
    }
    return true;
  } catch (const ScheduleError&) {
    s_ = saved;
    return false;
  }
}

// The two innermost spatial loops fused when the inner one is short
// (a few vectors or not whole ones) and every access moves contiguously
// along the fused loop: a 1x1 convolution over a 7x7 map (NCHW) then has
// a vector axis of 49 values instead of 7.  Returns the nest's root.
std::string StageScheduler::fuse_short_rows(const std::string& root) {
  std::vector<const ForNode*> chain = perfect_nest(find(s_, root));
  if (chain.size() < 3 || chain.back()->body.as<SeqStmtNode>() == nullptr) return root;
  const ForNode *h = chain[chain.size() - 2], *w = chain.back();
  int lanes = lanes_for(w->body);
  auto eh = const_int(h->extent), ew = const_int(w->extent);
  if (!eh || !ew || *eh < 2 || (*ew % lanes == 0 && *ew >= 4 * lanes)) return root;
  Schedule saved = s_;
  std::string hname = h->loop_var->name;
  std::string fused;
  if (!attempt([&] { fused = s_.fuse(hname, w->loop_var->name); })) return root;
  const ForNode* f = find(s_, fused);
  bool contiguous = strided_loads(f->body, f->loop_var.get()).empty();
  Visitor stores;
  stores.on<BufferStoreNode>([&](const BufferStoreNode* st) {
    contiguous =
        contiguous && (!uses_var(Any(st->indices), f->loop_var.get()) || stride_along(st, f->loop_var.get()) == 1);
    stores.visit_children(st);
  });
  stores.visit(Any(f->body));
  if (!contiguous) {
    s_ = saved;
    return root;
  }
  return hname == root ? fused : root;
}

// A grouped convolution (1 < groups < channels) reads its input at the
// output channel's group, x[..., (j // K) * C + c] for K output and C
// input channels a group: along j that operand is neither contiguous nor
// shared, so no tile fit and the nest ran scalar (ResNeXt-50's 3x3 layers
// at 2-3 GFLOP/s).  j split by K (Schedule::split decides (o * K + i) //
// K) makes the groups an outer loop and the K channels of one the vector
// axis, along which the input is shared: a convolution of one group per
// group.  Only for K of at least 4 that divides j's extent, and only
// where a reduction reads that way.
void StageScheduler::split_groups(const std::string& root) {
  std::vector<const ForNode*> chain = perfect_nest(find(s_, root));
  if (chain.size() < 2 || chain.back()->body.as<SeqStmtNode>() == nullptr) return;
  const ForNode* j = chain.back();
  auto extent = const_int(j->extent);
  if (!extent) return;
  std::optional<int64_t> group;
  for (const Stmt& r : reduction_loops(j->body)) {
    pre_order(
        r, [](const Stmt&) { return true; },
        [&](const PrimExpr& e) {
          const auto* d = e.as<FloorDivNode>();
          const auto* v = d ? d->a.as<VarNode>() : nullptr;
          auto k = d ? const_int(d->b) : std::nullopt;
          if (v == j->loop_var.get() && k && *k >= 4 && *k < *extent && *extent % *k == 0 && !group) group = *k;
          return true;
        });
  }
  if (!group || !decide("tile.split_groups", true)) return;
  std::string outer = s_.split(j->loop_var->name, *group).first;
  group_ = find(s_, outer)->loop_var.get();
}

// The nest `nest` register-tiled (the file's comment); false when it does
// not have the shape.  May leave the schedule changed on false: tile_reduction
// restores it.
bool StageScheduler::tile(const std::string& nest) {
  group_ = nullptr;
  split_groups(nest);
  std::string root = fuse_short_rows(nest);
  // The function the analysis below reads (the loops in `chain`, `i`, `j`,
  // the operands' loads): held, so those nodes live on while the
  // schedule rewrites it (reorders, packs).
  PrimFunc analysed = s_.func();
  std::vector<const ForNode*> chain = perfect_nest(find(s_, root));
  // The spatial loops end where the body becomes a sequence (init, ...).
  size_t spatial = chain.size();
  if (chain.back()->body.as<SeqStmtNode>() == nullptr) return false;
  if (spatial < 2) return false;
  // j, the innermost spatial loop, is the vector axis: the accumulators
  // move along it contiguously.  (An epilogue may store along it with a
  // stride, lane by lane, once per element: channel_tile's output.)
  const ForNode* j = chain[spatial - 1];
  const VarNode* jv = j->loop_var.get();
  std::set<const Object*> written;
  Visitor stores;
  stores.on<BufferStoreNode>([&](const BufferStoreNode* st) {
    written.insert(st->buffer->data.get());
    stores.visit_children(st);
  });
  stores.visit(Any(j->body));
  std::set<std::string> accumulators;
  for (const BufferStoreNode* st : accumulator_stores(j->body)) {
    if (stride_along(st, jv) != 1) return false;
    accumulators.insert(st->buffer->name);
  }
  // The buffer the reduction accumulates in (read before the schedule
  // changes: `j` is a node of the function as it is now).
  std::string accumulator = accumulators.size() == 1 ? *accumulators.begin() : "";
  // i, the rows of the tile: the innermost other spatial loop that the
  // operand read along j does not use, so that one vector of it serves
  // every row (matmul's rows; a convolution's output channels, with the
  // input read along the width).  Without one the tile has one row.
  // (The nest's own accumulators, which it writes, do not count.)
  const ForNode* i = nullptr;
  for (size_t k = spatial - 1; k-- > 0 && !i;) {
    const VarNode* iv = chain[k]->loop_var.get();
    bool shared = true, used = false;
    Visitor loads;
    loads.on<BufferLoadNode>([&](const BufferLoadNode* l) {
      if (written.count(l->buffer->data.get())) return;
      bool by_i = uses_var(Any(l->indices), iv);
      used = used || by_i;
      if (by_i && uses_var(Any(l->indices), jv)) shared = false;
      loads.visit_children(l);
    });
    // The reduction's operands only: an epilogue (a residual added
    // elementwise) reads at the output's own indices.
    for (const Stmt& r : reduction_loops(j->body)) loads.visit(Any(r));
    // A loop of extent 1 (a batch of one) gives no rows: look further out.
    auto extent = const_int(chain[k]->extent);
    if (shared && used && extent && *extent > 1) i = chain[k];
  }
  bool rows = i != nullptr;
  // A short row of pixels (a convolution over a 7x7 map, channels last
  // or in channel blocks: 7 rows, so 7 x 1 tiles of 7 accumulators) is
  // fused with the loop over the output's rows outside it into one axis
  // of pixels, which takes any tile with a guarded last one (49 pixels:
  // 5 x 2, 10 accumulators), where the model rates that tile a quarter
  // above the row's best (as for a guarded tail; a 14-pixel row's 2 x 4
  // stays); the weights' panels then pass over all the pixels once
  // instead of once per output row.  Only a row under 16 pixels: longer
  // ones the model would fuse too (27: 3 x 2 tiles) ran slower fused
  // (SqueezeNet 1.09x its time).  (Not in an NCHW convolution's
  // channel tile, whose accumulator is one row's tile, laid out apart.)
  bool pixel_rows = false;
  auto row = rows && spatial >= 3 && i == chain[spatial - 2] ? const_int(i->extent) : std::nullopt;
  auto outside = row ? const_int(chain[spatial - 3]->extent) : std::nullopt;
  auto width = const_int(j->extent);
  if (row && *row < 16 && outside && *outside > 1 && width && !channel_mode_) {
    int64_t lanes = lanes_for(j->body);
    const ForNode* blocks = *width == lanes ? block_loop(chain, spatial, i) : nullptr;
    auto columns = blocks ? const_int(blocks->extent) : std::optional<int64_t>((*width + lanes - 1) / lanes);
    auto rate = [&](int64_t extent, bool tails) {
      auto [ti, tj] = tile_shape(extent, *columns, false, tails);
      return rows_rate(extent, ti, tj);
    };
    std::string h = chain[spatial - 3]->loop_var->name, fused;
    if (columns && rate(*row * *outside, true) > 1.25 * rate(*row, false) && decide("tile.pixel_rows", true) &&
        attempt([&] { fused = s_.fuse(h, i->loop_var->name); })) {
      if (h == root) root = fused;
      analysed = s_.func();
      chain = perfect_nest(find(s_, root));
      --spatial;
      j = chain[spatial - 1];
      jv = j->loop_var.get();
      i = chain[spatial - 2];
      pixel_rows = true;
    }
  }
  if (!i) i = chain[spatial - 2];
  int lanes = lanes_for(j->body);
  auto ei = const_int(i->extent), ej = const_int(j->extent);
  if (!ei || !ej) return false;
  // Each operand read along j; `strided` when j is not its last index.
  std::vector<Operand> operands = operands_along(j->body, i->loop_var.get(), jv, jv, group_);
  // A matmul-like nest (below) takes whole vectors: where the row is not
  // whole vectors of the full width (24 channels with 16 lanes), narrower
  // ones that divide it (8 lanes: 3 vectors) rather than no tile.
  bool window = operands.empty();
  while (lanes > 1 && lanes > *ej) lanes /= 2;  // a short row: narrower vectors (ends for any extent)
  // A long row of constant operands (a 1000-class classifier's weights)
  // keeps full vectors and a guarded tail: the weights' panels are padded
  // with zeros at compile time, and LoopPartition leaves the guard to the
  // last vectors only (8-lane vectors ran the classifier at half the
  // multiply-add rate).
  bool constant_operands = !operands.empty();
  for (const Operand& o : operands) constant_operands = constant_operands && constant_.count(o.load->buffer->name);
  // So does a row of constant operands that only vectors of under half
  // the width divide (45 or 46 output channels with 16 lanes: single
  // lanes or pairs, or no tile, ran a convolution at 3-7 GFLOP/s; 44:
  // quarter vectors); a row of 24 keeps half-width ones.
  int64_t dividing = lanes;
  while (dividing > 1 && *ej % dividing != 0) dividing /= 2;
  // Not for a grouped convolution's channels (group_): a panel must not
  // straddle two groups, so the vectors divide K.
  bool tail = !window && !group_ && constant_operands && *ej % lanes != 0 &&
              (*ej >= 8 * lanes || 2 * dividing < lanes) && decide("tile.tail", true);
  if (!window && !tail)
    while (lanes > 4 && *ej % lanes != 0) lanes /= 2;
  if (lanes < 2) return false;
  std::string iname = i->loop_var->name, jname = j->loop_var->name;
  int64_t vectors = (*ej + lanes - 1) / lanes;
  // Without shared rows, the loop outside j gives rows of their own where
  // it is longer than 1 (a depthwise convolution channels last: pixels
  // along the width, each reading its own input, all sharing the weight):
  // several accumulators in flight instead of one chain waiting on each
  // multiply-add (a 5x5 one over 240x28x28 ran at 14 GFLOP/s).  Without
  // either (a dense at batch 1) the tile is one row of one or two vectors
  // (four with 512-bit ones), which the test below leaves to
  // vector_reduction's partial sums where they fit.
  bool own_rows = !rows && *ei > 1 && decide("tile.own_rows", true);
  // Channel blocks (NCHW{b}c): where the row is one vector (a block of
  // channels) and an outer loop picks the block of everything read along
  // it (the weights' output block, the output's) but not of the shared
  // input, the tile's columns are blocks: tj of them, a vector each, so
  // a step loads ti + tj values for ti x tj multiply-adds as in a
  // channels-last tile (one block a tile loaded ti + 1 for ti).
  const ForNode* blocks = rows && vectors == 1 && *ej == lanes ? block_loop(chain, spatial, i) : nullptr;
  if (blocks && !decide("tile.blocks", true)) blocks = nullptr;
  int64_t columns = blocks ? *const_int(blocks->extent) : vectors;
  // A step with more than two loads that do not vary along j (a group
  // of int4 weights: 32 inputs, each converted weight multiplied by one)
  // takes four vectors where they divide, so that those loads and the
  // work on them (broadcasts, a group's offset) serve twice the columns
  // (one-row int4 denses of a LLaMA layer's shapes, streamed from
  // memory: 0.85-0.91x their time with two).  (A block of rows with such
  // a step takes wider panels instead, below.)
  int64_t shared_loads = 0;
  for (const Stmt& r : reduction_loops(j->body)) shared_loads += loads_not_along(r, jv, written);
  bool wide = vector_bits_ >= 512 || shared_loads > 2;
  auto [ti, tj] = rows || own_rows ? tile_shape(*ei, columns, own_rows, (!window || pixel_rows) && rows)
                                   : std::pair<int64_t, int64_t>{1, vectors % 4 == 0 && wide ? 4
                                                                    : vectors % 2 == 0       ? 2
                                                                                             : 1};
  std::tie(ti, tj) = choose_tile(rows || own_rows ? *ei : 1, columns, ti, tj);
  // The bytes the nest touches, by what they vary with: `weights` along
  // j only (a panel per column tile), `shared` not along j (the input of
  // a matmul-like nest: every column tile reads all of it), `own` along
  // j and the output's rows (the output, a residual, a depthwise
  // convolution's input: each part touched by one column tile); and how
  // many times the spatial loops outside the tile run.
  int64_t weights = 0, shared = 0, own = 0, outer = 1;
  {
    std::set<const Object*> seen;
    auto count = [&](const Buffer& buffer, const Array& indices) {
      if (!seen.insert(buffer->data.get()).second) return;
      int64_t bytes = (buffer->dtype.bits + 7) / 8;
      for (const Any& d : buffer->shape) bytes *= const_int(d.cast<PrimExpr>()).value_or(0);
      bool rows_vary = false;
      for (size_t k = 0; k + 1 < spatial; ++k)
        if (chain[k] != blocks) rows_vary |= uses_var(Any(indices), chain[k]->loop_var.get());
      (!uses_var(Any(indices), jv) ? shared : rows_vary ? own : weights) += bytes;
    };
    Visitor access;
    access.on<BufferLoadNode>([&](const BufferLoadNode* l) {
      count(l->buffer, l->indices);
      access.visit_children(l);
    });
    access.on<BufferStoreNode>([&](const BufferStoreNode* st) {
      count(st->buffer, st->indices);
      access.visit_children(st);
    });
    access.visit(Any(j->body));
    // partition_rows's loop over blocks of rows (%n // 32) counts as two
    // passes: its extent is unknown, and where it is under two the order
    // of the loops does not matter.  (Its tail, also in partitioned_, is
    // not tiled: its row loop is symbolic.)
    for (size_t k = 0; k < spatial; ++k)
      if (chain[k] != i && chain[k] != j && chain[k] != blocks) {
        outer *= const_int(chain[k]->extent).value_or(partitioned_.count(chain[k]->loop_var->name) ? 2 : 1);
      }
  }
  // The right operand: a 2-D parameter indexed [r, j] or [j, r] is
  // packed into panels, (j // F, r, j % F) with F the tile's width, so
  // that the tile reads one contiguous panel (rows of B a power of two
  // apart would share a few L1 sets).  A [j, r] operand (dense's weight)
  // must be packed to be read along j at all; a [r, j] one is packed
  // when enough row tiles reuse each panel.
  int64_t panel = tj * lanes;
  // A block of a symbolic row count whose step is heavy (an int4 dense:
  // more than two loads shared by the columns) takes panels of twice the
  // tile's vectors, each read by two column tiles, so that the tail rows
  // (a decode step's one token) read four vectors at a time: the shared
  // loads and their work serve twice the columns.  The column tiles are
  // split around the panel (`halves`) so its index stays affine.
  int64_t halves = 1;
  if (rows && !blocks && !window && partitioned_.count(nest) && tj * 2 <= 4 && columns % (2 * tj) == 0 &&
      shared_loads > 2 && decide("tile.wide_panels", true)) {
    halves = 2;
  }
  panel *= halves;
  // A matmul-like nest: whole vectors, and a tile large enough to pay
  // (otherwise vector_reduction's partial sums do better).  Other nests
  // (a convolution, a pool: every operand read along j is at least 3-D)
  // take a tail guard where the row is not whole vectors, and read along
  // j with a small constant stride (a pool's window).
  // vector_reduction's per-lane partial sums need an innermost reduction
  // loop that reads contiguously (a dense with few columns); where none
  // does (a depthwise convolution, channels last: its window is short
  // and strided) even a small tile is better.
  bool partial_sums_fit = false;
  pre_order(j->body, [&](const Stmt& st) {
    const auto* f = st.as<ForNode>();
    if (f && f->body.as<BufferStoreNode>())
      partial_sums_fit = partial_sums_fit || strided_loads(f->body, f->loop_var.get()).empty();
    return true;
  });
  if (window && !channel_mode_ && decide("conv.try_channel_tile", true)) {
    // This tile's rate by tile_shape's model, for vectors of `lanes` of
    // the full width, the row's last vector partly used, loads along j
    // with a stride (a wide load and a shuffle) at half speed.
    double rate = tile_rate(ti, tj) * lanes / lanes_for(j->body) * static_cast<double>(*ej) /
                  static_cast<double>(vectors * lanes);
    if (!strided_loads(j->body, jv).empty()) rate /= 2;
    if (channel_tile(root, rate)) return true;
  }
  if (!window && ((*ej % lanes != 0 && !tail) || (ti * tj < 4 && partial_sums_fit))) return false;
  if (window) {
    for (const BufferLoadNode* l : strided_loads(j->body, jv)) {
      auto step = stride_along(l, jv);
      if (!step || *step < 0 || *step > 4) return false;
    }
  }
  if (rows && i != chain[spatial - 2]) s_.reorder({chain[spatial - 2]->loop_var->name, iname});
  std::set<std::string> panels;
  bool relaid = false;
  // Blocked weights are a panel per block already; a tile of tj blocks
  // reads tj of them, far apart (a block's whole filter), so a constant
  // takes panels of tj blocks at compile time: the block index b becomes
  // b // tj outermost and b % tj right outside the lanes, and a tile
  // reads one contiguous panel (3x3 convolutions over 64 channels ran
  // 1.03-1.10x their channels-last time).
  if (blocks && tj > 1) {
    const VarNode* bv = blocks->loop_var.get();
    for (const Operand& o : operands) {
      size_t at = 0;
      while (at < o.load->indices.size() && !uses_var(o.load->indices[at], bv)) ++at;
      if (at + 1 >= o.load->indices.size() || !constant_.count(o.load->buffer->name)) continue;
      Schedule::IndexMap layout = [at, tj](const std::vector<PrimExpr>& idx) {
        PrimExpr width = IntImm(DataType::Int(64), tj);
        std::vector<PrimExpr> out;
        for (size_t k = 0; k + 1 < idx.size(); ++k) out.push_back(k == at ? PrimExpr(FloorDiv(idx[k], width)) : idx[k]);
        out.push_back(FloorMod(idx[at], width));
        out.push_back(idx.back());
        return out;
      };
      pack(o.load->buffer->name, layout, false, copies_, relaid);
    }
  }
  // Where PairProducts will take the reduction two steps at a time (a
  // sum of products of 8- and 16-bit integers, or of bfloat16 values on a
  // CPU with vdpbf16ps) or four (uint8 by int8 on a CPU with vpdpbusd), a
  // panel keeps each group of a step's values side by side: one vector
  // load reads the groups of a vector of columns.
  GroupedLoop pair = grouped_loop(j->body, native_);
  if (pair.var && !decide("tile.pair_panels", true)) pair = GroupedLoop{};
  for (const Operand& o : blocks ? std::vector<Operand>{} : operands) {
    // A constant operand takes the panel layout itself: the caller's
    // constant is packed once, at compile time.  Any other is copied
    // per call when it must be (strided) or enough row tiles share it
    // (and a panel is not the whole row, which it already is).
    bool strided = o.at + 1 != o.load->indices.size();
    // The layout splits the paired loop's index: a copy takes it even of a whole row.
    bool paired = paired_index(o, pair) < o.load->indices.size();
    bool was_relaid = relaid;
    std::string read = pack(o.load->buffer->name, panel_layout(panel, o, 0, pair),
                            strided || paired || (panel < *ej && decide("matmul.pack", *ei >= 4 * ti)), copies_, relaid,
                            panel_layout(panel, o, *ej, pair));
    if (relaid && !was_relaid) panel_ = panel;
    if (!read.empty()) {
      panels.insert(read);
    } else if (strided) {
      return false;
    }
  }
  // A panel is read along j contiguously within a tile (j % F); the
  // reduction's other operands are contiguous or invariant along j (an
  // epilogue may gather: once per element).
  for (const Stmt& r : reduction_loops(find(s_, jname)->body))
    for (const BufferLoadNode* l : strided_loads(r, find(s_, jname)->loop_var.get()))
      if (!panels.count(l->buffer->name) && !window) return false;
  // The left operand read transposed, A[..., r, i] (matmul's
  // transpose_a): each step of the reduction would read the tile's ti
  // rows from a new cache line, a whole row of A apart.  It is packed
  // once per call into (..., i // ti, r, i % ti), so a tile reads A
  // along r contiguously.
  if (!window && rows && ti > 1) {
    const VarNode* iv = find(s_, iname)->loop_var.get();
    for (const Operand& o : operands_along(find(s_, jname)->body, iv, find(s_, jname)->loop_var.get(), iv)) {
      if (o.at + 1 != o.load->indices.size()) continue;  // A[..., i, r]: already along r
      pack(o.load->buffer->name, panel_layout(ti, o), true, row_copies_, relaid, panel_layout(ti, o, *ei));
    }
  }
  auto [io, ii] = s_.split(iname, ti);
  std::string joo, joi, ji, half;
  if (blocks) {
    // The tile's blocks right outside the lanes, the block tiles where
    // the block loop was.
    std::tie(joo, joi) = s_.split(blocks->loop_var->name, tj);
    ji = jname;
    std::vector<std::string> order;
    bool between = false;
    for (const ForNode* f : perfect_nest(find(s_, joo))) {
      if (f->loop_var->name == jname) break;
      if (between) order.push_back(f->loop_var->name);
      between = between || f->loop_var->name == joi;
    }
    order.push_back(joi);
    s_.reorder(order);
  } else {
    std::string jo;
    std::tie(jo, ji) = s_.split(jname, lanes);
    std::tie(joo, joi) = s_.split(jo, tj);
    if (halves > 1) std::tie(joo, half) = s_.split(joo, halves);
  }
  // A window nest with more rows than columns (a convolution over a small
  // map with many channels: its weights outweigh its input) runs the row
  // tiles outside, so each row tile's weights stay in cache while every
  // column tile uses them.
  bool rows_outer = window && *ei > *ej;
  if (!copies_.empty() || relaid || window || blocks) {
    rows_outer = decide("tile.rows_outer", rows_outer);
    // The column tiles outside the spatial loops above the tile where
    // the weights that saves reading again (once per pass over the
    // rows) outweigh what it touches more: the shared input once per
    // column tile, and the column tiles' own parts, in strips rather
    // than whole rows.  These are the layers of a small map with many
    // channels (ResNet-50's last stage read 4-9 MB of weights for each
    // of its 7 rows); a large map keeps its rows outside.  Where the
    // weights do not fit a core's cache and the shared input does (a
    // strided 1x1 convolution of that stage: 8 MB of weights, 200 KB of
    // its 800 KB input read), reading the input again is a cache hit and
    // costs nothing against weights read from memory once per row pass
    // (ResNet-50's 1024 -> 2048, stride 2: 3.6 -> 2.0 ms in the model).
    int64_t row_passes = outer * (rows_outer ? (*ei + ti - 1) / ti : 1);
    int64_t column_tiles = (columns + tj - 1) / tj;
    int64_t shared_again = weights > kCoreCacheBytes && shared <= kCoreCacheBytes ? 0 : shared * (column_tiles - 1);
    bool panels_outer = row_passes > 1 && column_tiles > 1 &&
                        decide("tile.panels_outer", weights * (row_passes - 1) > shared_again + own);
    return tile_panels(root, joo, io, ii, joi, ji, rows_outer, panels_outer, accumulator, half);
  }
  s_.reorder({io, joo, ii, joi, ji});
  // Without packed panels: init, reduction and epilogue become nests of
  // their own over the whole output, so the reduction can be blocked: a
  // block of the reduction loop (kb long) runs over every tile before the
  // next block, which keeps a kb x (tj vectors) panel of the right
  // operand in the L1 cache.
  std::vector<std::vector<std::string>> nests = s_.decompose_reduction(io);
  for (const auto& nest : nests) {
    const std::string &tio = nest[0], &tjo = nest[1], &tii = nest[2], &tji = nest[3], &tv = nest[4];
    std::vector<std::string> reduction = register_tile(tii, tji, tv);
    std::string outer_block;
    if (reduction.size() == 1) {
      auto extent = const_int(find(s_, reduction[0])->extent);
      int64_t kb = 0;
      for (int64_t candidate = 256; extent && *extent > 256 && candidate >= 64 && !kb; --candidate)
        if (*extent % candidate == 0) kb = candidate;
      std::vector<int64_t> blocks{0};
      for (int64_t b : {32, 64, 128, 256, 512})
        if (extent && *extent > b && *extent % b == 0) blocks.push_back(b);
      if (std::find(blocks.begin(), blocks.end(), kb) == blocks.end()) blocks.push_back(kb);
      kb = decider_.choose("matmul.k_block", blocks, kb);
      if (kb) {
        auto [ro, ri] = s_.split(reduction[0], kb);
        s_.reorder({ro, tjo, tio, ri, tii, tji, tv});
        outer_block = ro;
      }
    }
    if (!reduction.empty() && outer_block.empty()) {
      std::vector<std::string> order = reduction;
      for (const std::string& n : {tii, tji, tv}) order.push_back(n);
      s_.reorder(order);
    }
    std::string tiles = outer_block.empty() ? tio : tjo;
    std::string second = outer_block.empty() ? tjo : tio;
    attempt([&] { tiles = s_.fuse(tiles, second); });
    if (parallel_) attempt([&] { s_.parallel(tiles); });
  }
  return true;
}

// The loop of a channel-blocked nest that picks the block (tile()'s
// "Channel blocks"): a spatial loop other than the rows `i` and the
// lanes, longer than 1, used by every operand of the reduction read
// along the lanes and by its accumulator, and by none of the others (the
// input, shared by every block); the innermost such, or null.
const ForNode* StageScheduler::block_loop(const std::vector<const ForNode*>& chain, size_t spatial, const ForNode* i) {
  const ForNode* j = chain[spatial - 1];
  const VarNode* jv = j->loop_var.get();
  for (size_t k = spatial - 1; k-- > 0;) {
    const ForNode* c = chain[k];
    auto extent = const_int(c->extent);
    if (c == i || !extent || *extent < 2) continue;
    const VarNode* cv = c->loop_var.get();
    bool fits = true, along = false;
    Visitor access;
    access.on<BufferLoadNode>([&](const BufferLoadNode* l) {
      bool by_j = uses_var(Any(l->indices), jv);
      along = along || by_j;
      if (by_j != uses_var(Any(l->indices), cv)) fits = false;
      access.visit_children(l);
    });
    access.on<BufferStoreNode>([&](const BufferStoreNode* st) {
      if (!uses_var(Any(st->indices), cv)) fits = false;
      access.visit_children(st);
    });
    for (const Stmt& r : reduction_loops(j->body)) access.visit(Any(r));
    if (fits && along) return c;
  }
  return nullptr;
}

// The tile's shape with the decider's say: tile.vectors among the
// counts that divide `vectors`, then tile.rows among those that divide
// `extent`, the accumulators and operands within the vector registers.
// (ti, tj) is the rules' choice.
std::pair<int64_t, int64_t> StageScheduler::choose_tile(int64_t extent, int64_t vectors, int64_t ti, int64_t tj) {
  int64_t registers = vector_bits_ >= 512 ? 32 : 16;
  std::vector<int64_t> cols;
  for (int64_t c : column_counts(vectors))
    if (vectors % c == 0 && 2 * c + 1 <= registers) cols.push_back(c);
  if (std::find(cols.begin(), cols.end(), tj) == cols.end()) cols.push_back(tj);
  int64_t chosen_tj = decider_.choose("tile.vectors", cols, tj);
  std::vector<int64_t> rows;
  for (int64_t r = 1; r <= 8; ++r)
    if (extent % r == 0 && r * chosen_tj + chosen_tj + 1 <= registers) rows.push_back(r);
  if (chosen_tj == tj && std::find(rows.begin(), rows.end(), ti) == rows.end()) rows.push_back(ti);
  int64_t preferred = std::find(rows.begin(), rows.end(), ti) != rows.end() ? ti : rows.back();
  return {decider_.choose("tile.rows", rows, preferred), chosen_tj};
}

// The tile widths (in vectors) tried for a row of `vectors` vectors: 1 to
// 4, and where none of 2 to 4 divides it (1000 channels of 8 lanes: 125
// vectors) its smallest divisor from 5 to 8, so that such a row is not
// left one vector at a time (SqueezeNet's 512 -> 1000 classifier ran at
// a fifth of the rate).
std::vector<int64_t> StageScheduler::column_counts(int64_t vectors) {
  std::vector<int64_t> counts = {1, 2, 3, 4};
  if (vectors % 2 != 0 && vectors % 3 != 0)
    for (int64_t c = 5; c <= 8; ++c)
      if (vectors % c == 0) {
        counts.push_back(c);
        break;
      }
  return counts;
}

// Multiply-adds per cycle of a ti x tj tile by tile_shape's model; with
// `own_rows` each row reads its own vector of the left operand (ti x tj
// loads a step).
double StageScheduler::tile_rate(int64_t ti, int64_t tj, bool own_rows) {
  double fmas = static_cast<double>(ti * tj);
  double loads = static_cast<double>(own_rows ? ti * tj + tj : ti + tj);
  return std::min({2.0, 2.0 * fmas / loads, fmas / 5.0});
}

double StageScheduler::rows_rate(int64_t extent, int64_t ti, int64_t tj, bool own_rows) {
  int64_t tiles = (extent + ti - 1) / ti;
  return tile_rate(ti, tj, own_rows) * static_cast<double>(extent) / static_cast<double>(tiles * ti);
}

// The register tile, ti rows by tj vectors, for `extent` rows and
// `vectors` vectors (ti and tj divide them).  Its accumulators, tj
// vectors of the right operand and a broadcast of the left fit the
// vector registers (16; 32 with 512-bit vectors), and of those shapes
// it is the one with the most multiply-adds per cycle by a simple model
// of the core: at most 2 per cycle, at most 2 loads per cycle (a tile
// step loads ti + tj values for ti x tj multiply-adds), and each
// accumulator's chain waits a multiply-add's latency, 5 cycles, per
// step (so a tile needs about 10 accumulators to keep both units
// busy).  Ties go to the larger tile, then to fewer loads per step, then
// to more rows.  A 1024-wide matmul gets 6 x 2 (12 accumulators), a
// 7-pixel row of a channels-last convolution 7 x 1, a 14-pixel row
// 2 x 4, 8 rows of 8 vectors 4 x 2.  With `own_rows` (a depthwise
// convolution channels last: its rows are pixels, each reading its own
// input, sharing the weight) a step loads ti x tj + tj values.  With
// `tails` (a matmul-like nest, or a convolution's pixels fused into one
// axis) the rows may end in a guarded tile.
std::pair<int64_t, int64_t> StageScheduler::tile_shape(int64_t extent, int64_t vectors, bool own_rows,
                                                       bool tails) const {
  int64_t registers = vector_bits_ >= 512 ? 32 : 16;
  // The best tile whose rows divide the extent, or (`any_rows`) the best
  // of all, a ti that does not divide leaving a guarded last tile whose
  // idle rows count against it.
  auto search = [&](bool any_rows) {
    std::pair<int64_t, int64_t> best{1, 1};
    double best_rate = 0;
    for (int64_t tj : column_counts(vectors)) {
      if (vectors % tj != 0) continue;
      for (int64_t ti : {1, 2, 3, 4, 5, 6, 7, 8}) {
        if (ti * tj + tj + 1 > registers || (extent % ti != 0 && (!any_rows || extent < ti))) continue;
        double rate = rows_rate(extent, ti, tj, own_rows);
        int64_t size = ti * tj, best_size = best.first * best.second;
        int64_t loads = ti + tj, best_loads = best.first + best.second;
        bool tie = rate > best_rate - 1e-9;
        if (rate > best_rate + 1e-9 || (tie && size > best_size) ||
            (tie && size == best_size && (loads < best_loads || (loads == best_loads && ti > best.first)))) {
          best = {ti, tj};
          best_rate = rate;
        }
      }
    }
    return std::make_pair(best, best_rate);
  };
  auto [whole, whole_rate] = search(false);
  if (!tails) return whole;
  // A guarded last tile only where it beats the whole tiles by a quarter:
  // rows with no good divisor (13 pixels of a 13x13 map: 1 x 5 ran at
  // half the rate of 2 x 5, SqueezeNet's classifier 4.3 -> 2.9 ms).
  auto [tail, tail_rate] = search(true);
  return tail_rate > 1.25 * whole_rate ? tail : whole;
}

// The tile's loops (rows, vectors, lanes) unrolled, unrolled and
// vectorized; returns the reduction loops below the lanes, if any,
// outermost first.
std::vector<std::string> StageScheduler::register_tile(const std::string& rows, const std::string& vectors,
                                                       const std::string& lanes) {
  const ForNode* last = find(s_, lanes);
  std::vector<std::string> reduction;
  if (has_loop(last->body))
    for (const ForNode* r : perfect_nest(last))
      if (r != last) reduction.push_back(r->loop_var->name);
  s_.unroll(rows);
  s_.unroll(vectors);
  s_.vectorize(lanes);
  return reduction;
}

// The most statements a tile's innermost window loop unrolls to (its taps
// times the tile's vectors): 5 taps of a row over a tile of 7 vectors is 35.
constexpr int64_t kMaxWindowStatements = 64;

// A window nest that reads its padded input in place (pad_in_place in
// auto_schedule.cc) checks each tap with a select on the window loops
// (column + kw - pad in range).  The innermost of those loops among the
// reduction loops (`order`: the reduction loops, outermost first, then
// the tile's three) is unrolled where the tile times its taps is at most
// kMaxWindowStatements: LoopPartition splits an unrolled loop even in a
// border tile, so a tile at the left edge checks only the taps that can
// fall outside (a 5x5 window at column 0: taps 0 and 1 of each row) and
// the others read the input directly.  Kept serial, each border tile
// checked every tap, and over a 28x28 map half the tiles are border
// tiles: 5x5 depthwise layers over 28x28, 14x14 and 7x7 maps took 1.2x,
// 1.3x and 1.5x the time they take unrolled.  The whole window unrolled
// was 2x slower over 14x14 than serial: LLVM kept its 25 weight vectors
// live across the rows and spilled them.
void StageScheduler::unroll_guarded_window(const std::vector<std::string>& order) {
  const ForNode* outer = find(s_, order.front());
  std::set<std::string> reduction(order.begin(), order.end() - 3);
  std::set<const VarNode*> guarded;
  pre_order(
      outer->body, [&](const Stmt&) { return true; },
      [&](const PrimExpr& e) {
        const auto* sel = e.as<SelectNode>();
        if (!sel) return true;
        if (!reads_memory(sel->condition))
          for (const ForNode* f : perfect_nest(outer))
            if (reduction.count(f->loop_var->name) && uses_var(Any(sel->condition), f->loop_var.get()))
              guarded.insert(f->loop_var.get());
        return true;
      });
  const ForNode* window = nullptr;
  int64_t statements = 1;
  for (const ForNode* f : perfect_nest(outer)) {
    if (guarded.count(f->loop_var.get())) window = f;
    if (f->for_kind() == ForKind::kUnrolled)
      statements *= const_int(f->extent).value_or(1);  // the tile's rows, vectors
  }
  auto taps = window ? const_int(window->extent) : std::nullopt;
  if (taps && *taps * statements <= kMaxWindowStatements) s_.unroll(window->loop_var->name);
}

// With packed panels, or for a window nest (no panels): for each column
// tile its panels, if any, are packed, then every row tile runs its
// init, the whole reduction (over the panels while they are in cache)
// and its epilogue.
bool StageScheduler::tile_panels(const std::string& root, const std::string& joo, const std::string& io,
                                 const std::string& ii, const std::string& joi, const std::string& ji, bool rows_outer,
                                 bool panels_outer, const std::string& accumulator, const std::string& half) {
  // `half`: the column tiles within a panel, right inside the panels.
  auto with_half = [&](std::vector<std::string> order) {
    if (!half.empty()) order.insert(std::find(order.begin(), order.end(), joo) + 1, half);
    return order;
  };
  if (rows_outer) {
    s_.reorder(with_half({io, joo, ii, joi, ji}));
  } else {
    s_.reorder(with_half({joo, io, ii, joi, ji}));
  }
  // (A root split by the tiling itself, a matrix product's rows, leaves
  // no loop above the tile's rows but their tiles, which rows_outer placed:
  // a tuning candidate may take both decisions.)
  std::string top = root;  // the nest's outer loop once the tiles are in place
  if ((channel_mode_ || panels_outer) && find(s_, root)) {
    // Each panel of weights (a column tile) serves every row of the
    // output while it is in cache: the column tiles go outside the
    // spatial loops above the tile's rows (those longer than 1).
    std::vector<std::string> order{joo};
    for (const ForNode* f : perfect_nest(find(s_, root))) {
      if (f->loop_var->name == joo) break;
      auto extent = const_int(f->extent);
      if (!extent || *extent > 1) order.push_back(f->loop_var->name);
    }
    s_.reorder(order);
    // The blocks of rows went inside the column tiles: those are shared by
    // the threads.  (A constant root moved inside them, a batch of several
    // images, keeps its threads: not measured otherwise.)
    if (order.size() > 1 && order[1] == root && partitioned_.count(root)) top = joo;
  }
  // The loop around one tile (its init, reduction and epilogue, once
  // decomposed): the one whose body is the tile's row loop.
  std::string tile_loop;
  pre_order(s_.func()->body, [&](const Stmt& st) {
    const auto* f = st.as<ForNode>();
    const auto* body = f ? f->body.as<ForNode>() : nullptr;
    if (body && body->loop_var->name == ii) tile_loop = f->loop_var->name;
    return tile_loop.empty();
  });
  for (const auto& nest : s_.decompose_reduction(ii)) {
    const std::string &tii = nest[0], &tji = nest[1], &tv = nest[2];
    std::vector<std::string> order = register_tile(tii, tji, tv);
    if (order.empty()) continue;
    for (const std::string& n : {tii, tji, tv}) order.push_back(n);
    s_.reorder(order);
    unroll_guarded_window(order);
  }
  for (const std::string& c : copies_) {
    s_.compute_at(c, joo);
    // The copy is now the first statement of the column tile's body.
    const auto* body = find(s_, joo)->body.as<SeqStmtNode>();
    const auto* first = body ? body->seq[0].cast<Stmt>().as<ForNode>() : nullptr;
    if (first) moved_.push_back(first->loop_var->name);
  }
  // The column tiles in parallel where they are the nest's outer loop;
  // below other loops (a convolution's batch and rows), those.
  if (find(s_, root)) {
    parallel_outer(top);
  } else if (parallel_) {
    // One column tile (a panel as wide as the output): the row tiles in
    // parallel instead, sharing the panel.
    auto extent = const_int(find(s_, joo)->extent);
    if (!(extent && *extent == 1 && !rows_outer && attempt([&] { s_.parallel(io); })))
      attempt([&] { s_.parallel(joo); });
  }
  // An accumulator the function allocates (an epilogue follows it) holds
  // one tile, allocated in the tile's loop: registers, where it was an
  // output-sized array each tile wrote out and its epilogue read back
  // (a 1x1 convolution from 16 channels over 112x112 wrote 4.8 MB twice).
  if (!accumulator.empty() && !tile_loop.empty() && find(s_, tile_loop))
    attempt([&] { s_.allocate_at(accumulator, tile_loop); });
  return true;
}

}  // namespace loom::loop::auto_schedule
