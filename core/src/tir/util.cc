// Small prim IR utilities (loom/tir/util.h).
#include "loom/tir/util.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_set>

#include "loom/object/structural.h"
#include "loom/object/traversal.h"
#include "loom/support/strings.h"
#include "loom/tir/functor.h"

namespace loom::tir {

bool is_int(DataType t) { return t.code == DataType::kInt || t.code == DataType::kUInt; }
bool is_float(DataType t) { return t.code == DataType::kFloat || t.code == DataType::kBFloat; }
bool is_unsigned(DataType t) { return t.code == DataType::kUInt || t.code == DataType::kBool; }
DataType scalar_of(DataType t) { return DataType(static_cast<DataType::Code>(t.code), t.bits, 1); }

std::optional<int64_t> const_int(const PrimExpr& e) {
  if (const auto* i = e.as<IntImmNode>()) return i->value;
  return std::nullopt;
}

Stmt serial_with_note(const ForNode& loop, const std::string& key, const std::string& reason) {
  std::map<std::string, Any> notes = loop.annotations.get() ? loop.annotations->items : std::map<std::string, Any>{};
  notes[key] = Any(reason);
  return For(loop.loop_var, loop.min, loop.extent, ForKind::kSerial, loop.body, "", Map(notes));
}

std::vector<const ForNode*> perfect_nest(const ForNode* top) {
  std::vector<const ForNode*> nest{top};
  while (const auto* next = nest.back()->body.as<ForNode>()) nest.push_back(next);
  return nest;
}

std::optional<std::pair<int64_t, int64_t>> linear_in(const PrimExpr& e, const VarNode* v) {
  if (e.get() == v) return std::make_pair(int64_t{1}, int64_t{0});
  if (auto c = const_int(e)) return std::make_pair(int64_t{0}, *c);
  const auto* b = dynamic_cast<const BinaryOpNode*>(e.get());
  if (!b) return std::nullopt;
  auto l = linear_in(b->a, v), r = linear_in(b->b, v);
  if (!l || !r) return std::nullopt;
  if (e.as<AddNode>()) return std::make_pair(l->first + r->first, l->second + r->second);
  if (e.as<SubNode>()) return std::make_pair(l->first - r->first, l->second - r->second);
  if (e.as<MulNode>() && (l->first == 0 || r->first == 0)) {
    return std::make_pair(l->first * r->second + r->first * l->second, l->second * r->second);
  }
  return std::nullopt;
}

std::vector<const VarNode*> used_vars(const Any& node, const std::function<bool(const VarNode*)>& keep) {
  std::vector<const VarNode*> out;
  std::unordered_set<const VarNode*> seen;
  Visitor collect;
  collect.on<VarNode>([&](const VarNode* v) {
    if (keep(v) && seen.insert(v).second) out.push_back(v);
  });
  collect.visit(node);
  return out;
}

bool has_thread_binding(const Stmt& body) {
  bool bound = false;
  pre_order(body, [&](const Stmt& s) {
    const auto* f = s.as<ForNode>();
    if (f && f->for_kind() == ForKind::kThreadBinding) bound = true;
    return !bound;
  });
  return bound;
}

int device_type_of(const PrimFuncNode& f) {
  return f.attrs.contains("device_type") ? static_cast<int>(f.attrs.at("device_type").as_int()) : 1;
}

std::vector<const VarNode*> entry_scalars(const PrimFunc& func) {
  std::vector<const VarNode*> out;
  for (const Any& p : func->params)
    if (const auto* v = p.as_object_ref().as<VarNode>()) out.push_back(v);
  for (const Buffer& b : func.buffer_params()) {
    for (const Any& d : b->shape) {
      const auto* v = d.as_object_ref().as<VarNode>();
      if (v && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    }
  }
  return out;
}

std::optional<ShapeBinding> bind_from_shapes(const std::vector<Buffer>& buffers, const VarNode* var) {
  for (size_t k = 0; k < buffers.size(); ++k)
    for (size_t d = 0; d < buffers[k]->shape.size(); ++d)
      if (buffers[k]->shape[d].object() == var) return ShapeBinding{k, d, 1, 0};
  for (size_t k = 0; k < buffers.size(); ++k) {
    for (size_t d = 0; d < buffers[k]->shape.size(); ++d) {
      auto form = linear_in(buffers[k]->shape[d].cast<PrimExpr>(), var);
      if (form && form->first != 0) return ShapeBinding{k, d, form->first, form->second};
    }
  }
  return std::nullopt;
}

PrimExpr solve_binding(const ShapeBinding& b, const PrimExpr& extent) {
  PrimExpr e = extent;
  if (b.offset != 0) e = Sub(e, PrimExpr(b.offset));
  if (b.scale != 1) e = FloorDiv(e, PrimExpr(b.scale));
  return e;
}

tir::PrimFunc with_body(const tir::PrimFuncNode& f, const Stmt& body) {
  std::vector<Any> params(f.params.begin(), f.params.end());
  return tir::PrimFunc(params, body, f.ret, f.attrs);
}

}  // namespace loom::tir

namespace loom::tir {

std::optional<ReductionUpdate> match_reduction_update(const BufferStoreNode* store) {
  DataType t = store->buffer->dtype;
  if (!is_float(t) && !is_int(t)) return std::nullopt;
  ReductionUpdate update;
  PrimExpr self;
  if (const auto* n = store->value.as<AddNode>()) {
    self = n->a, update.term = n->b;
  } else if (const auto* n = store->value.as<MaxNode>()) {
    self = n->a, update.term = n->b, update.op = ReduceOp::kMax;
  } else if (const auto* n = store->value.as<MinNode>()) {
    self = n->a, update.term = n->b, update.op = ReduceOp::kMin;
  } else {
    return std::nullopt;
  }
  const auto* load = self.as<BufferLoadNode>();
  if (!load || load->buffer.get() != store->buffer.get() || !same_expression(Any(load->indices), Any(store->indices))) {
    return std::nullopt;
  }
  bool reads_itself = false;
  pre_order(
      Evaluate(update.term), [](const Stmt&) { return true; },
      [&](const PrimExpr& e) {
        const auto* l = e.as<BufferLoadNode>();
        reads_itself = reads_itself || (l && l->buffer.get() == store->buffer.get());
        return !reads_itself;
      });
  if (reads_itself) return std::nullopt;
  return update;
}

PrimExpr reduce_combine(ReduceOp op, const PrimExpr& a, const PrimExpr& b) {
  if (op == ReduceOp::kMax) return Max(a, b);
  if (op == ReduceOp::kMin) return Min(a, b);
  return Add(a, b);
}

std::optional<PrimExpr> reduce_identity(ReduceOp op, DataType t) {
  bool low = op == ReduceOp::kMax;
  if (op == ReduceOp::kAdd) return is_float(t) ? PrimExpr(FloatImm(t, 0.0)) : PrimExpr(IntImm(t, 0));
  if (is_float(t)) {
    return PrimExpr(
        FloatImm(t, low ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity()));
  }
  bool is_signed = t.code == DataType::kInt;
  if (t.bits >= 64) {
    if (!is_signed) return low ? std::optional<PrimExpr>(IntImm(t, 0)) : std::nullopt;
    return PrimExpr(IntImm(t, low ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max()));
  }
  int64_t span = int64_t{1} << (is_signed ? t.bits - 1 : t.bits);
  return PrimExpr(IntImm(t, is_signed ? (low ? -span : span - 1) : (low ? 0 : span - 1)));
}

namespace {

// Float operations of one evaluation of `e` (float_ops).
int64_t expr_float_ops(const PrimExpr& e) {
  int64_t n = 0;
  pre_order(
      Evaluate(e), [](const Stmt&) { return true; },
      [&](const PrimExpr& x) {
        DataType t = x.dtype();
        if (!is_float(t)) {
          // A select's condition is boolean; its values are what count.
          return true;
        }
        if (x.as<AddNode>() || x.as<SubNode>() || x.as<MulNode>() || x.as<DivNode>() || x.as<MinNode>() ||
            x.as<MaxNode>()) {
          n += t.lanes;
        } else if (const auto* call = x.as<CallNode>(); call && !starts_with(call->op, "tir.")) {
          n += t.lanes;
        }
        return true;
      });
  return n;
}

struct FloatOpCounter {
  const std::function<std::optional<int64_t>(const std::string&)>& kernel_ops;

  std::optional<int64_t> stmt(const Stmt& s) const {
    if (!s.defined()) return 0;
    if (const auto* loop = s.as<ForNode>()) {
      std::optional<int64_t> extent = const_int(loop->extent), body = stmt(loop->body);
      int64_t out = 0;
      if (!extent || !body || __builtin_mul_overflow(std::max<int64_t>(*extent, 0), *body, &out)) return std::nullopt;
      return out;
    }
    if (const auto* seq = s.as<SeqStmtNode>()) {
      int64_t out = 0;
      for (const Any& item : seq->seq) {
        std::optional<int64_t> n = stmt(item.cast<Stmt>());
        if (!n || __builtin_add_overflow(out, *n, &out)) return std::nullopt;
      }
      return out;
    }
    if (const auto* branch = s.as<IfThenElseNode>()) {
      std::optional<int64_t> a = stmt(branch->then_case), b = stmt(branch->else_case);
      if (!a || !b) return std::nullopt;
      return expr_float_ops(branch->condition) + std::max(*a, *b);
    }
    if (const auto* let = s.as<LetStmtNode>()) return plus(expr_float_ops(let->value), stmt(let->body));
    if (const auto* a = s.as<AllocateNode>()) return stmt(a->body);
    if (const auto* a = s.as<AttrStmtNode>()) return stmt(a->body);
    if (const auto* store = s.as<BufferStoreNode>()) return expr_float_ops(store->value);
    if (const auto* eval = s.as<EvaluateNode>()) {
      const auto* call = eval->value.as<CallNode>();
      if (call && call->op == "tir.launch" && call->args.size() > 0) {
        const auto* name = call->args[0].cast<PrimExpr>().as<StringImmNode>();
        if (!name || !kernel_ops) return std::nullopt;
        return kernel_ops(name->value);
      }
      return expr_float_ops(eval->value);
    }
    return std::nullopt;  // a statement this count does not know
  }
  static std::optional<int64_t> plus(int64_t a, std::optional<int64_t> b) {
    int64_t out = 0;
    if (!b || __builtin_add_overflow(a, *b, &out)) return std::nullopt;
    return out;
  }
};

}  // namespace

std::optional<int64_t> float_ops(const PrimFunc& f,
                                 const std::function<std::optional<int64_t>(const std::string&)>& kernel_ops) {
  return FloatOpCounter{kernel_ops}.stmt(f->body);
}

}  // namespace loom::tir
