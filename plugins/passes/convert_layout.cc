#include "convert_layout.h"

#include <algorithm>
#include <optional>

#include "graph_util.h"
#include "loom/ir/op.h"
#include "loom/runtime/ndarray.h"
#include "loom/tir/layout.h"

namespace loom::passes {

namespace {
const std::vector<int64_t> kToLast = {0, 2, 3, 1};   // NCHW -> NHWC, OIHW -> OHWI
const std::vector<int64_t> kToFirst = {0, 3, 1, 2};  // NHWC -> NCHW

Array ints(const std::vector<int64_t>& v) { return Array(std::vector<Any>(v.begin(), v.end())); }

ir::Expr transpose(const ir::Expr& x, const std::vector<int64_t>& axes) {
  return graph::Call(ir::Op::get("transpose"), {x}, Map({{"axes", Any(ints(axes))}}));
}

// Whether a constant's array can be re-laid out here: in host memory and
// compact.  Weights are re-laid out by this pass, once, rather than by a
// transpose call that FoldConstant's reference interpreter evaluates at
// microseconds an element (two minutes for ResNet-18's weights).
bool host_compact(const runtime::NDArray& x) { return x->device.device_type == kDLCPU && x->is_contiguous(); }

// A host constant in the channels-last order (OIHW -> OHWI).
runtime::NDArray channels_last_array(const runtime::NDArray& x) {
  tir::Layout layout;
  for (int64_t axis : kToLast) layout.push_back({tir::LayoutIndex::kWhole, static_cast<int>(axis), 1});
  return tir::relayout(x, layout);
}

const ir::TensorTypeNode* tensor_type(const ir::Expr& e) {
  return e->checked_type.defined() ? e->checked_type.as<ir::TensorTypeNode>() : nullptr;
}

bool has_attr(const ir::OpDef& def, const std::string& key) {
  for (const auto& f : def.attrs)
    if (f.name == key) return true;
  return false;
}

Map with_attrs(const Map& attrs, const std::map<std::string, Any>& changes) {
  std::map<std::string, Any> items = attrs.get() ? attrs->items : std::map<std::string, Any>{};
  for (const auto& [key, value] : changes) items[key] = value;
  return Map(items);
}

// Rewrites one function's top-level chain; nullopt when nothing converts.
class Converter {
 public:
  std::optional<ir::Expr> run(const ir::Expr& body) {
    std::vector<graph::Binding> bindings;
    ir::Expr result;
    std::tie(bindings, result) = graph::flatten_chain(body);
    graph::Var result_var("out");
    bool bound_result = false;
    if (result.as<graph::CallNode>()) {
      const_cast<graph::VarNode*>(result_var.get())->checked_type = result->checked_type;
      bindings.push_back({result_var, result});
      result = result_var;
      bound_result = true;
    }
    bool changed = false;
    for (const graph::Binding& b : bindings) changed |= convert(b);
    if (!changed) return std::nullopt;
    if (bound_result) {  // back to a result expression
      result = out_.back().value;
      out_.pop_back();
    }
    return graph::drop_dead_bindings(graph::build_chain(out_, result));
  }

 private:
  // Whether the binding was converted (its channels-last form recorded).
  bool convert(const graph::Binding& b) {
    const auto* call = b.value.as<graph::CallNode>();
    const auto* op = call ? call->callee.as<ir::OpNode>() : nullptr;
    if (!op) return keep(b);
    auto entry = ir::OpRegistry::entry(op->name);
    if (!entry) return keep(b);
    const ir::OpDef& def = entry->def;
    Map attrs = ir::OpRegistry::check_attrs(op->name, call->attrs);
    std::vector<ir::Expr> args;
    for (const Any& a : call->args) args.push_back(a.cast<ir::Expr>());
    std::string layout_key = has_attr(def, "data_layout") ? "data_layout" : has_attr(def, "layout") ? "layout" : "";
    const auto* first = args.empty() ? nullptr : tensor_type(args[0]);
    if (!layout_key.empty()) {
      if (attrs.at(layout_key).as_string() != "NCHW" || !first || first->shape.size() != 4) return keep(b);
      std::map<std::string, Any> changes = {{layout_key, Any(std::string("NHWC"))}};
      if (has_attr(def, "kernel_layout")) {
        if (attrs.at("kernel_layout").as_string() != "OIHW" || args.size() < 2) return keep(b);
        args[1] = channels_last(args[1]);
        changes["kernel_layout"] = Any(std::string("OHWI"));
      }
      args[0] = channels_last(args[0]);
      return emit(b, *op, args, with_attrs(call->attrs, changes));
    }
    if (op->name == "concat") return concat(b, *op, args, attrs);
    bool agnostic = (def.pattern == ir::PatternKind::kElementwise || def.pattern == ir::PatternKind::kBroadcast) &&
                    !has_attr(def, "axes") && !has_attr(def, "shape");
    if (!agnostic) return keep(b);
    bool any_last = false;
    for (const ir::Expr& a : args) any_last |= last_.count(a.get()) > 0;
    if (!any_last) return keep(b);
    if (has_attr(def, "axis")) {  // batch_norm-like: the channel axis moves
      if (def.pattern != ir::PatternKind::kBroadcast || !last_.count(args[0].get())) return keep(b);
      int64_t axis = attrs.at("axis").as_int();
      if (axis != 1 && axis != -3) return keep(b);
      for (size_t i = 1; i < args.size(); ++i)
        if (last_.count(args[i].get())) return keep(b);
      args[0] = last_.at(args[0].get());
      return emit(b, *op, args, with_attrs(call->attrs, {{"axis", Any(int64_t{3})}}));
    }
    for (ir::Expr& a : args) {
      const auto* t = tensor_type(a);
      if (!t) return keep(b);
      if (t->shape.size() == 4) {
        a = channels_last(a);
      } else if (t->shape.size() > 0) {
        // Leading 1s to rank 4, then the channels-last order of that shape.
        std::vector<int64_t> padded(4 - t->shape.size(), 1);
        for (const Any& d : t->shape) {
          const auto* c = dynamic_cast<const tir::IntImmNode*>(d.object());
          if (!c) return keep(b);
          padded.push_back(c->value);
        }
        std::vector<int64_t> shape;
        for (int64_t axis : kToLast) shape.push_back(padded[axis]);
        const auto* c = a.as<graph::ConstantNode>();
        if (c && host_compact(c->data)) {
          a = graph::Constant(c->data.view(shape));  // a bias: the same bytes, shaped here
        } else {
          a = graph::Call(ir::Op::get("reshape"), {a}, Map({{"shape", Any(ints(shape))}}));
        }
      }
    }
    return emit(b, *op, args, call->attrs);
  }

  // A concat of rank-4 values, one of them channels-last (a Fire module's
  // two branches), joins channels-last along the mapped axis, so the
  // branches need no transposes back and the result none forth.
  bool concat(const graph::Binding& b, const ir::OpNode& op, std::vector<ir::Expr> args, const Map& attrs) {
    bool any_last = false;
    for (const ir::Expr& a : args) {
      const auto* t = tensor_type(a);
      if (!t || t->shape.size() != 4) return keep(b);
      any_last |= last_.count(a.get()) > 0;
    }
    if (!any_last) return keep(b);
    int64_t axis = attrs.at("axis").as_int();
    if (axis < -4 || axis > 3) return keep(b);
    if (axis < 0) axis += 4;
    int64_t mapped = std::find(kToLast.begin(), kToLast.end(), axis) - kToLast.begin();
    for (ir::Expr& a : args) a = channels_last(a);
    const auto* call = b.value.as<graph::CallNode>();
    return emit(b, op, args, with_attrs(call->attrs, {{"axis", Any(mapped)}}));
  }

  bool keep(const graph::Binding& b) {
    out_.push_back(b);
    return false;
  }

  // `let %v_nhwc = op(args); let %v = transpose(%v_nhwc, NHWC -> NCHW)`.
  bool emit(const graph::Binding& b, const ir::OpNode& op, const std::vector<ir::Expr>& args, const Map& attrs) {
    graph::Var last(b.var->name + "_nhwc");
    out_.push_back({last, graph::Call(ir::Op::get(op.name), args, attrs)});
    out_.push_back({b.var, transpose(last, kToFirst)});
    last_[b.var.get()] = last;
    return true;
  }

  // The channels-last form of a rank-4 value: recorded, or a transpose
  // (bound once for a variable, so its users share it).
  ir::Expr channels_last(const ir::Expr& e) {
    auto found = last_.find(e.get());
    if (found != last_.end()) return found->second;
    if (const auto* c = e.as<graph::ConstantNode>(); c && host_compact(c->data) && c->data->shape.size() == 4) {
      graph::Constant relaid(channels_last_array(c->data));
      last_[e.get()] = relaid;
      return relaid;
    }
    ir::Expr t = transpose(e, kToLast);
    const auto* var = e.as<graph::VarNode>();
    if (!var) return t;
    graph::Var bound(var->name + "_nhwc");
    out_.push_back({bound, t});
    last_[e.get()] = bound;
    return bound;
  }

  std::vector<graph::Binding> out_;
  std::unordered_map<const Object*, ir::Expr> last_;  // value -> its channels-last variable
};
}  // namespace

transform::Pass ConvertLayout() {
  transform::PassInfo info = transform::PassInfo::named("ConvertLayout")
                                 .summary(
                                     "channels-first (NCHW) convolutions and pools, and the elementwise ops between "
                                     "them, to channels-last (NHWC)")
                                 .opt_level(1)
                                 .needs({"types_inferred"})
                                 .changes({"graph"})
                                 .preserves({"ops_lowered", "fused"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext&) {
    std::map<std::string, Any> converted;
    for (const std::string& name : module.names()) {
      const auto* f = module.lookup(name).as<graph::FunctionNode>();
      if (!f || f->attrs.contains("primitive") || f->attrs.contains("codegen")) continue;
      std::optional<ir::Expr> body = Converter().run(f->body);
      if (!body) continue;
      converted[name] = graph::with_body(*f, *body);
    }
    return module.with_functions(converted);
  });
}

}  // namespace loom::passes
