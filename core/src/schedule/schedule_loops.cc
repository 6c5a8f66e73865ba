// Schedule primitives on loops (loom/schedule/schedule.h): split, fuse, reorder
// and tile change the nest; parallel, vectorize, unroll and bind change a
// loop's kind.
#include "loom/schedule/schedule.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_set>

#include "loom/arith/simplify.h"
#include "loom/ir/text.h"
#include "loom/tir/builder.h"
#include "loom/tir/functor.h"
#include "loom/tir/util.h"
#include "schedule_internal.h"

namespace loom::tir {

using arith::simplify;
using namespace schedule_detail;  // NOLINT: the primitives' shared helpers (schedule_internal.h)

std::pair<std::string, std::string> Schedule::split(const std::string& loop, int64_t factor) {
  Recorder record(*this, "split", loop, factor);
  const ForNode* f = find_loop(func_, "split", loop);
  if (factor <= 0) refuse("split", "the factor must be positive, got " + std::to_string(factor));
  DataType t = f->loop_var->dtype;
  Var outer(fresh_name(func_, loop + "_o"), t);
  Var inner(fresh_name(func_, loop + "_i"), t);
  PrimExpr step = IntImm(t, factor);
  std::optional<int64_t> extent = const_int(f->extent);
  PrimExpr outer_extent = extent ? PrimExpr(IntImm(t, (*extent + factor - 1) / factor))
                                 : PrimExpr(FloorDiv(Add(f->extent, IntImm(t, factor - 1)), step));
  PrimExpr offset = Add(Mul(outer, step), inner);
  PrimExpr index = const_int(f->min) == 0 ? offset : PrimExpr(Add(f->min, offset));
  Stmt body = substitute(f->body, {{f->loop_var.get(), index}});
  // A division or remainder of the old variable that the new loops' ranges
  // decide is simplified: by the factor itself, (o * 8 + i) // 8 is o and
  // (o * 8 + i) % 8 is i (a grouped convolution's input channel, (j // 8)
  // * 8 + c, split by its group's 8 channels).  Only the floordiv and
  // floormod nodes that use the new inner variable are simplified (each
  // whole, with what it contains); the rest of the body stays as written.
  arith::Analyzer ranges;
  ranges.bind(inner.get(), arith::Bound{0, factor - 1});
  if (extent) ranges.bind(outer.get(), arith::Bound{0, (*extent + factor - 1) / factor - 1});
  body = Rewriter()
             .pre_expr([&](const PrimExpr& e) -> std::optional<PrimExpr> {
               if ((e.as<FloorDivNode>() || e.as<FloorModNode>()) && uses_var(Any(e), inner.get())) {
                 return simplify(e, ranges);
               }
               return std::nullopt;
             })
             .run(body);
  if (!extent || *extent % factor != 0) body = push_guard(body, LT(offset, f->extent), {outer.get(), inner.get()});
  Stmt nest = For(outer, IntImm(t, 0), outer_extent, ForKind::kSerial,
                  For(inner, IntImm(t, 0), step, ForKind::kSerial, body), "", f->annotations);
  func_ = with_new_body(func_, replace(func_->body, f, nest));
  return {outer->name, inner->name};
}

std::vector<std::string> Schedule::partition(const std::string& loop, int64_t factor) {
  Recorder record(*this, "partition", loop, factor);
  const ForNode* f = find_loop(func_, "partition", loop);
  if (factor <= 0) refuse("partition", "the factor must be positive, got " + std::to_string(factor));
  DataType t = f->loop_var->dtype;
  Var outer(fresh_name(func_, loop + "_o"), t);
  Var inner(fresh_name(func_, loop + "_i", {outer->name}), t);
  Var tail(fresh_name(func_, loop + "_t", {outer->name, inner->name}), t);
  PrimExpr step = IntImm(t, factor);
  PrimExpr whole = simplify(FloorDiv(f->extent, step));
  auto at = [&](const PrimExpr& offset) { return const_int(f->min) == 0 ? offset : PrimExpr(Add(f->min, offset)); };
  Stmt head = For(outer, IntImm(t, 0), whole, ForKind::kSerial,
                  For(inner, IntImm(t, 0), step, ForKind::kSerial,
                      substitute(f->body, {{f->loop_var.get(), at(Add(Mul(outer, step), inner))}})),
                  "", f->annotations);
  // The tail's own loops get names of their own (the old name and _t).
  std::set<std::string> taken{outer->name, inner->name, tail->name};
  Stmt copy = fresh_bindings(
      f->body, [&](const std::string& name) { return *taken.insert(fresh_name(func_, name + "_t", taken)).first; });
  Stmt rest = substitute(copy, {{f->loop_var.get(), at(simplify(Add(Mul(whole, step), tail)))}});
  Stmt tail_loop =
      For(tail, IntImm(t, 0), simplify(FloorMod(f->extent, step)), ForKind::kSerial, rest, "", f->annotations);
  func_ = with_new_body(func_, replace(func_->body, f, seq({head, tail_loop})));
  return {outer->name, inner->name, tail->name};
}

std::string Schedule::fuse(const std::string& outer_name, const std::string& inner_name) {
  Recorder record(*this, "fuse", outer_name, inner_name);
  const ForNode* outer = find_loop(func_, "fuse", outer_name);
  const ForNode* inner = find_loop(func_, "fuse", inner_name);
  if (outer->body.get() != inner) {
    refuse("fuse", "%" + inner_name + " is not the whole body of %" + outer_name);
  }
  if (uses_var(Any(inner->min), outer->loop_var.get()) || uses_var(Any(inner->extent), outer->loop_var.get())) {
    refuse("fuse", "the bounds of %" + inner_name + " depend on %" + outer_name);
  }
  DataType t = outer->loop_var->dtype;
  Var fused(fresh_name(func_, outer_name + "_" + inner_name), t);
  PrimExpr inner_extent = Cast(t, inner->extent);
  Stmt body =
      substitute(inner->body, {{outer->loop_var.get(), Add(outer->min, FloorDiv(fused, inner_extent))},
                               {inner->loop_var.get(), Add(Cast(t, inner->min), FloorMod(fused, inner_extent))}});
  Stmt loop = For(fused, IntImm(t, 0), simplify(Mul(outer->extent, inner_extent)), ForKind::kSerial, body);
  func_ = with_new_body(func_, replace(func_->body, outer, loop));
  return fused->name;
}

void Schedule::reorder(const std::vector<std::string>& order) {
  Recorder record(*this, "reorder", order);
  if (order.size() < 2) return;
  std::vector<const ForNode*> named;
  for (const std::string& n : order) {
    const ForNode* f = find_loop(func_, "reorder", n);
    if (std::find(named.begin(), named.end(), f) != named.end()) refuse("reorder", "%" + n + " is named twice");
    named.push_back(f);
  }
  // The outermost of them, then its perfect nest.
  const ForNode* top = nullptr;
  for (const ForNode* f : all_loops(func_->body))
    if (!top && std::find(named.begin(), named.end(), f) != named.end()) top = f;
  std::vector<const ForNode*> chain = perfect_nest(top);
  std::vector<size_t> positions;
  for (size_t k = 0; k < chain.size(); ++k)
    if (std::find(named.begin(), named.end(), chain[k]) != named.end()) positions.push_back(k);
  if (positions.size() != named.size()) {
    for (const ForNode* f : named) {
      if (std::find(chain.begin(), chain.end(), f) == chain.end()) {
        refuse("reorder", "%" + f->loop_var->name + " is not in the perfect nest below %" + top->loop_var->name +
                              " (a loop's body there is not just one loop)");
      }
    }
  }
  size_t last = positions.back();
  for (size_t k = 0; k <= last; ++k) {
    for (size_t m = 0; m <= last; ++m) {
      if (k != m && (uses_var(Any(chain[k]->min), chain[m]->loop_var.get()) ||
                     uses_var(Any(chain[k]->extent), chain[m]->loop_var.get()))) {
        refuse("reorder", "the bounds of %" + chain[k]->loop_var->name + " depend on %" + chain[m]->loop_var->name);
      }
    }
  }
  std::vector<const ForNode*> reordered(chain.begin(), chain.begin() + last + 1);
  for (size_t k = 0; k < positions.size(); ++k) reordered[positions[k]] = named[k];
  Stmt body = chain[last]->body;
  for (size_t k = last + 1; k-- > 0;) body = with_kind_and_body(*reordered[k], reordered[k]->for_kind(), body);
  func_ = with_new_body(func_, replace(func_->body, top, body));
}

std::vector<std::string> Schedule::tile(const std::string& x, const std::string& y, int64_t fx, int64_t fy) {
  auto [xo, xi] = split(x, fx);
  auto [yo, yi] = split(y, fy);
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

namespace {
// The precondition of parallel and bind: every buffer written in `f` (and
// not allocated inside it) is written at indices that use its variable.
void refuse_races(const ForNode* f, const std::string& primitive) {
  std::unordered_set<const Object*> local;
  pre_order(f->body, [&](const Stmt& s) {
    if (const auto* a = s.as<AllocateNode>()) local.insert(a->buffer->data.get());
    return true;
  });
  const std::string& loop = f->loop_var->name;
  for (const Access& a : accesses(f->body)) {
    if (!a.store || local.count(a.buffer->data.get())) continue;
    if (!uses_var(Any(a.indices), f->loop_var.get())) {
      refuse(primitive, "%" + loop + ": buffer '" + a.buffer->name + "' is written at " + indices_text(a.indices) +
                            ", which does not depend on %" + loop + ", so iterations would race");
    }
  }
}
}  // namespace

void Schedule::parallel(const std::string& loop) {
  Recorder record(*this, "parallel", loop);
  const ForNode* f = find_loop(func_, "parallel", loop);
  refuse_races(f, "parallel");
  func_ = with_new_body(func_, replace(func_->body, f, with_kind_and_body(*f, ForKind::kParallel, f->body)));
}

void Schedule::vectorize(const std::string& loop) {
  Recorder record(*this, "vectorize", loop);
  const ForNode* f = find_loop(func_, "vectorize", loop);
  if (!const_int(f->extent))
    refuse("vectorize", "%" + loop + " has the non-constant extent " + ir::to_text(Any(f->extent)));
  func_ = with_new_body(func_, replace(func_->body, f, with_kind_and_body(*f, ForKind::kVectorized, f->body)));
}

void Schedule::unroll(const std::string& loop) {
  Recorder record(*this, "unroll", loop);
  const ForNode* f = find_loop(func_, "unroll", loop);
  if (!const_int(f->extent))
    refuse("unroll", "%" + loop + " has the non-constant extent " + ir::to_text(Any(f->extent)));
  func_ = with_new_body(func_, replace(func_->body, f, with_kind_and_body(*f, ForKind::kUnrolled, f->body)));
}

bool is_thread_axis(const std::string& axis) {
  static const std::set<std::string> axes{"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                          "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  return axes.count(axis) > 0;
}

void Schedule::bind(const std::string& loop, const std::string& axis) {
  Recorder record(*this, "bind", loop, axis);
  const ForNode* f = find_loop(func_, "bind", loop);
  if (!is_thread_axis(axis)) {
    refuse("bind", "'" + axis + "' is not a thread axis (blockIdx.x/y/z, threadIdx.x/y/z)");
  }
  if (const_int(f->min) != 0) refuse("bind", "%" + loop + " does not start at 0 (split or normalise it first)");
  if (f->for_kind() != ForKind::kSerial) refuse("bind", "%" + loop + " is not a serial loop");
  // The axis may not be bound twice on one path from the root.
  std::vector<Stmt> path;
  path_to(func_->body, f, path);
  for (const Stmt& above : path) {
    const auto* a = above.as<ForNode>();
    if (a && a != f && a->for_kind() == ForKind::kThreadBinding && a->thread == axis) {
      refuse("bind", "%" + loop + " is inside %" + a->loop_var->name + ", already bound to " + axis);
    }
  }
  refuse_races(f, "bind");
  func_ = with_new_body(
      func_, replace(func_->body, f,
                     For(f->loop_var, f->min, f->extent, ForKind::kThreadBinding, f->body, axis, f->annotations)));
}

}  // namespace loom::tir
