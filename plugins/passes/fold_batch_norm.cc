#include "fold_batch_norm.h"

#include <cmath>

#include "graph_util.h"
#include "loom/graph/function.h"
#include "loom/graph/shared.h"
#include "loom/ir/op.h"
#include "loom/object/traversal.h"
#include "loom/runtime/ndarray.h"
#include "loom/tir/expr.h"

namespace loom::passes {

namespace {

using runtime::NDArray;

const runtime::NDArrayNode* constant_array(const ir::Expr& e) {
  const auto* c = e.as<graph::ConstantNode>();
  return c ? c->data.get() : nullptr;
}

// Element k of a float32/float64 array as a double.
double element(const runtime::NDArrayNode* a, int64_t k) {
  if (a->dtype == DataType::Float(32)) return static_cast<const float*>(a->data())[k];
  return static_cast<const double*>(a->data())[k];
}

// A new array of `shape` and `dtype` with element k = value(k).
template <class F>
NDArray make_array(const std::vector<int64_t>& shape, DataType dtype, F&& value) {
  NDArray out = NDArray::empty(shape, dtype);
  for (int64_t k = 0, n = out->numel(); k < n; ++k) {
    if (dtype == DataType::Float(32))
      out.data_as<float>()[k] = static_cast<float>(value(k));
    else
      out.data_as<double>()[k] = value(k);
  }
  return out;
}

// Whether `a` broadcasts against a rank-`rank` result as one value per
// element of `axis` (a vector of `channels` along it, ones elsewhere).
bool per_channel(const runtime::NDArrayNode* a, int64_t rank, int64_t axis, int64_t channels) {
  int64_t r = static_cast<int64_t>(a->shape.size());
  if (r > rank || r < rank - axis) return false;
  for (int64_t i = 0; i < r; ++i) {
    int64_t d = a->shape[i].as_int(), at = rank - r + i;
    if (d != (at == axis ? channels : 1)) return false;
  }
  return true;
}

class Folder {
 public:
  explicit Folder(const ir::Expr& body) : uses_(graph::use_counts(body)) {}

  ir::Expr run(const ir::Expr& body) {
    return rewrite_calls(body, [this](const graph::CallNode& original, const graph::CallNode& call) {
      const auto* op = call.callee.as<ir::OpNode>();
      return op && op->name == "batch_norm" ? fold(original, call) : ir::Expr();
    });
  }

 private:
  // batch_norm(x, gamma, beta, mean, var) with constant statistics is
  // x * s + t per channel, s = gamma / sqrt(var + eps), t = beta - mean * s;
  // after a convolution with a constant weight used only here, s goes into
  // the weight and t into the bias.
  ir::Expr fold(const graph::CallNode& original, const graph::CallNode& bn) {
    const auto* x_type = original.args[0].cast<ir::Expr>()->checked_type.as<ir::TensorTypeNode>();
    if (!x_type || x_type->unknown_rank()) return ir::Expr();
    DataType dtype = x_type->dtype;
    if (dtype != DataType::Float(32) && dtype != DataType::Float(64)) return ir::Expr();
    const runtime::NDArrayNode* p[4];
    for (int i = 0; i < 4; ++i) {
      p[i] = constant_array(bn.args[i + 1].cast<ir::Expr>());
      if (!p[i] || p[i]->dtype != dtype || p[i]->shape.size() != 1) return ir::Expr();
    }
    Map attrs = ir::OpRegistry::check_attrs("batch_norm", bn.attrs);
    int64_t rank = static_cast<int64_t>(x_type->shape.size());
    int64_t axis = attrs.at("axis").as_int();
    if (axis < 0) axis += rank;
    double eps = attrs.at("epsilon").as_float();
    int64_t channels = p[0]->numel();
    std::vector<double> s(channels), t(channels);
    for (int64_t c = 0; c < channels; ++c) {
      s[c] = element(p[0], c) / std::sqrt(element(p[3], c) + eps);
      t[c] = element(p[1], c) - element(p[2], c) * s[c];
    }
    // A per-channel vector shaped to broadcast along `axis`.
    std::vector<int64_t> along(rank - axis, 1);
    along[0] = channels;
    ir::Expr x = bn.args[0].cast<ir::Expr>(), x_original = original.args[0].cast<ir::Expr>();
    if (ir::Expr conv = conv_with_bias(x, x_original, axis, rank, channels); conv.defined()) {
      const auto& c = *conv.as<graph::CallNode>();
      const runtime::NDArrayNode* w = constant_array(c.args[1].cast<ir::Expr>());
      int64_t per_out = w->numel() / channels;
      std::vector<int64_t> w_shape;
      for (const Any& d : w->shape) w_shape.push_back(d.as_int());
      NDArray scaled = make_array(w_shape, dtype, [&](int64_t k) { return element(w, k) * s[k / per_out]; });
      const runtime::NDArrayNode* bias = bias_;
      NDArray shift =
          make_array(along, dtype, [&](int64_t k) { return (bias ? element(bias, k) * s[k] : 0.0) + t[k]; });
      return call_op("add", {graph::Call(c.callee, {c.args[0].cast<ir::Expr>(), graph::Constant(scaled)}, c.attrs),
                             graph::Constant(shift)});
    }
    NDArray scale = make_array(along, dtype, [&](int64_t k) { return s[k]; });
    NDArray shift = make_array(along, dtype, [&](int64_t k) { return t[k]; });
    return call_op("add", {call_op("multiply", {x, graph::Constant(scale)}), graph::Constant(shift)});
  }

  // The conv2d that `x` is (or that `x` adds a constant per-channel bias
  // to, which goes to bias_), when its weight is constant, its output
  // channels are `axis`, and nothing else uses it; else undefined.
  ir::Expr conv_with_bias(const ir::Expr& x, const ir::Expr& x_original, int64_t axis, int64_t rank, int64_t channels) {
    bias_ = nullptr;
    ir::Expr conv = x, conv_original = x_original;
    if (call_of(x, "add") && used_once(x_original)) {
      const auto& add = *x.as<graph::CallNode>();
      const auto& add_original = *x_original.as<graph::CallNode>();
      for (int side = 0; side < 2; ++side) {
        const runtime::NDArrayNode* b = constant_array(add.args[1 - side].cast<ir::Expr>());
        if (b && call_of(add.args[side].cast<ir::Expr>(), "conv2d") && per_channel(b, rank, axis, channels)) {
          bias_ = b;
          conv = add.args[side].cast<ir::Expr>();
          conv_original = add_original.args[side].cast<ir::Expr>();
          break;
        }
      }
    }
    if (!call_of(conv, "conv2d") || !used_once(conv_original)) return ir::Expr();
    const auto& c = *conv.as<graph::CallNode>();
    const runtime::NDArrayNode* w = constant_array(c.args[1].cast<ir::Expr>());
    Map attrs = ir::OpRegistry::check_attrs("conv2d", c.attrs);
    int64_t channel_axis = attrs.at("data_layout").as_string() == "NHWC" ? 3 : 1;
    if (!w || rank != 4 || axis != channel_axis || w->shape.size() == 0 || w->shape[0].as_int() != channels) {
      return ir::Expr();
    }
    if (bias_ && bias_->dtype != w->dtype) return ir::Expr();
    return conv;
  }

  bool used_once(const ir::Expr& e) const {
    auto found = uses_.find(e.get());
    return found != uses_.end() && found->second == 1;
  }

  std::unordered_map<const Object*, int> uses_;
  const runtime::NDArrayNode* bias_ = nullptr;  // the conv's constant bias, found by conv_with_bias
};

}  // namespace

transform::Pass FoldBatchNorm() {
  transform::PassInfo info =
      transform::PassInfo::named("FoldBatchNorm")
          .summary(
              "batch_norm with constant statistics becomes a per-channel scale and shift, folded into the weight and "
              "bias of a convolution with constant weights that it follows")
          .opt_level(1)
          .needs({"types_inferred"})
          .changes({"graph"})
          .preserves({"ops_lowered", "fused"});
  return graph_body_pass(
      info, [](const graph::FunctionNode& f, const transform::PassContext&) { return Folder(f.body).run(f.body); });
}

}  // namespace loom::passes
