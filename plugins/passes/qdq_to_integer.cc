#include "qdq_to_integer.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "graph_util.h"
#include "loom/graph/function.h"
#include "loom/graph/operator.h"
#include "loom/ir/op.h"
#include "loom/object/traversal.h"
#include "loom/runtime/ndarray.h"
#include "loom/target/target.h"
#include "loom/tir/util.h"

namespace loom::passes {

namespace {

Array int_shape(const std::vector<int64_t>& shape) {
  std::vector<Any> out;
  for (int64_t d : shape) out.push_back(Any(d));
  return Array(out);
}

// The static shape and dtype of a typed expression (nullopt: unknown or
// symbolic; with `symbolic`, a symbolic dimension is -1 instead).
struct Static {
  std::vector<int64_t> shape;
  DataType dtype;
};
std::optional<Static> static_type(const ir::Expr& e, bool symbolic = false) {
  const auto* t = e.defined() ? e->checked_type.as<ir::TensorTypeNode>() : nullptr;
  if (!t || t->unknown_rank()) return std::nullopt;
  Static s{{}, t->dtype};
  for (const Any& d : t->shape) {
    auto c = graph::constant_dim(d);
    if (!c && !symbolic) return std::nullopt;
    s.shape.push_back(c ? *c : -1);
  }
  return s;
}

bool all_ones(const std::vector<int64_t>& shape) {
  for (int64_t d : shape)
    if (d != 1) return false;
  return true;
}

// Whether `v` (rank at most `rank`, aligned on the right) has extent 1 on
// every axis of a rank-`rank` tensor but `axis`.
bool ones_but(const std::vector<int64_t>& v, size_t rank, size_t axis) {
  if (v.size() > rank) return false;
  for (size_t i = 0; i < v.size(); ++i)
    if (rank - v.size() + i != axis && v[i] != 1) return false;
  return true;
}

// Whether `v` broadcast against `shape` leaves it as it is.
bool broadcasts_into(const std::vector<int64_t>& v, const std::vector<int64_t>& shape) {
  if (v.size() > shape.size()) return false;
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t d = v[i], s = shape[shape.size() - v.size() + i];
    if (d != 1 && d != s) return false;
  }
  return true;
}

class Rewriter {
 public:
  // `bytes`: the target multiplies uint8 by int8 four at a time
  // (dot4_u8i8) and no partition codegen takes the layers.
  Rewriter(const ir::Expr& body, bool bytes) : bytes_(bytes) {
    graph::for_each_binding(body, [this](const graph::LetNode& let) { bound_[let.var.get()] = let.value; });
    m_.on<graph::CallNode>([this](const graph::CallNode* original, const ObjectRef& self) -> Any {
      ObjectRef mutated = m_.mutate_children(self);
      ir::Expr out;
      if (product_call(downcast<ir::Expr>(self)))
        out = rewrite(*original, *mutated.as<graph::CallNode>());
      else if (call_of(downcast<ir::Expr>(self), "quantize")) {
        out = pooled(*original, *mutated.as<graph::CallNode>());
        if (!out.defined()) out = averaged(*original, *mutated.as<graph::CallNode>());
      }
      return out.defined() ? Any(out) : Any(mutated);
    });
  }

  ir::Expr run(const ir::Expr& body) { return m_.mutate_as<ir::Expr>(body); }

 private:
  // A dequantize call: `typed` the original (checked types), `call` the
  // one whose operands go into the rewritten expression.
  struct Dequantize {
    const graph::CallNode* typed = nullptr;
    const graph::CallNode* call = nullptr;
    ir::Expr operand(size_t i) const { return call->args[i].cast<ir::Expr>(); }
    ir::Expr typed_operand(size_t i) const { return typed->args[i].cast<ir::Expr>(); }
  };

  // The dequantize an operand is: the call itself, or what a variable
  // bound by the function's let chain holds when that is a dequantize of
  // variables and constants (so nothing is computed twice).
  std::optional<Dequantize> dequantize_of(const ir::Expr& original, const ir::Expr& mutated) {
    if (const auto* d = call_of(original, "dequantize")) {
      const auto* m = call_of(mutated, "dequantize");
      if (m) return Dequantize{d, m};
      return std::nullopt;
    }
    if (!original.as<graph::VarNode>()) return std::nullopt;
    auto found = bound_.find(original.get());
    if (found == bound_.end()) return std::nullopt;
    const auto* d = call_of(found->second, "dequantize");
    if (!d) return std::nullopt;
    for (const Any& a : d->args) {
      ir::Expr e = a.cast<ir::Expr>();
      if (!e.as<graph::VarNode>() && !e.as<graph::ConstantNode>()) return std::nullopt;
    }
    return Dequantize{d, d};
  }

  // The value of a typed expression of constants, computed now (the
  // reference interpreter runs each call, as FoldConstant does), or
  // undefined.
  ir::Expr constant_value(const ir::Expr& e, int depth = 0) {
    if (e.as<graph::ConstantNode>()) return e;
    const auto* call = e.as<graph::CallNode>();
    if (!call || depth > 8) return ir::Expr();
    std::vector<ir::Expr> args;
    for (const Any& a : call->args) {
      ir::Expr v = constant_value(a.cast<ir::Expr>(), depth + 1);
      if (!v.defined()) return ir::Expr();
      args.push_back(v);
    }
    return evaluate_call(*call, args);
  }

  bool known_zero(const ir::Expr& e) {
    ir::Expr v = constant_value(e);
    const auto* c = v.defined() ? v.as<graph::ConstantNode>() : nullptr;
    if (!c) return false;
    const runtime::NDArrayNode* a = c->data.get();
    const auto* bytes = static_cast<const uint8_t*>(a->data());
    for (int64_t k = 0, n = a->numel() * ((a->dtype.bits + 7) / 8); k < n; ++k)
      if (bytes[k]) return false;
    return true;
  }

  // The operand minus its zero point, in a dtype that holds the
  // difference exactly (int16 for 8-bit formats, else int32); the operand
  // itself when the zero point is zero, but for an 8-bit `activation`:
  // that is widened to int16 whatever its zero point, so that FuseOps
  // makes the layer that produces it write int16 once, and the integer
  // kernels (PairProducts' pmaddwd) read each pair of activations with
  // one load instead of widening it at every use (quantized ResNet-18
  // 36 -> 31 ms here); the weights, constants, stay 8-bit.
  ir::Expr centred(const Dequantize& d, DataType q, DataType z, bool activation) {
    bool eight_bit = q.bits <= 8 && z.bits <= 8;
    if (known_zero(d.typed_operand(2)) && !(activation && eight_bit)) return d.operand(0);
    DataType wide = eight_bit ? DataType::Int(16) : DataType::Int(32);
    Map to(std::map<std::string, Any>{{"dtype", Any(wide)}});
    return call_op("subtract", {call_op("cast", {d.operand(0)}, to), call_op("cast", {d.operand(2)}, to)});
  }

  // The value of an integer scalar constant (one element of 8 bits),
  // else nullopt.
  std::optional<int64_t> integer_scalar(const ir::Expr& e) {
    ir::Expr v = constant_value(e);
    const auto* c = v.defined() ? v.as<graph::ConstantNode>() : nullptr;
    if (!c || c->data->numel() != 1 || c->data->device.device_type != kDLCPU) return std::nullopt;
    if (c->data->dtype == DataType::UInt(8)) return *static_cast<const uint8_t*>(c->data->data());
    if (c->data->dtype == DataType::Int(8)) return *static_cast<const int8_t*>(c->data->data());
    return std::nullopt;
  }

  // An 8-bit activation as the uint8 operand of a product of bytes: x
  // itself (uint8), or x + 128 (int8: the usual shift), so that x - zx is
  // u - zu with zu = zx, or zx + 128.  Where zu is not 0 a convolution's
  // padding must hold zu (u - zu is then the real zero, as the float
  // convolution pads): an explicit pad with it, the convolution unpadded
  // (`changes`); ConvertLayout carries the pad into the convolutions'
  // layout.  The sum of u * w is then the sum of (x - zx) * w plus zu
  // times the weights' sum, which weight_sums takes off.
  ir::Expr bytes_operand(const Dequantize& d, DataType q, int64_t zu, const std::string& op, const Map& attrs,
                         std::map<std::string, Any>* changes) {
    ir::Expr u = d.operand(0);
    if (q == DataType::Int(8)) {
      Map to16(std::map<std::string, Any>{{"dtype", Any(DataType::Int(16))}});
      Map to8(std::map<std::string, Any>{{"dtype", Any(DataType::UInt(8))}});
      ir::Expr c128 = scalar_constant(DataType::Int(16), int16_t{128});
      u = call_op("cast", {call_op("add", {call_op("cast", {u}, to16), c128})}, to8);
    }
    if (zu == 0 || op != "conv2d") return u;
    std::vector<int64_t> p = graph::padding_of(attrs);
    if (p[0] == 0 && p[1] == 0 && p[2] == 0 && p[3] == 0) return u;
    std::vector<int64_t> widths = attrs.at("data_layout").as_string() == "NHWC"
                                      ? std::vector<int64_t>{0, 0, p[0], p[2], p[1], p[3], 0, 0}
                                      : std::vector<int64_t>{0, 0, 0, 0, p[0], p[2], p[1], p[3]};
    (*changes)["padding"] = Any(int_shape({0}));
    return call_op("pad", {u},
                   Map(std::map<std::string, Any>{{"pad_width", Any(int_shape(widths))},
                                                  {"pad_value", Any(static_cast<double>(zu))}}));
  }

  // zu times the sum of the int8 weights `w` (of `shape`) over what each
  // output sums, in int32, shaped to broadcast over the product's result:
  // a conv2d's (O, 1, 1) or (O) by its data layout, dense's (N),
  // matmul's (..., 1, N).  Computed here for a constant, by operators
  // otherwise.
  ir::Expr weight_sums(const ir::Expr& w, const std::vector<int64_t>& shape, int64_t zu, const std::string& op,
                       const Map& attrs) {
    const size_t rank = shape.size();
    std::vector<int64_t> axes, out_shape;
    if (op == "conv2d") {
      axes = {1, 2, 3};
      out_shape = attrs.at("data_layout").as_string() == "NHWC" ? std::vector<int64_t>{shape[0]}
                                                                : std::vector<int64_t>{shape[0], 1, 1};
    } else if (op == "dense") {
      axes = {static_cast<int64_t>(rank) - 1};
      out_shape = std::vector<int64_t>(shape.begin(), shape.end() - 1);
    } else {
      bool tb = attrs.at("transpose_b").as_bool();
      axes = {static_cast<int64_t>(rank) - (tb ? 1 : 2)};
      out_shape = shape;
      out_shape[rank - 1] = tb ? shape[rank - 2] : shape[rank - 1];
      out_shape[rank - 2] = 1;
    }
    const auto* c = w.as<graph::ConstantNode>();
    if (c && c->data->device.device_type == kDLCPU && c->data->is_contiguous() && c->data->dtype == DataType::Int(8) &&
        c->data.shape_vector() == shape) {
      // Every output's index is that of its weights' unreduced axes, in
      // order.
      runtime::NDArray out = runtime::NDArray::empty(out_shape, DataType::Int(32));
      auto* sums = out.data_as<int32_t>();
      std::fill(sums, sums + out->numel(), 0);
      std::vector<bool> reduced(rank, false);
      for (int64_t a : axes) reduced[a] = true;
      const auto* v = static_cast<const int8_t*>(c->data->data());
      std::vector<int64_t> index(rank, 0);
      for (int64_t k = 0, n = c->data->numel(); k < n; ++k) {
        int64_t at = 0;
        for (size_t a = 0; a < rank; ++a)
          if (!reduced[a]) at = at * shape[a] + index[a];
        sums[at] += v[k];
        for (size_t a = rank; a-- > 0;) {
          if (++index[a] < shape[a]) break;
          index[a] = 0;
        }
      }
      for (int64_t k = 0; k < out->numel(); ++k) sums[k] *= static_cast<int32_t>(zu);
      return graph::Constant(out);
    }
    Map to32(std::map<std::string, Any>{{"dtype", Any(DataType::Int(32))}});
    ir::Expr z = scalar_constant(DataType::Int(32), static_cast<int32_t>(zu));
    ir::Expr sum = call_op("sum", {call_op("cast", {w}, to32)},
                           Map(std::map<std::string, Any>{{"axis", Any(int_shape(axes))}, {"keepdims", Any(false)}}));
    return call_op("reshape", {call_op("multiply", {sum, z})},
                   Map(std::map<std::string, Any>{{"shape", Any(int_shape(out_shape))}}));
  }

  ir::Expr rewrite(const graph::CallNode& original, const graph::CallNode& mutated) {
    if (original.args.size() != 2) return ir::Expr();
    const auto* op = original.callee.as<ir::OpNode>();
    Map attrs = ir::OpRegistry::check_attrs(op->name, mutated.attrs);
    if (!attrs.at("out_dtype").as_string().empty()) return ir::Expr();
    auto x = dequantize_of(original.args[0].cast<ir::Expr>(), mutated.args[0].cast<ir::Expr>());
    auto w = dequantize_of(original.args[1].cast<ir::Expr>(), mutated.args[1].cast<ir::Expr>());
    if (!x || !w) return ir::Expr();
    // The weight's shape is static; x's zero point and both scales too.
    const auto* xt = x->typed_operand(0)->checked_type.as<ir::TensorTypeNode>();
    auto wq = static_type(w->typed_operand(0));
    auto xs = static_type(x->typed_operand(1)), ws = static_type(w->typed_operand(1));
    auto xz = static_type(x->typed_operand(2)), wz = static_type(w->typed_operand(2));
    if (!xt || xt->unknown_rank() || !wq || !xs || !ws || !xz || !wz || xs->dtype != ws->dtype) return ir::Expr();
    // The activation's scale and zero point must be one value; the
    // weight's scale one per output channel (its axis in the weight, and
    // the shape that puts it on the result's channel axis), its zero point
    // anything that keeps the weight's shape.
    if (!all_ones(xs->shape) || !all_ones(xz->shape) || xz->shape.size() > xt->shape.size()) return ir::Expr();
    if (!broadcasts_into(wz->shape, wq->shape)) return ir::Expr();
    size_t w_axis = 0;
    std::vector<int64_t> out_scale_shape = {-1};
    if (op->name == "conv2d") {
      std::string dl = attrs.at("data_layout").as_string(), kl = attrs.at("kernel_layout").as_string();
      if ((dl != "NCHW" && dl != "NHWC") || (kl != "OIHW" && kl != "OHWI")) return ir::Expr();
      if (dl == "NCHW") out_scale_shape = {-1, 1, 1};
    } else if (op->name == "matmul") {
      if (wq->shape.size() < 2) return ir::Expr();
      w_axis = attrs.at("transpose_b").as_bool() ? wq->shape.size() - 2 : wq->shape.size() - 1;
    }
    bool per_channel = !all_ones(ws->shape);
    if (per_channel && !ones_but(ws->shape, wq->shape.size(), w_axis)) return ir::Expr();
    // Zero points are subtracted from the integers: exact, and a padded
    // element is then the real zero, as the float convolution pads.  But
    // where the target multiplies uint8 by int8 four at a time (vpdpbusd)
    // an 8-bit activation by int8 weights of zero point 0 (symmetric
    // weights: what quantizers make) stays bytes: widened to int16 it
    // would take pairs, at half the rate (a 3 x 3 convolution over 64
    // channels, 56 x 56: 0.44 ms where int16 took 0.80).  See bytes_operand.
    std::optional<int64_t> z;
    if (bytes_ && (xt->dtype == DataType::UInt(8) || xt->dtype == DataType::Int(8)) && wq->dtype == DataType::Int(8) &&
        known_zero(w->typed_operand(2)) && !(op->name == "dense" && wq->shape.size() != 2))
      z = integer_scalar(x->typed_operand(2));
    const bool bytes = z.has_value();
    const int64_t zu = bytes ? *z + (xt->dtype == DataType::Int(8) ? 128 : 0) : 0;
    std::map<std::string, Any> changes{{"out_dtype", Any(std::string("int32"))}};
    ir::Expr xi = bytes ? bytes_operand(*x, xt->dtype, zu, op->name, attrs, &changes)
                        : centred(*x, xt->dtype, xz->dtype, true),
             wi = bytes ? w->operand(0) : centred(*w, wq->dtype, wz->dtype, false);
    ir::Expr acc = graph::Call(mutated.callee, {xi, wi}, with_attrs(mutated.attrs, changes));
    if (zu != 0) acc = call_op("subtract", {acc, weight_sums(w->operand(0), wq->shape, zu, op->name, attrs)});
    // The scales leave the sum: (sx * sw[o]) * sum (x - zx)(w - zw).
    ir::Expr sx = call_op("reshape", {x->operand(1)}, Map(std::map<std::string, Any>{{"shape", Any(int_shape({1}))}}));
    ir::Expr sw = call_op("reshape", {w->operand(1)},
                          Map(std::map<std::string, Any>{
                              {"shape", Any(int_shape(per_channel ? out_scale_shape : std::vector<int64_t>{1}))}}));
    Map to_float(std::map<std::string, Any>{{"dtype", Any(xs->dtype)}});
    return call_op("multiply", {call_op("cast", {acc}, to_float), call_op("multiply", {sx, sw})});
  }

  // Whether two typed expressions are constants of one dtype, shape and
  // value.
  bool same_constant(const ir::Expr& a, const ir::Expr& b) {
    ir::Expr va = constant_value(a), vb = constant_value(b);
    const auto* ca = va.defined() ? va.as<graph::ConstantNode>() : nullptr;
    const auto* cb = vb.defined() ? vb.as<graph::ConstantNode>() : nullptr;
    if (!ca || !cb) return false;
    const runtime::NDArrayNode *x = ca->data.get(), *y = cb->data.get();
    if (x->dtype != y->dtype || ca->data.shape_vector() != cb->data.shape_vector()) return false;
    size_t n = static_cast<size_t>(x->numel()) * ((x->dtype.bits + 7) / 8);
    return std::memcmp(x->data(), y->data(), n) == 0;
  }

  // Whether a typed expression is a float32 constant whose every value
  // is a normal number above 0 and below 2^100: then (x - z) * s / s
  // rounds back to x - z for any 16-bit x - z (no product is subnormal or
  // infinite, and each rounding is relative).
  bool normal_positive_float32(const ir::Expr& e) {
    ir::Expr v = constant_value(e);
    const auto* c = v.defined() ? v.as<graph::ConstantNode>() : nullptr;
    if (!c || c->data->dtype != DataType::Float(32)) return false;
    const auto* values = static_cast<const float*>(c->data->data());
    for (int64_t k = 0; k < c->data->numel(); ++k)
      if (!(values[k] >= std::numeric_limits<float>::min() && values[k] < 0x1p100f)) return false;
    return true;
  }

  // quantize(max_pool2d(dequantize(x, s, z)), s, z), the same scale and
  // zero point (constants; every scale a normal number above 0): max_pool2d(x) on the
  // integers.  dequantize is increasing, so the window's maximum is the
  // dequantized maximum of the integers, and quantize gives that integer
  // back exactly (round((x - z) * s / s) is x - z); a padded element is
  // the dtype's least value, which no element's maximum goes below, as
  // -inf in float.
  ir::Expr pooled(const graph::CallNode& original, const graph::CallNode& mutated) {
    ir::Expr inner = original.args[0].cast<ir::Expr>(), inner_mutated = mutated.args[0].cast<ir::Expr>();
    const auto* pool = call_of(inner, "max_pool2d");
    const auto* pool_mutated = call_of(inner_mutated, "max_pool2d");
    if (!pool || !pool_mutated) return ir::Expr();
    auto d = dequantize_of(pool->args[0].cast<ir::Expr>(), pool_mutated->args[0].cast<ir::Expr>());
    if (!d) return ir::Expr();
    auto q = static_type(d->typed_operand(0), true);  // its dtype; any shape
    auto z = static_type(original.args[2].cast<ir::Expr>());
    if (!q || !z || q->dtype != z->dtype || !tir::is_int(q->dtype) || q->dtype.bits > 16) return ir::Expr();
    if (!same_constant(d->typed_operand(1), original.args[1].cast<ir::Expr>()) ||
        !same_constant(d->typed_operand(2), original.args[2].cast<ir::Expr>()) ||
        !normal_positive_float32(original.args[1].cast<ir::Expr>()))
      return ir::Expr();
    return graph::Call(pool_mutated->callee, {d->operand(0)}, pool_mutated->attrs);
  }

  // quantize(mean(dequantize(x, sx, zx)), sy, zy), the mean over whole
  // axes (global_avg_pool2d, or mean: a squeeze-and-excitation block's and
  // a network's last pooling in a QDQ graph) with one scale and zero point
  // each: the exact int32 sum S of x - zx, requantized once,
  // quantize(float(S) * (sx / (sy * n)), 1, zy), as ONNX Runtime's
  // QLinearGlobalAveragePool does.  The float mean of the dequantized
  // values rounds at every addition, so which side of a rounding tie it
  // lands on (sy = sx and n = 4: every other sum is a tie) depended on the
  // order of the sum: a quantized MobileNetV3-Large, 64 x 64, strayed 12
  // steps from its integer reference through its squeeze-and-excitation
  // blocks.  Here a tie is a tie, rounded to even.  Refused (left in
  // float): more than 16-bit integers, or sums float32 cannot hold exactly
  // (n * 2^bits >= 2^24).
  ir::Expr averaged(const graph::CallNode& original, const graph::CallNode& mutated) {
    ir::Expr inner = original.args[0].cast<ir::Expr>(), inner_mutated = mutated.args[0].cast<ir::Expr>();
    const bool pool = !call_of(inner, "mean");
    const char* name = pool ? "global_avg_pool2d" : "mean";
    const auto* reduce = call_of(inner, name);
    const auto* reduce_mutated = call_of(inner_mutated, name);
    if (!reduce || !reduce_mutated) return ir::Expr();
    auto d = dequantize_of(reduce->args[0].cast<ir::Expr>(), reduce_mutated->args[0].cast<ir::Expr>());
    if (!d) return ir::Expr();
    auto q = static_type(d->typed_operand(0), true);  // a symbolic batch is fine: n counts the summed axes
    auto xs = static_type(d->typed_operand(1)), xz = static_type(d->typed_operand(2));
    auto ys = static_type(original.args[1].cast<ir::Expr>()), yz = static_type(original.args[2].cast<ir::Expr>());
    if (!q || !tir::is_int(q->dtype) || q->dtype.bits > 16 || !xs || !xz || !ys || !yz) return ir::Expr();
    if (xs->dtype != DataType::Float(32) || ys->dtype != DataType::Float(32)) return ir::Expr();
    for (const auto* v : {&*xs, &*xz, &*ys, &*yz})
      if (!all_ones(v->shape) || v->shape.size() > q->shape.size()) return ir::Expr();
    // The axes summed, and whether they stay.
    const int64_t rank = static_cast<int64_t>(q->shape.size());
    std::vector<int64_t> axes;
    bool keep = true;
    Map attrs = ir::OpRegistry::check_attrs(name, reduce_mutated->attrs);
    if (pool) {
      std::string layout = attrs.at("layout").as_string();
      if (static_cast<int64_t>(layout.size()) != rank) return ir::Expr();  // a blocked layout's "16c"
      for (char c : {'H', 'W'}) {
        size_t at = layout.find(c);
        if (at == std::string::npos) return ir::Expr();
        axes.push_back(static_cast<int64_t>(at));
      }
    } else {
      keep = attrs.at("keepdims").as_bool();
      for (const Any& a : attrs.at("axis").cast<Array>()) {
        int64_t axis = a.as_int();
        axes.push_back(axis < 0 ? axis + rank : axis);
      }
      if (axes.empty())
        for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
    }
    int64_t n = 1;
    for (int64_t axis : axes) {
      if (axis < 0 || axis >= rank || q->shape[axis] < 0) return ir::Expr();
      n *= q->shape[axis];
    }
    if (n <= 0 || n >= (int64_t{1} << (24 - q->dtype.bits))) return ir::Expr();
    Map to_int(std::map<std::string, Any>{{"dtype", Any(DataType::Int(32))}});
    Map to_float(std::map<std::string, Any>{{"dtype", Any(DataType::Float(32))}});
    ir::Expr centred =
        call_op("subtract", {call_op("cast", {d->operand(0)}, to_int), call_op("cast", {d->operand(2)}, to_int)});
    std::vector<Any> axis_list(axes.begin(), axes.end());
    ir::Expr sum = call_op("sum", {centred},
                           Map(std::map<std::string, Any>{{"axis", Any(Array(axis_list))}, {"keepdims", Any(keep)}}));
    ir::Expr multiplier = call_op(
        "divide", {d->operand(1), call_op("multiply", {mutated.args[1].cast<ir::Expr>(),
                                                       scalar_constant(DataType::Float(32), static_cast<float>(n))})});
    return graph::Call(mutated.callee,
                       {call_op("multiply", {call_op("cast", {sum}, to_float), multiplier}),
                        scalar_constant(DataType::Float(32), 1.0f), mutated.args[2].cast<ir::Expr>()},
                       mutated.attrs);
  }

  std::unordered_map<const Object*, ir::Expr> bound_;
  bool bytes_ = false;
  Mutator m_;
};

}  // namespace

transform::Pass QDQToInteger() {
  transform::PassInfo info =
      transform::PassInfo::named("QDQToInteger")
          .summary(
              "conv2d, matmul and dense over dequantized integer operands become the integer operator with int32 "
              "accumulation times the product of the scales (a quantized model runs integer kernels); a max pooling "
              "between a dequantize and a quantize of one scale and zero point pools the integers; a mean over whole "
              "axes between a dequantize and a quantize sums the integers and requantizes once")
          .opt_level(1)
          .needs({"types_inferred"})
          .changes({"graph"})
          .preserves({"ops_lowered", "fused"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext&) {
    bool partitioned = !target::partition_codegens(module).empty();
    return rewrite_graph_bodies(module, [&](const std::string& name, const graph::FunctionNode& f) {
      bool bytes = !partitioned && target::native_intrinsics(target::function_target(module, name)).count("dot4_u8i8");
      return Rewriter(f.body, bytes).run(f.body);
    });
  });
}

}  // namespace loom::passes
