// AutoSchedule's packing of a tile's operands: the operands a tile reads
// along one of its axes (operands_along), the panel layout that makes each
// read contiguous along the reduction (panel_layout), and the packing
// itself (pack): a constant parameter takes the layout once, at compile
// time (transform_layout); any other is copied into it per call
// (cache_read).
#include "auto_schedule_rules.h"

#include <algorithm>

namespace loom::loop::auto_schedule {

// The operands (Operand, auto_schedule_rules.h) of `body`, a tile's body
// with rows i and vectors along j, that are read along `v`.
std::vector<Operand> operands_along(const Stmt& body, const VarNode* i, const VarNode* j, const VarNode* v,
                                    const VarNode* group) {
  // group * K + v, as Schedule::split writes it.
  auto grouped = [&](const Any& e) {
    const auto* add = group ? e.cast<PrimExpr>().as<AddNode>() : nullptr;
    const auto* mul = add ? add->a.as<MulNode>() : nullptr;
    return mul && mul->a.get() == group && const_int(mul->b) && add->b.get() == v;
  };
  std::vector<const VarNode*> reduction;
  pre_order(body, [&](const Stmt& st) {
    if (const auto* f = st.as<ForNode>()) reduction.push_back(f->loop_var.get());
    return true;
  });
  auto by_reduction = [&](const Any& e) {
    for (const VarNode* r : reduction)
      if (uses_var(e, r)) return true;
    return false;
  };
  std::vector<Operand> out;
  Visitor vis;
  vis.on<BufferLoadNode>([&](const BufferLoadNode* l) {
    vis.visit_children(l);
    for (const Operand& o : out)
      if (o.load->buffer.get() == l->buffer.get()) return;
    size_t rank = l->indices.size(), at = rank, batch = 0;
    bool reduced = false;
    for (size_t k = 0; k < rank; ++k) {
      const Any& e = l->indices[k];
      if ((e.object() == v || grouped(e)) && at == rank) {
        at = k;
        continue;
      }
      if (uses_var(e, i) || uses_var(e, j)) return;
      if (by_reduction(e)) {
        reduced = true;
      } else if (!reduced && at == rank && !const_int(e.cast<PrimExpr>())) {
        batch = k + 1;  // leading: a batch index
      } else if (!const_int(e.cast<PrimExpr>())) {
        return;  // an outer loop's index among the reduction's (a convolution's input row)
      }
    }
    if (at < rank && reduced && batch <= at) out.push_back(Operand{l, at, batch});
  });
  vis.visit(Any(body));
  return out;
}

// The layout of an operand: its batch indices, v // c, its other indices
// in order, v % c -- panels of c values of v, each read along the
// reduction contiguously.  A copy (cache_read) whose panel is all of v
// (`extent` at most c) takes the layout without the split (batch, other
// indices, v): its v // c axis would have one value, which compute_at
// cannot move with the column tiles (a batched matmul 64 wide, attention
// times V, went unscheduled and ran 60 times slower).
size_t paired_index(const Operand& o, const GroupedLoop& grouped) {
  for (size_t k = 0; grouped.var && k < o.load->indices.size(); ++k) {
    auto size = const_int(o.load->buffer->shape[k].cast<PrimExpr>());
    if (k != o.at && o.load->indices[k].object() == grouped.var && size && *size % grouped.group == 0) return k;
  }
  return o.load->indices.size();
}

Schedule::IndexMap panel_layout(int64_t c, const Operand& o, int64_t extent, const GroupedLoop& grouped) {
  bool whole = extent > 0 && extent <= c;
  size_t paired = paired_index(o, grouped);
  return [c, at = o.at, batch = o.batch, whole, paired, group = grouped.group](const std::vector<PrimExpr>& idx) {
    PrimExpr width = IntImm(DataType::Int(64), c), size = IntImm(DataType::Int(64), group);
    std::vector<PrimExpr> out(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(batch));
    if (!whole) out.push_back(FloorDiv(idx[at], width));
    for (size_t k = batch; k < idx.size(); ++k)
      if (k != at) out.push_back(k == paired ? PrimExpr(FloorDiv(idx[k], size)) : idx[k]);
    out.push_back(whole ? idx[at] : FloorMod(idx[at], width));
    if (paired < idx.size()) out.push_back(FloorMod(idx[paired], size));
    return out;
  };
}

// The operand `name` in `layout`: a constant parameter takes the layout
// itself (packed once, at compile time; `relaid` set); any other, when
// `copy` allows, is copied into it per call (cache_read), the copy's
// nests appended to `copies`.  Returns the buffer the nest now reads
// (`name` or the copy), "" when neither happened.
std::string StageScheduler::pack(const std::string& name, const Schedule::IndexMap& layout, bool copy,
                                 std::vector<std::string>& copies, bool& relaid,
                                 const Schedule::IndexMap& copy_layout) {
  if (constant_.count(name) && attempt([&] { s_.transform_layout(name, layout); })) {
    relaid = true;
    return name;
  }
  if (!copy) return "";
  std::vector<std::string> before, after;
  roots(s_.func()->body, before);
  std::string local;
  if (!attempt([&] { local = s_.cache_read(name, copy_layout ? copy_layout : layout); })) return "";
  roots(s_.func()->body, after);
  for (const std::string& n : after)
    if (std::find(before.begin(), before.end(), n) == before.end()) copies.push_back(n);
  return local;
}

}  // namespace loom::loop::auto_schedule
