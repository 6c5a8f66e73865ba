// The operator-definition helpers of loom/graph/operator.h.
#include "loom/graph/operator.h"

#include <algorithm>

#include "loom/ir/text.h"
#include "loom/object/structural.h"
#include "loom/support/error.h"
#include "loom/tir/expr.h"

namespace loom::graph {

bool same_dim(const Any& a, const Any& b) {
  // -1 for a symbolic dimension, as in broadcast_shapes below.
  int64_t ca = constant_dim(a).value_or(-1), cb = constant_dim(b).value_or(-1);
  if (ca >= 0 || cb >= 0) return ca == cb;
  return same_expression(a, b);
}

std::optional<int64_t> constant_dim(const Any& d) {
  if (const auto* i = dynamic_cast<const tir::IntImmNode*>(d.object())) return i->value;
  return std::nullopt;
}

std::vector<int64_t> padding_of(const Map& attrs) {
  std::vector<int64_t> v;
  for (const Any& a : attrs.at("padding").cast<Array>()) v.push_back(a.as_int());
  if (v.size() == 1) v = {v[0], v[0], v[0], v[0]};
  if (v.size() == 2) v = {v[0], v[1], v[0], v[1]};
  if (v.size() != 4) LOOM_THROW(TypeError) << "padding must have 1, 2 or 4 entries, got " << v.size();
  for (int64_t x : v)
    if (x < 0) LOOM_THROW(TypeError) << "padding entries must not be negative, got " << x;
  return v;
}

int64_t normalize_axis(int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    LOOM_THROW(TypeError) << "axis " << axis << " is out of range for rank " << rank;
  }
  return axis < 0 ? axis + r : axis;
}

void define_operator(const std::string& name, int arity, std::vector<SchemaField> attrs, ir::PatternKind pattern,
                     const std::string& doc, std::function<ir::Type(const CallNode&)> type_rule,
                     std::function<tir::PrimFunc(const CallNode&)> lower) {
  if (!type_rule) LOOM_THROW(Error) << "operator '" << name << "': define_operator needs a type rule";
  auto as_call = [](const ObjectRef& ref) -> const CallNode& { return *ref.as<CallNode>(); };
  ir::OpRegistry::register_op(ir::OpDef{
      name, arity, std::move(attrs),
      Function::typed([type_rule, as_call](ObjectRef call, Any) -> ObjectRef { return type_rule(as_call(call)); },
                      name + ".infer_type"),
      pattern, doc});
  if (!lower) return;
  ir::OpRegistry::set_property(
      name, "FLower",
      Function::typed([lower, as_call](ObjectRef call) -> ObjectRef { return lower(as_call(call)); }, name + ".lower"));
}

void set_op_examples(const std::string& op, const std::vector<OpExample>& examples) {
  std::vector<Any> items;
  for (const OpExample& e : examples) {
    if (e.call.empty() || !(e.low <= e.high)) {
      LOOM_THROW(Error) << "operator '" << op << "': an example needs a call and low <= high";
    }
    std::vector<Any> inputs(e.inputs.begin(), e.inputs.end());
    items.push_back(Map{{"call", e.call}, {"inputs", Array(inputs)}, {"low", e.low}, {"high", e.high}});
  }
  ir::OpRegistry::set_property(op, "examples", Array(items), /*allow_override=*/true);
}

std::vector<OpExample> op_examples(const std::string& op) {
  std::vector<OpExample> out;
  std::optional<Any> property = ir::OpRegistry::property(op, "examples");
  if (!property) return out;
  for (const Any& item : property->cast<Array>()->items) {
    Map m = item.cast<Map>();
    OpExample e;
    e.call = m.at("call").cast<std::string>();
    for (const Any& input : m.at("inputs").cast<Array>()->items) e.inputs.push_back(input.cast<std::string>());
    e.low = m.at("low").cast<double>();
    e.high = m.at("high").cast<double>();
    out.push_back(std::move(e));
  }
  return out;
}

Map attrs_of(const CallNode& call) {
  return ir::OpRegistry::check_attrs(call.callee.as<ir::OpNode>()->name, call.attrs);
}

const ir::TensorTypeNode& result_type(const CallNode& call) {
  const auto* t = call.checked_type.as<ir::TensorTypeNode>();
  if (!t) LOOM_THROW(Error) << "the call has no tensor type; run InferType first";
  return *t;
}

const ir::TensorTypeNode& tensor_arg(const CallNode& call, size_t i) {
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
    // -1 for a symbolic dimension (constant ones are not negative).  Not
    // std::optional: GCC merges its flag and value tests into one that
    // reads the value of an empty optional, which valgrind reports.
    int64_t ca = constant_dim(da).value_or(-1), cb = constant_dim(db).value_or(-1);
    Any result;
    if (!has_a) {
      result = db;
    } else if (!has_b) {
      result = da;
    } else if (ca == 1) {
      result = db;
    } else if (cb == 1) {
      result = da;
    } else if (same_dim(da, db)) {
      result = da;
    } else {
      LOOM_THROW(TypeError) << "shapes " << shape_text(a) << " and " << shape_text(b) << " do not broadcast: dimension "
                            << (rank - 1 - k) << " of the result would be " << ir::to_text(da) << " and "
                            << ir::to_text(db);
    }
    out[rank - 1 - k] = result;
  }
  return out;
}

}  // namespace loom::graph
