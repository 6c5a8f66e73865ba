// AutoSchedule's channel tile: a window nest (a convolution in NCHW) tiled
// with its output channels as the vector axis instead of its output row,
// where the tile model says that is faster (channel_tile's comment).
#include "auto_schedule_rules.h"

#include <algorithm>

namespace loom::loop::auto_schedule {

// A window nest (a convolution in NCHW) vectorizes along its output
// row, which is poor where the row is short or strided: over a 7x7 map
// 4-lane vectors and a tail, with stride 2 a wide load and a shuffle per
// vector.  The alternative: an outer spatial loop c (the output
// channels) as the vector axis, where a constant operand is read along
// c (the weight, W[c, ci, kh, kw]) and every other load of the
// reduction is invariant along c (the input).  The accumulators, which
// the function allocates, are laid out with c last, c moves innermost,
// and the nest is tiled like a channels-last convolution: pixels x
// channel vectors, the weight in panels at compile time, the epilogue
// storing its output lane by lane (a scatter, once per element).  Taken
// when the model gives it fewer cycles per output element than the
// current tile at `rate`: the reduction's multiply-adds at each tile's
// rate, plus the epilogue's stores, a vector per `lanes` elements for
// the row tile and a store per element for the scatter.  A short
// reduction pays the scatter more often (a 1x1 convolution with 24 input
// channels over a 56x56 map: 7.5 % of MobileNetV2's time as a channel
// tile, 5.0 % as a row tile), and on a tie the row tile stays; false
// (schedule unchanged) otherwise.
bool StageScheduler::channel_tile(const std::string& root, double rate) {
  std::vector<const ForNode*> chain = perfect_nest(find(s_, root));
  size_t spatial = chain.size();
  const Stmt& body = chain.back()->body;
  std::vector<const BufferStoreNode*> accumulators = accumulator_stores(body);
  if (accumulators.empty()) return false;
  std::set<std::string> allocations;
  for (const std::string& a : allocated(s_)) allocations.insert(a);
  std::set<std::string> written;
  for (const BufferStoreNode* st : accumulators) written.insert(st->buffer->name);
  // The reduction's loads of what it does not write (its operands).
  std::vector<const BufferLoadNode*> loads;
  for (const Stmt& r : reduction_loops(body))
    pre_order(
        r, [&](const Stmt&) { return true; },
        [&](const PrimExpr& e) {
          const auto* l = e.as<BufferLoadNode>();
          if (l && !written.count(l->buffer->name)) loads.push_back(l);
          return true;
        });
  int lanes = lanes_for(body);
  double reduction = 0;  // multiply-adds per output element
  for (const Stmt& r : reduction_loops(body)) {
    double n = 1;
    for (const ForNode* f : perfect_nest(r.as<ForNode>())) n *= static_cast<double>(const_int(f->extent).value_or(1));
    reduction += n;
  }
  auto cycles = [&](double tile_rate, double epilogue) { return reduction / (lanes * tile_rate) + epilogue; };
  for (size_t k = spatial - 1; k-- > 0;) {
    const VarNode* cv = chain[k]->loop_var.get();
    auto ec = const_int(chain[k]->extent);
    if (!ec || *ec % lanes != 0) continue;
    bool fits = true;
    // The accumulators: allocated, indexed by c exactly once.
    std::vector<std::pair<std::string, size_t>> relayout;
    for (const BufferStoreNode* st : accumulators) {
      size_t at = st->indices.size(), uses = 0;
      for (size_t m = 0; m < st->indices.size(); ++m) {
        if (st->indices[m].object() == cv) at = m;
        if (uses_var(st->indices[m], cv)) ++uses;
      }
      fits = fits && allocations.count(st->buffer->name) && at < st->indices.size() && uses == 1;
      if (fits && std::find_if(relayout.begin(), relayout.end(),
                               [&](const auto& r) { return r.first == st->buffer->name; }) == relayout.end())
        relayout.emplace_back(st->buffer->name, at);
    }
    if (!fits) continue;
    // A constant operand along c; every other load of the reduction
    // invariant along c, and one of them gives the rows.
    bool constant = false;
    std::vector<Operand> operands;
    for (const Stmt& r : reduction_loops(body))
      for (const Operand& o : operands_along(r, cv, cv, cv)) {
        operands.push_back(o);
        constant = constant || constant_.count(o.load->buffer->name);
      }
    if (!constant) continue;
    const ForNode* rows = nullptr;
    for (size_t m = spatial; m-- > 0 && !rows;) {
      auto extent = const_int(chain[m]->extent);
      if (m == k || !extent || *extent < 2) continue;
      for (const BufferLoadNode* l : loads)
        if (uses_var(Any(l->indices), chain[m]->loop_var.get())) rows = chain[m];
    }
    for (const BufferLoadNode* l : loads) {
      bool operand = std::any_of(operands.begin(), operands.end(),
                                 [&](const Operand& o) { return o.load->buffer.get() == l->buffer.get(); });
      if (!operand && uses_var(Any(l->indices), cv)) fits = false;
    }
    if (!fits || !rows) continue;
    auto [ti, tj] = tile_shape(*const_int(rows->extent), *ec / lanes);
    if (cycles(tile_rate(ti, tj), 1.0) >= cycles(rate, 1.0 / lanes) - 1e-9) continue;
    Schedule saved = s_;
    try {
      for (const auto& [name, at] : relayout) {
        s_.transform_layout(name, [at = at](const std::vector<PrimExpr>& v) {
          std::vector<PrimExpr> out;
          for (size_t m = 0; m < v.size(); ++m)
            if (m != at) out.push_back(v[m]);
          out.push_back(v[at]);
          return out;
        });
      }
      std::vector<std::string> order;
      for (size_t m = k + 1; m < spatial; ++m) order.push_back(chain[m]->loop_var->name);
      order.push_back(chain[k]->loop_var->name);
      s_.reorder(order);
      channel_mode_ = true;
      bool done = tile(root);
      channel_mode_ = false;
      if (done) return true;
    } catch (const ScheduleError&) {
      channel_mode_ = false;
    }
    s_ = saved;
  }
  return false;
}

}  // namespace loom::loop::auto_schedule
