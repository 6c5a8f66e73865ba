// Schedule primitives on buffers (loom/schedule/schedule.h): cache_read copies
// an input into a new buffer (in a new layout, in a memory scope),
// transform_layout gives a buffer a new layout, cache_write computes a
// nest into a local buffer and copies it back.
#include "loom/schedule/schedule.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "loom/arith/simplify.h"
#include "loom/ir/text.h"
#include "loom/object/structural.h"
#include "loom/object/traversal.h"
#include "loom/support/strings.h"
#include "loom/tir/builder.h"
#include "loom/tir/functor.h"
#include "loom/tir/layout.h"
#include "loom/tir/util.h"
#include "schedule_internal.h"

namespace loom::tir {

using arith::simplify;
using namespace schedule_detail;  // NOLINT: the primitives' shared helpers (schedule_internal.h)

namespace {
// A buffer parameter named `name` (or, with `allocations`, an allocated
// buffer), else a refusal with a suggestion.
Buffer find_buffer(const PrimFunc& func, const std::string& primitive, const std::string& name, bool allocations) {
  Buffer found;
  std::vector<std::string> names;
  for (const Buffer& b : func.buffer_params()) {
    names.push_back(b->name);
    if (b->name == name) found = b;
  }
  if (allocations) {
    pre_order(func->body, [&](const Stmt& st) {
      if (const auto* a = st.as<AllocateNode>()) {
        names.push_back(a->buffer->name);
        if (a->buffer->name == name && !found.defined()) found = a->buffer;
      }
      return true;
    });
  }
  if (!found.defined()) {
    refuse(primitive,
           std::string(allocations ? "no buffer '" : "no buffer parameter '") + name + "'" + did_you_mean(name, names));
  }
  return found;
}

// Refuses when `s` accesses `buffer` through another buffer over its data
// (a view FlattenBuffer made): "'B' <why>".
void refuse_views(const Stmt& s, const BufferNode* buffer, const std::string& primitive, const std::string& why) {
  for (const Access& a : accesses(s))
    if (a.buffer->data.get() == buffer->data.get() && a.buffer != buffer)
      refuse(primitive, "'" + buffer->name + "' " + why);
}

// The layout `layout` gives, from its results on fresh index variables;
// refuses (as `primitive`) what is not an axis v, v // c or v % c, and
// what is not a layout.
Layout classify_layout(const PrimFunc& func, const Buffer& buffer, const Schedule::IndexMap& layout,
                       const std::string& primitive) {
  size_t rank = buffer->shape.size();
  std::vector<Var> fresh = fresh_vars(func, "v", rank);
  std::vector<PrimExpr> vars(fresh.begin(), fresh.end());
  auto axis_of = [&](const PrimExpr& e) -> int {
    for (size_t k = 0; k < rank; ++k)
      if (e.same_as(vars[k])) return static_cast<int>(k);
    return -1;
  };
  Layout out;
  for (const PrimExpr& e : layout(vars)) {
    std::optional<LayoutIndex> index;
    if (int a = axis_of(e); a >= 0) index = LayoutIndex{LayoutIndex::kWhole, a, 1};
    const auto* b = e.as<BinaryOpNode>();
    if (b && (e.as<FloorDivNode>() || e.as<FloorModNode>())) {
      auto c = const_int(b->b);
      int a = axis_of(b->a);
      if (c && *c > 0 && a >= 0)
        index = LayoutIndex{e.as<FloorDivNode>() ? LayoutIndex::kDiv : LayoutIndex::kMod, a, *c};
    }
    if (!index) {
      refuse(primitive, "index " + std::to_string(out.size()) + " of the layout of '" + buffer->name + "', " +
                            ir::to_text(Any(e)) + ", is not an axis v, v // c or v % c");
    }
    out.push_back(*index);
  }
  if (std::string why = layout_problem(out, rank); !why.empty()) refuse(primitive, "'" + buffer->name + "': " + why);
  return out;
}

std::vector<PrimExpr> simplified(std::vector<PrimExpr> exprs) {
  for (PrimExpr& e : exprs) e = simplify(e);
  return exprs;
}

// Every load of `buffer` in `s` reads `to` at the indices the layout
// gives; with `stores`, every store writes it there too, and the
// allocation of `buffer` allocates `to`.
Stmt redirect_loads(const Stmt& s, const Buffer& buffer, const Buffer& to, const Layout& layout, bool stores = false) {
  auto moved = [&](const Array& indices, const ExprRule& inner) {
    std::vector<PrimExpr> out;
    for (const Any& i : indices) out.push_back(rewrite(i.cast<PrimExpr>(), inner));
    return apply_layout(layout, out);
  };
  ExprRule redirect = [&](const PrimExpr& e) -> std::optional<PrimExpr> {
    const auto* load = e.as<BufferLoadNode>();
    if (!load || load->buffer.get() != buffer.get()) return std::nullopt;
    return BufferLoad(to, moved(load->indices, redirect));
  };
  StmtRule redirect_stores = [&](const Stmt& st) -> std::optional<Stmt> {
    if (const auto* a = st.as<AllocateNode>(); a && a->buffer.same_as(buffer))
      return Allocate(to, rewrite(a->body, redirect, redirect_stores));
    const auto* store = st.as<BufferStoreNode>();
    if (!store || store->buffer.get() != buffer.get()) return std::nullopt;
    return BufferStore(to, rewrite(store->value, redirect), moved(store->indices, redirect));
  };
  return rewrite(s, redirect, stores ? redirect_stores : StmtRule());
}

// A memory scope a cache may take.
void check_scope(const std::string& primitive, const std::string& scope) {
  if (scope != "global" && scope != "shared" && scope != "local") {
    refuse(primitive, "'" + scope + "' is not a memory scope (global, shared, local)");
  }
}

}  // namespace

std::string Schedule::cache_read(const std::string& name, const IndexMap& layout_map, const std::string& scope) {
  Recorder record(*this, "cache_read", name);
  check_scope("cache_read", scope);
  Buffer buffer = find_buffer(func_, "cache_read", name, false);
  if (touches(func_->body, buffer.get(), true)) refuse("cache_read", "'" + name + "' is written by the function");
  refuse_views(func_->body, buffer.get(), "cache_read", "is read through a view; cache before FlattenBuffer");
  Layout layout = classify_layout(func_, buffer, layout_map, "cache_read");
  record.add(layout_to_string(layout));
  record.add(scope);
  size_t rank = buffer->shape.size();
  std::vector<PrimExpr> shape = simplified(layout_shape(layout, buffer_shape(buffer)));
  Buffer copy(fresh_name(func_, name + "_" + (scope == "global" ? "local" : scope)), buffer->dtype, shape, scope);
  Stmt body = redirect_loads(func_->body, buffer, copy, layout);
  // The copy, in its own order: for c0, c1..: copy[c0, c1, ..] =
  // buffer[inverse layout], guarded where a split pads.
  std::vector<Var> loop_vars = fresh_vars(func_, "c", layout.size());
  std::vector<PrimExpr> source(rank), target(loop_vars.begin(), loop_vars.end());
  for (size_t k = 0; k < layout.size(); ++k) {
    const LayoutIndex& l = layout[k];
    if (l.kind == LayoutIndex::kWhole) source[l.axis] = loop_vars[k];
    if (l.kind == LayoutIndex::kMod) continue;
    if (l.kind == LayoutIndex::kDiv) {
      for (size_t m = 0; m < layout.size(); ++m) {
        if (layout[m].axis == l.axis && layout[m].kind == LayoutIndex::kMod) {
          source[l.axis] = Add(Mul(loop_vars[k], IntImm(DataType::Int(64), l.factor)), loop_vars[m]);
        }
      }
    }
  }
  Stmt fill = BufferStore(copy, BufferLoad(buffer, source), target);
  PrimExpr in_range;
  for (const LayoutIndex& l : layout) {
    if (l.kind != LayoutIndex::kDiv) continue;
    PrimExpr extent = Cast(DataType::Int(64), buffer->shape[l.axis].cast<PrimExpr>());
    PrimExpr cond = LT(source[l.axis], extent);
    in_range = in_range.defined() ? PrimExpr(And(in_range, cond)) : cond;
  }
  if (in_range.defined()) fill = IfThenElse(in_range, fill);
  fill = loop_nest(loop_vars, shape, fill);
  func_ = with_new_body(func_, Allocate(copy, seq({simplify(fill), body})));
  return copy->name;
}

void Schedule::transform_layout(const std::string& name, const IndexMap& layout_map) {
  Recorder record(*this, "transform_layout", name);
  Buffer buffer = find_buffer(func_, "transform_layout", name, true);
  std::vector<Buffer> inputs = func_.buffer_params();
  if (std::find_if(inputs.begin(), inputs.end(), [&](const Buffer& b) { return b.same_as(buffer); }) == inputs.end()) {
    // An allocation: private to the function, so every store and load of
    // it moves to the new layout and nothing is recorded.
    refuse_views(func_->body, buffer.get(), "transform_layout",
                 "is accessed through a view; transform before FlattenBuffer");
    Layout layout = classify_layout(func_, buffer, layout_map, "transform_layout");
    record.add(layout_to_string(layout));
    Buffer laid(buffer->name, buffer->dtype, simplified(layout_shape(layout, buffer_shape(buffer))), buffer->scope);
    func_ = with_new_body(func_, redirect_loads(func_->body, buffer, laid, layout, true));
    return;
  }
  if (touches(func_->body, buffer.get(), true)) refuse("transform_layout", "'" + name + "' is written by the function");
  refuse_views(func_->body, buffer.get(), "transform_layout", "is read through a view; transform before FlattenBuffer");
  size_t input = 0;
  while (input < inputs.size() && !inputs[input].same_as(buffer)) ++input;
  std::map<std::string, std::string> layouts = param_layouts(*func_.get());
  if (layouts.count(std::to_string(input)))
    refuse("transform_layout", "'" + name + "' already has the layout " + layouts[std::to_string(input)]);
  Layout layout = classify_layout(func_, buffer, layout_map, "transform_layout");
  record.add(layout_to_string(layout));
  Buffer laid(buffer->name, buffer->dtype, simplified(layout_shape(layout, buffer_shape(buffer))), buffer->scope);
  std::vector<Any> params;
  for (const Any& p : func_->params) params.push_back(p.as_object_ref().same_as(buffer) ? Any(laid) : p);
  layouts[std::to_string(input)] = layout_to_string(layout);
  std::map<std::string, Any> attrs = func_->attrs.get() ? func_->attrs->items : std::map<std::string, Any>{};
  std::map<std::string, Any> entries(layouts.begin(), layouts.end());
  attrs["param_layouts"] = Any(Map(entries));
  func_ = PrimFunc(params, redirect_loads(func_->body, buffer, laid, layout), func_->ret, Map(attrs));
}

std::string Schedule::cache_read(const std::string& name, const std::vector<int>& axes, const std::string& scope) {
  return cache_read(
      name,
      [&](const std::vector<PrimExpr>& v) {
        std::vector<PrimExpr> out;
        for (int a : axes) {
          if (a < 0 || a >= static_cast<int>(v.size())) {
            refuse("cache_read", "axis " + std::to_string(a) + " is out of range for the " + std::to_string(v.size()) +
                                     " axes of '" + name + "'");
          }
          out.push_back(v[a]);
        }
        return out;
      },
      scope);
}

std::string Schedule::cache_write(const std::string& name, const std::string& scope) {
  Recorder record(*this, "cache_write", name, scope);
  check_scope("cache_write", scope);
  Buffer buffer = find_buffer(func_, "cache_write", name, true);
  refuse_views(func_->body, buffer.get(), "cache_write", "is accessed through a view; cache before FlattenBuffer");
  // The one outermost loop nest that writes the buffer.
  const ForNode* writer = nullptr;
  pre_order(func_->body, [&](const Stmt& st) {
    if (const auto* f = st.as<ForNode>()) {
      if (touches(st, buffer.get(), true)) {
        if (writer) refuse("cache_write", "'" + name + "' is written by more than one loop nest");
        writer = f;
      }
      return false;
    }
    if (const auto* store = st.as<BufferStoreNode>(); store && store->buffer->data.get() == buffer->data.get()) {
      refuse("cache_write", "'" + name + "' is written outside a loop nest");
    }
    return true;
  });
  if (!writer) refuse("cache_write", "nothing writes '" + name + "'");
  // The nest may read the buffer only where it wrote it first (the init
  // of a reduction): the local copy starts empty.
  std::function<void(const Stmt&, std::vector<Array>&)> check = [&](const Stmt& st, std::vector<Array>& written) {
    auto reads_ok = [&](const Any& node) {
      Visitor v(false);
      v.on<BufferLoadNode>([&](const BufferLoadNode* l) {
        bool seen = l->buffer->data.get() != buffer->data.get();
        for (const Array& w : written) seen = seen || same_expression(Any(w), Any(l->indices));
        if (!seen) {
          refuse("cache_write", "the nest writing '" + name + "' reads it at " + indices_text(l->indices) +
                                    " before writing it there, so a local copy would lose that value");
        }
        v.visit_children(l);
      });
      v.visit(node);
    };
    if (const auto* seq_node = st.as<SeqStmtNode>()) {
      for (const Any& a : seq_node->seq) check(a.cast<Stmt>(), written);
      return;
    }
    if (const auto* store = st.as<BufferStoreNode>()) {
      reads_ok(Any(store->value));
      reads_ok(store->indices);
      if (store->buffer->data.get() == buffer->data.get()) written.push_back(store->indices);
      return;
    }
    if (const auto* f = st.as<ForNode>()) {
      reads_ok(Any(f->min));
      reads_ok(Any(f->extent));
      std::vector<Array> inner = written;
      check(f->body, inner);
      return;
    }
    map_children(
        st,
        [&](const PrimExpr& e) {
          reads_ok(Any(e));
          return e;
        },
        [&](const Stmt& c) {
          std::vector<Array> inner = written;
          check(c, inner);
          return c;
        });
  };
  std::vector<Array> written;
  check(ref_of<Stmt>(writer), written);
  std::vector<PrimExpr> shape;
  for (const Any& d : buffer->shape) shape.push_back(d.cast<PrimExpr>());
  // The copy back writes every element, so the nest must too: some store,
  // under no condition, at loop variables that run over the whole shape.
  bool whole = false;
  std::vector<const ForNode*> enclosing;
  std::function<void(const Stmt&)> cover = [&](const Stmt& st) {
    if (const auto* f = st.as<ForNode>()) {
      enclosing.push_back(f);
      cover(f->body);
      enclosing.pop_back();
      return;
    }
    if (const auto* seq_node = st.as<SeqStmtNode>()) {
      for (const Any& a : seq_node->seq) cover(a.cast<Stmt>());
      return;
    }
    const auto* store = st.as<BufferStoreNode>();
    if (!store || store->buffer.get() != buffer.get()) return;
    bool all = store->indices.size() == shape.size();
    for (size_t d = 0; all && d < shape.size(); ++d) {
      const ForNode* loop = nullptr;
      for (const ForNode* f : enclosing)
        if (store->indices[d].object() == f->loop_var.get()) loop = f;
      all = loop && const_int(loop->min) == 0 &&
            same_expression(Any(simplify(Cast(DataType::Int(64), loop->extent))),
                            Any(simplify(Cast(DataType::Int(64), shape[d]))));
    }
    whole = whole || all;
  };
  cover(ref_of<Stmt>(writer));
  if (!whole) {
    refuse("cache_write", "the nest writing '" + name +
                              "' does not write every element at its loop variables, so the "
                              "copy back would overwrite the others");
  }
  Buffer local(fresh_name(func_, name + "_" + (scope == "global" ? "local" : scope)), buffer->dtype, shape, scope);
  // Loads and stores of the buffer, in the writer, go to the local copy.
  ExprRule load_local = [&](const PrimExpr& e) -> std::optional<PrimExpr> {
    const auto* load = e.as<BufferLoadNode>();
    if (!load || load->buffer.get() != buffer.get()) return std::nullopt;
    return BufferLoad(local, exprs_of(load->indices));
  };
  StmtRule store_local = [&](const Stmt& st) -> std::optional<Stmt> {
    const auto* store = st.as<BufferStoreNode>();
    if (!store || store->buffer.get() != buffer.get()) return std::nullopt;
    return BufferStore(local, store->value, exprs_of(store->indices));
  };
  Stmt redirected = rewrite(rewrite(ref_of<Stmt>(writer), load_local, nullptr), nullptr, store_local);
  std::vector<Var> vars = fresh_vars(func_, "w", shape.size());
  std::vector<PrimExpr> at(vars.begin(), vars.end());
  Indices extents;
  for (const PrimExpr& d : shape) extents.push_back(simplify(Cast(DataType::Int(64), d)));
  Stmt back = loop_nest(vars, extents, BufferStore(buffer, BufferLoad(local, at), at));
  func_ = with_new_body(func_, replace(func_->body, writer, Allocate(local, seq({redirected, back}))));
  return local->name;
}

}  // namespace loom::tir
