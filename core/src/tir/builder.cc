// Building prim IR (loom/tir/builder.h).
#include "loom/tir/builder.h"

#include <algorithm>

#include "loom/ir/text.h"
#include "loom/object/structural.h"
#include "loom/tir/functor.h"
#include "loom/tir/util.h"

namespace loom::tir {

namespace {
std::optional<int64_t> constant_dim(const Any& d) {
  if (const auto* i = dynamic_cast<const IntImmNode*>(d.object())) return i->value;
  return std::nullopt;
}
}  // namespace

PrimExpr PrimBuilder::dim(const Any& graph_dim) {
  if (auto c = constant_dim(graph_dim)) return PrimExpr(*c);
  if (const auto* var = dynamic_cast<const VarNode*>(graph_dim.object())) {
    auto found = vars_.find(var);
    if (found != vars_.end()) return found->second;
    Var v(var->name, DataType::Int(64));
    vars_.emplace(var, v);
    scalars_.push_back(Any(v));
    return v;
  }
  // A composite dimension (a reshape's n * 4): the same arithmetic over
  // the scalars of its variables, or a parameter's scalar of its own.
  const auto* e = dynamic_cast<const PrimExprNode*>(graph_dim.object());
  if (!e) LOOM_THROW(Error) << "dimension " << ir::to_text(graph_dim) << " is not an integer expression";
  if (const Var* own = composite(graph_dim)) return *own;
  return Rewriter()
      .pre_expr([&](const PrimExpr& part) -> std::optional<PrimExpr> {
        if (part.as<VarNode>()) return dim(Any(part));
        return std::nullopt;
      })
      .run(graph_dim.cast<PrimExpr>());
}

Buffer PrimBuilder::buffer(const ir::TensorTypeNode& type, const std::string& name, const std::string& scope) {
  if (type.unknown_rank()) LOOM_THROW(Error) << "buffer '" << name << "': the tensor type has no known rank";
  std::vector<PrimExpr> shape;
  for (const Any& d : type.shape) shape.push_back(dim(d));
  std::string unique = name;
  for (int k = 1; names_.count(unique); ++k) unique = name + "_" + std::to_string(k);
  names_.insert(unique);
  return Buffer(unique, type.dtype, shape, scope);
}

const Var* PrimBuilder::composite(const Any& graph_dim) const {
  for (const auto& [dim, v] : composites_)
    if (same_expression(Any(dim), graph_dim)) return &v;
  return nullptr;
}

Buffer PrimBuilder::param(const ir::TensorTypeNode& type, const std::string& name) {
  // A parameter's dimension over several variables (%m + %n, %b * %n) or
  // not linear in its one (min(%n, 1)) is a scalar of its own, bound from
  // that dimension: its variables alone may be in no buffer's shape, and
  // the kernel needs only the value.
  if (!type.unknown_rank()) {
    for (const Any& d : type.shape) {
      const auto* e = d.object() ? dynamic_cast<const PrimExprNode*>(d.object()) : nullptr;
      if (!e || dynamic_cast<const VarNode*>(e) || dynamic_cast<const IntImmNode*>(e)) continue;
      if (composite(d)) continue;
      std::vector<const VarNode*> vars = used_vars(d, [](const VarNode*) { return true; });
      // One variable, linearly (%n * 4 + 1): bound through the variable.
      auto linear = vars.size() == 1 ? linear_in(d.cast<PrimExpr>(), vars[0]) : std::nullopt;
      if (vars.empty() || (linear && linear->first != 0)) continue;
      std::string name;
      for (const VarNode* v : vars) name += (name.empty() ? "" : "_") + v->name;
      Var v(name, DataType::Int(64));
      composites_.emplace_back(d.cast<PrimExpr>(), v);
      scalars_.push_back(Any(v));
    }
  }
  Buffer b = buffer(type, name);
  params_.push_back(Any(b));
  return b;
}

PrimFunc PrimBuilder::finish(Stmt body, Map attrs) {
  // A composite dimension's scalar with what it stands for over the
  // others (min(%n, 150) for a scalar of its own): a caller that has the
  // dimension can find %n, which no buffer may have (the VM passes it).
  std::vector<Any> composites;
  for (const auto& [graph_dim, v] : composites_) {
    // (Only over the scalars the body has: a variable of the dimension
    // alone, which nothing reads, is not made a parameter to pass.)
    std::vector<const VarNode*> vars = used_vars(graph_dim, [](const VarNode*) { return true; });
    if (!std::all_of(vars.begin(), vars.end(), [&](const VarNode* x) { return vars_.count(x) > 0; })) continue;
    PrimExpr over_scalars = Rewriter()
                                .pre_expr([&](const PrimExpr& part) -> std::optional<PrimExpr> {
                                  if (part.as<VarNode>()) return dim(Any(part));
                                  return std::nullopt;
                                })
                                .run(graph_dim);
    composites.push_back(Any(Array(std::vector<Any>{Any(v), Any(over_scalars)})));
  }
  std::vector<Any> params = params_;
  params.insert(params.end(), scalars_.begin(), scalars_.end());
  if (!composites.empty()) {
    std::map<std::string, Any> items = attrs.defined() ? attrs.get()->items : std::map<std::string, Any>{};
    items["composite_scalars"] = Any(Array(composites));
    attrs = Map(items);
  }
  return PrimFunc(params, std::move(body), ir::Type(), std::move(attrs));
}

Indices buffer_shape(const Buffer& b) {
  Indices out;
  for (const Any& d : b->shape) out.push_back(d.cast<PrimExpr>());
  return out;
}

Stmt loop_nest(const std::vector<Var>& vars, const Indices& extents, Stmt body) {
  if (vars.size() != extents.size())
    LOOM_THROW(Error) << "loop_nest: " << vars.size() << " variables for " << extents.size() << " extents";
  for (size_t k = extents.size(); k-- > 0;) {
    body = For(vars[k], IntImm(vars[k].dtype(), 0), extents[k], ForKind::kSerial, body);
  }
  return body;
}

Stmt loop_nest(const Indices& extents, const std::function<Stmt(const Indices&)>& body, const std::string& prefix) {
  std::vector<Var> vars;
  for (size_t k = 0; k < extents.size(); ++k) vars.emplace_back(prefix + std::to_string(k), DataType::Int(64));
  return loop_nest(vars, extents, body(Indices(vars.begin(), vars.end())));
}

Stmt compute(const Buffer& out, const std::function<PrimExpr(const Indices&)>& value) {
  return loop_nest(buffer_shape(out), [&](const Indices& i) { return Stmt(BufferStore(out, value(i), i)); });
}

Stmt reduction(const Buffer& out, const Indices& extents, const PrimExpr& init,
               const std::function<PrimExpr(const PrimExpr&, const PrimExpr&)>& combine,
               const std::function<PrimExpr(const Indices&, const Indices&)>& value,
               const std::function<PrimExpr(const PrimExpr&)>& finalize) {
  return loop_nest(buffer_shape(out), [&](const Indices& i) {
    std::vector<Stmt> steps;
    steps.push_back(BufferStore(out, init, i));
    steps.push_back(loop_nest(
        extents, [&](const Indices& r) { return Stmt(BufferStore(out, combine(BufferLoad(out, i), value(i, r)), i)); },
        "r"));
    if (finalize) steps.push_back(BufferStore(out, finalize(BufferLoad(out, i)), i));
    return Stmt(SeqStmt(steps));
  });
}

Indices broadcast_indices(const Buffer& in, const Buffer& out, const Indices& out_indices) {
  Indices shape = buffer_shape(in), out_shape = buffer_shape(out), indices;
  size_t offset = out_indices.size() - shape.size();
  auto is_one = [](const PrimExpr& d) { return constant_dim(Any(d)) == std::optional<int64_t>(1); };
  for (size_t k = 0; k < shape.size(); ++k) {
    bool broadcast = is_one(shape[k]) && !(offset + k < out_shape.size() && is_one(out_shape[offset + k]));
    indices.push_back(broadcast ? PrimExpr(int64_t{0}) : out_indices[offset + k]);
  }
  return indices;
}

PrimExpr make_const(DataType t, double value) {
  DataType scalar(static_cast<DataType::Code>(t.code), t.bits);
  bool is_float = t.code == DataType::kFloat || t.code == DataType::kBFloat;
  PrimExpr c = is_float ? PrimExpr(FloatImm(scalar, value)) : PrimExpr(IntImm(scalar, static_cast<int64_t>(value)));
  return t.lanes > 1 ? PrimExpr(Broadcast(c, t.lanes)) : c;
}

For with_kind_and_body(const ForNode& loop, ForKind kind, Stmt body) {
  return For(loop.loop_var, loop.min, loop.extent, kind, std::move(body), loop.thread, loop.annotations);
}

Stmt no_op() { return Evaluate(PrimExpr(0)); }

bool is_no_op(const Stmt& s) {
  if (const auto* q = s.as<SeqStmtNode>()) return q->seq.size() == 0;
  const auto* e = s.as<EvaluateNode>();
  return e && e->value.as<IntImmNode>();
}

std::vector<Stmt> flatten_seq(const Stmt& s) {
  std::vector<Stmt> flat;
  std::vector<Stmt> todo{s};  // in reverse order: iterative, sequences nest to any depth
  while (!todo.empty()) {
    Stmt cur = std::move(todo.back());
    todo.pop_back();
    if (const auto* q = cur.as<SeqStmtNode>()) {
      for (size_t k = q->seq.size(); k-- > 0;) todo.push_back(q->seq[k].cast<Stmt>());
    } else if (!is_no_op(cur)) {
      flat.push_back(std::move(cur));
    }
  }
  return flat;
}

Stmt seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (const Stmt& s : stmts) {
    if (s.as<SeqStmtNode>()) {
      std::vector<Stmt> inner = flatten_seq(s);
      flat.insert(flat.end(), std::make_move_iterator(inner.begin()), std::make_move_iterator(inner.end()));
    } else if (!is_no_op(s)) {
      flat.push_back(s);
    }
  }
  if (flat.empty()) return no_op();
  if (flat.size() == 1) return flat[0];
  return SeqStmt(flat);
}

}  // namespace loom::tir
