#include "lowering.h"

#include "loom/ir/text.h"
#include "loom/support/error.h"

namespace loom::ops {

namespace {
std::optional<int64_t> constant(const Any& d) { return constant_dim(d); }
}  // namespace

std::optional<int64_t> constant_dim(const Any& d) {
  if (const auto* i = dynamic_cast<const tir::IntImmNode*>(d.object())) return i->value;
  return std::nullopt;
}

bool is_float(DataType t) { return t.code == DataType::kFloat || t.code == DataType::kBFloat; }

tir::PrimExpr scalar(DataType t, double v) {
  if (is_float(t)) return tir::FloatImm(t, v);
  return tir::IntImm(t, static_cast<int64_t>(v));
}

int64_t normalize_axis(int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    LOOM_THROW(TypeError) << "axis " << axis << " is out of range for rank " << rank;
  }
  return axis < 0 ? axis + r : axis;
}

void define(const std::string& name, int arity, std::vector<SchemaField> attrs, ir::PatternKind pattern,
            const std::string& doc, std::function<ir::Type(const graph::CallNode&)> infer,
            std::function<tir::PrimFunc(const graph::CallNode&)> lower) {
  auto as_call = [](const ObjectRef& ref) -> const graph::CallNode& { return *ref.as<graph::CallNode>(); };
  ir::OpRegistry::register_op(ir::OpDef{
      name, arity, std::move(attrs),
      Function::typed([infer, as_call](ObjectRef call, Any) -> ObjectRef { return infer(as_call(call)); },
                      name + ".infer_type"),
      pattern, doc});
  ir::OpRegistry::set_property(name, "FLower",
                               Function::typed([lower, as_call](ObjectRef call) -> ObjectRef { return lower(as_call(call)); },
                                               name + ".lower"));
}

Map attrs_of(const graph::CallNode& call) {
  return ir::OpRegistry::check_attrs(call.callee.as<ir::OpNode>()->name, call.attrs);
}

const ir::TensorTypeNode& result_type(const graph::CallNode& call) {
  const auto* t = call.checked_type.as<ir::TensorTypeNode>();
  if (!t) LOOM_THROW(Error) << "the call has no tensor type; run InferType first";
  return *t;
}

const ir::TensorTypeNode& tensor_arg(const graph::CallNode& call, size_t i) {
  if (i >= call.args.size()) LOOM_THROW(TypeError) << "argument " << i << " is missing";
  ir::Type t = call.args[i].cast<ir::Expr>()->checked_type;
  const auto* tensor = t.as<ir::TensorTypeNode>();
  if (!tensor) {
    LOOM_THROW(TypeError) << "argument " << i << " must be a tensor, got "
                          << (t.defined() ? ir::to_text(Any(t)) : std::string("an untyped value"));
  }
  if (tensor->unknown_rank()) LOOM_THROW(TypeError) << "argument " << i << " has unknown rank";
  return *tensor;
}

std::string shape_text(const Array& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + ir::to_text(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

std::vector<Any> broadcast_shapes(const Array& a, const Array& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<Any> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    // k counts from the right.
    bool has_a = k < a.size(), has_b = k < b.size();
    Any da = has_a ? a[a.size() - 1 - k] : Any(), db = has_b ? b[b.size() - 1 - k] : Any();
    Any result;
    if (!has_a) {
      result = db;
    } else if (!has_b) {
      result = da;
    } else if (constant(da) == std::optional<int64_t>(1)) {
      result = db;
    } else if (constant(db) == std::optional<int64_t>(1)) {
      result = da;
    } else if (constant(da) && constant(db) ? *constant(da) == *constant(db) : da.object() == db.object()) {
      result = da;
    } else {
      LOOM_THROW(TypeError) << "shapes " << shape_text(a) << " and " << shape_text(b)
                            << " do not broadcast: dimension " << (rank - 1 - k) << " of the result would be "
                            << ir::to_text(da) << " and " << ir::to_text(db);
    }
    out[rank - 1 - k] = result;
  }
  return out;
}

std::vector<tir::PrimExpr> buffer_shape(const tir::Buffer& b) {
  std::vector<tir::PrimExpr> out;
  for (const Any& d : b->shape) out.push_back(d.cast<tir::PrimExpr>());
  return out;
}

tir::PrimExpr PrimBuilder::dim(const Any& graph_dim) {
  if (auto c = constant(graph_dim)) return tir::PrimExpr(*c);
  const auto* var = dynamic_cast<const tir::VarNode*>(graph_dim.object());
  if (!var) {
    LOOM_THROW(Error) << "dimension " << ir::to_text(graph_dim)
                      << " is an expression; the operator library lowers constant or variable dimensions";
  }
  auto found = vars_.find(var);
  if (found != vars_.end()) return found->second;
  tir::Var v(var->name, DataType::Int(64));
  vars_.emplace(var, v);
  scalars_.push_back(Any(v));
  return v;
}

tir::Buffer PrimBuilder::buffer(const ir::TensorTypeNode& type, const std::string& name) {
  std::vector<tir::PrimExpr> shape;
  for (const Any& d : type.shape) shape.push_back(dim(d));
  tir::Buffer b(name, type.dtype, shape);
  buffers_.push_back(Any(b));
  return b;
}

tir::Stmt PrimBuilder::loops(const std::vector<tir::PrimExpr>& shape,
                             const std::function<tir::Stmt(const std::vector<tir::PrimExpr>&)>& body,
                             const std::string& prefix) {
  std::vector<tir::Var> vars;
  std::vector<tir::PrimExpr> indices;
  for (size_t k = 0; k < shape.size(); ++k) {
    vars.emplace_back(prefix + std::to_string(k), DataType::Int(64));
    indices.push_back(vars.back());
  }
  tir::Stmt s = body(indices);
  for (size_t k = shape.size(); k-- > 0;) s = tir::For(vars[k], tir::PrimExpr(int64_t{0}), shape[k], tir::ForKind::kSerial, s);
  return s;
}

tir::Stmt PrimBuilder::compute(const tir::Buffer& out,
                               const std::function<tir::PrimExpr(const std::vector<tir::PrimExpr>&)>& value) {
  return loops(buffer_shape(out), [&](const std::vector<tir::PrimExpr>& idx) {
    return tir::Stmt(tir::BufferStore(out, value(idx), idx));
  });
}

tir::Stmt PrimBuilder::reduce(
    const tir::Buffer& out, const std::vector<tir::PrimExpr>& extents, const tir::PrimExpr& init,
    const std::function<tir::PrimExpr(const tir::PrimExpr&, const tir::PrimExpr&)>& combine,
    const std::function<tir::PrimExpr(const std::vector<tir::PrimExpr>&, const std::vector<tir::PrimExpr>&)>& value,
    const std::function<tir::PrimExpr(const tir::PrimExpr&)>& finalize) {
  return loops(buffer_shape(out), [&](const std::vector<tir::PrimExpr>& i) {
    std::vector<tir::Stmt> steps;
    steps.push_back(tir::BufferStore(out, init, i));
    steps.push_back(loops(extents, [&](const std::vector<tir::PrimExpr>& r) {
      return tir::Stmt(tir::BufferStore(out, combine(tir::BufferLoad(out, i), value(i, r)), i));
    }, "r"));
    if (finalize) steps.push_back(tir::BufferStore(out, finalize(tir::BufferLoad(out, i)), i));
    return tir::Stmt(tir::SeqStmt(steps));
  });
}

std::vector<tir::PrimExpr> PrimBuilder::broadcast_indices(const tir::Buffer& in,
                                                          const std::vector<tir::PrimExpr>& out_indices) {
  std::vector<tir::PrimExpr> shape = buffer_shape(in), out;
  size_t offset = out_indices.size() - shape.size();
  for (size_t k = 0; k < shape.size(); ++k) {
    bool one = constant(Any(shape[k])) == std::optional<int64_t>(1);
    out.push_back(one ? tir::PrimExpr(int64_t{0}) : out_indices[offset + k]);
  }
  return out;
}

tir::PrimFunc PrimBuilder::finish(tir::Stmt body) {
  std::vector<Any> params = buffers_;
  params.insert(params.end(), scalars_.begin(), scalars_.end());
  return tir::PrimFunc(params, body);
}

}  // namespace loom::ops
