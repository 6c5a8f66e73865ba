#include "winograd.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <unordered_map>

#include "graph_util.h"
#include "loom/graph/function.h"
#include "loom/graph/operator.h"
#include "loom/ir/op.h"
#include "loom/object/traversal.h"
#include "loom/runtime/ndarray.h"
#include "loom/target/target.h"

namespace loom::passes {

namespace {

// G of F(2x2, 3x3): the weights' transform, U = G g G^T (4x4 per channel pair).
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
// 2G, for integers: U' = (2G) g (2G)^T = 4U, whole numbers.
constexpr int64_t kG2[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};

// The closed range of an integer value.
struct Range {
  int64_t lo, hi;
  int64_t magnitude() const { return std::max(std::abs(lo), std::abs(hi)); }
};

// Every value of the integer dtype `t` (at most 32 bits), or nullopt.
std::optional<Range> dtype_range(DataType t) {
  if (t.lanes != 1 || t.bits > 32 || (t.code != DataType::kInt && t.code != DataType::kUInt)) return std::nullopt;
  if (t.code == DataType::kUInt) return Range{0, (int64_t{1} << t.bits) - 1};
  return Range{-(int64_t{1} << (t.bits - 1)), (int64_t{1} << (t.bits - 1)) - 1};
}

// The elements of an integer array of at most 32 bits, or nullopt.
std::optional<std::vector<int64_t>> integer_values(const runtime::NDArrayNode& a) {
  if (!dtype_range(a.dtype) || a.device.device_type != kDLCPU || !a.is_contiguous()) return std::nullopt;
  int64_t n = 1;
  for (const Any& d : a.shape) n *= d.as_int();
  std::vector<int64_t> out(static_cast<size_t>(n));
  bool is_signed = a.dtype.code == DataType::kInt;
  for (int64_t i = 0; i < n; ++i) {
    switch (a.dtype.bits) {
      case 8:
        out[i] = is_signed ? static_cast<const int8_t*>(a.data())[i] : static_cast<const uint8_t*>(a.data())[i];
        break;
      case 16:
        out[i] = is_signed ? static_cast<const int16_t*>(a.data())[i] : static_cast<const uint16_t*>(a.data())[i];
        break;
      case 32:
        out[i] = is_signed ? static_cast<const int32_t*>(a.data())[i] : static_cast<const uint32_t*>(a.data())[i];
        break;
      default:
        return std::nullopt;
    }
  }
  return out;
}

// Whether every entry of conv2d's `key` (strides or dilation: 1 or 2 entries) is 1.
bool all_ones(const Map& attrs, const char* key) {
  for (const Any& a : attrs.at(key).cast<Array>())
    if (a.as_int() != 1) return false;
  return true;
}

class Rewriter {
 public:
  // `bytes`: the target multiplies uint8 by int8 four at a time (dot4_u8i8).
  Rewriter(int64_t min_channels, int64_t strip_bytes, bool bytes, const ir::Expr& body)
      : min_channels_(min_channels), strip_bytes_(strip_bytes), bytes_(bytes) {
    graph::for_each_binding(body, [this](const graph::LetNode& let) { bound_[let.var.get()] = let.value; });
  }

  ir::Expr run(const ir::Expr& body) {
    return rewrite_calls(
        body, [this](const graph::CallNode& original, const graph::CallNode& conv) { return rewrite(original, conv); });
  }

 private:
  // conv2d(x NHWC, w OHWI constant K 3 3 C, stride 1, dilation 1, one
  // group), x of static shape, both C and K at least min_channels: float32
  // throughout, or integers summed in int32 (integer_weights).
  ir::Expr rewrite(const graph::CallNode& original, const graph::CallNode& conv) {
    const auto* op = conv.callee.as<ir::OpNode>();
    if (!op || op->name != "conv2d") return ir::Expr();
    const auto* type = original.checked_type.defined() ? original.checked_type.as<ir::TensorTypeNode>() : nullptr;
    const auto* w = conv.args[1].cast<ir::Expr>().as<graph::ConstantNode>();
    if (!type || !w || w->data->device.device_type != kDLCPU || !w->data->is_contiguous()) return ir::Expr();
    Map attrs = ir::OpRegistry::check_attrs("conv2d", conv.attrs);
    if (attrs.at("data_layout").as_string() != "NHWC" || attrs.at("kernel_layout").as_string() != "OHWI" ||
        attrs.at("groups").as_int() != 1 || !all_ones(attrs, "strides") || !all_ones(attrs, "dilation")) {
      return ir::Expr();
    }
    std::vector<int64_t> out;
    for (const Any& d : type->shape) {
      auto c = graph::constant_dim(d);
      if (!c) return ir::Expr();
      out.push_back(*c);
    }
    const runtime::NDArrayNode* g = w->data.get();
    if (g->shape.size() != 4 || g->shape[1].as_int() != 3 || g->shape[2].as_int() != 3) return ir::Expr();
    int64_t k = g->shape[0].as_int(), c = g->shape[3].as_int();
    if (k < min_channels_ || c < min_channels_) return ir::Expr();
    ir::Expr x = conv.args[0].cast<ir::Expr>();
    ir::Expr u;
    Map matmul_attrs;
    if (type->dtype == DataType::Float(32) && g->dtype == DataType::Float(32)) {
      u = graph::Constant(transformed(*g, k, c));
    } else if (type->dtype == DataType::Int(32)) {
      // uint8 by int8 where the target multiplies bytes four at a time
      // (vpdpbusd) stays direct: its transformed tiles would be int16,
      // which take pairs (a 3 x 3 convolution over 64 channels, 56 x 56:
      // 0.44 ms direct, 0.58 ms as Winograd's in a quantized ResNet-18).
      const auto* xt = original.args[0].cast<ir::Expr>()->checked_type.as<ir::TensorTypeNode>();
      if (bytes_ && xt && xt->dtype == DataType::UInt(8) && g->dtype == DataType::Int(8)) return ir::Expr();
      auto integer = integer_weights(original.args[0].cast<ir::Expr>(), *g, k, c);
      if (!integer) return ir::Expr();
      u = graph::Constant(*integer);
      matmul_attrs = Map({{"out_dtype", Any(std::string("int32"))}});
      // x widened to int16 where it is narrower: the tiles' sums need the room.
      if (xt->dtype != DataType::Int(16)) x = call_op("cast", {x}, Map({{"dtype", Any(DataType::Int(16))}}));
    } else {
      return ir::Expr();
    }
    // Strips of tile rows, each transformed, multiplied and transformed
    // back on its own, where the whole map's tiles and products would
    // outgrow strip_bytes (they leave the cache between the kernels).
    // Tiles of float32 or int16, products of float32 or int32: the bytes of one row of tiles.
    int64_t th = (out[1] + 1) / 2, tw = (out[2] + 1) / 2;
    int64_t tile_bytes = 16 * out[0] * tw * (c * (type->dtype.code == DataType::kInt ? 2 : 4) + k * 4);
    int64_t strips = strip_bytes_ > 0 ? std::min(th, (th * tile_bytes + strip_bytes_ - 1) / strip_bytes_) : 1;
    int64_t rows = (th + strips - 1) / strips;
    std::vector<ir::Expr> pieces;
    for (int64_t begin = 0; begin < th; begin += rows) {
      int64_t end = std::min(th, begin + rows);
      Map input_attrs({{"padding", attrs.at("padding")}});  // 1, 2 or 4 entries, as conv2d's
      if (rows < th) input_attrs = with_attrs(input_attrs, {{"tile_rows", Any(Array({Any(begin), Any(end)}))}});
      ir::Expr tiles = graph::Call(ir::Op::get("winograd_input"), {x}, input_attrs);
      ir::Expr products = matmul_attrs.size() == 0 ? graph::Call(ir::Op::get("matmul"), {tiles, u})
                                                   : graph::Call(ir::Op::get("matmul"), {tiles, u}, matmul_attrs);
      int64_t height = std::min(out[1], 2 * end) - 2 * begin;
      pieces.push_back(graph::Call(ir::Op::get("winograd_output"), {products},
                                   Map({{"height", Any(height)}, {"width", Any(out[2])}})));
    }
    ir::Expr result = pieces.size() == 1 ? pieces[0] : call_op("concat", pieces, Map({{"axis", Any(int64_t{1})}}));
    if (type->dtype.code != DataType::kInt) return result;
    // The integer transform is 4x the convolution: a shift by 2 is exact.
    runtime::NDArray two = runtime::NDArray::empty({}, DataType::Int(32));
    *two.data_as<int32_t>() = 2;
    return call_op("right_shift", {result, graph::Constant(two)});
  }

  // U[i][j][c][k] = sum over a, b of G[i][a] g[k][a][b][c] G[j][b], in
  // double, stored as float32.
  static runtime::NDArray transformed(const runtime::NDArrayNode& g, int64_t k, int64_t c) {
    runtime::NDArray u = runtime::NDArray::empty({4, 4, c, k}, DataType::Float(32));
    const float* src = static_cast<const float*>(g.data());
    float* dst = u.data_as<float>();
    for (int64_t ko = 0; ko < k; ++ko) {
      for (int64_t ci = 0; ci < c; ++ci) {
        double tap[3][3], half[4][3];  // g of this pair; G g
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b) tap[a][b] = src[((ko * 3 + a) * 3 + b) * c + ci];
        for (int i = 0; i < 4; ++i)
          for (int b = 0; b < 3; ++b) half[i][b] = kG[i][0] * tap[0][b] + kG[i][1] * tap[1][b] + kG[i][2] * tap[2][b];
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j)
            dst[((i * 4 + j) * c + ci) * k + ko] =
                static_cast<float>(half[i][0] * kG[j][0] + half[i][1] * kG[j][1] + half[i][2] * kG[j][2]);
      }
    }
    return u;
  }

  // For an integer convolution summed in int32: U' = (2G) g (2G)^T as
  // int16, when every step stays exact -- the input transform's sums of
  // four values of x fit int16 (|x| <= 8191 by what x is made of,
  // value_range), every entry of U' fits int16, and 4 times the largest
  // output the convolution can give (|x| times its filter's sum of
  // magnitudes) fits int32.  The products and the output transform may
  // wrap on the way (integers wrap, docs/ir.md); their result, 4y, does
  // not, so it is 4y exactly and y = 4y >> 2.  Nullopt otherwise.
  std::optional<runtime::NDArray> integer_weights(const ir::Expr& x, const runtime::NDArrayNode& g, int64_t k,
                                                  int64_t c) {
    auto xr = value_range(x, 0);
    auto taps = integer_values(g);
    if (!xr || !taps || g.dtype.bits > 16 || xr->magnitude() * 4 > 32767) return std::nullopt;
    runtime::NDArray u = runtime::NDArray::empty({4, 4, c, k}, DataType::Int(16));
    int16_t* dst = u.data_as<int16_t>();
    for (int64_t ko = 0; ko < k; ++ko) {
      int64_t magnitudes = 0;
      for (int64_t ci = 0; ci < c; ++ci) {
        int64_t tap[3][3], half[4][3];
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b) {
            tap[a][b] = (*taps)[((ko * 3 + a) * 3 + b) * c + ci];
            magnitudes += std::abs(tap[a][b]);
          }
        for (int i = 0; i < 4; ++i)
          for (int b = 0; b < 3; ++b)
            half[i][b] = kG2[i][0] * tap[0][b] + kG2[i][1] * tap[1][b] + kG2[i][2] * tap[2][b];
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) {
            int64_t v = half[i][0] * kG2[j][0] + half[i][1] * kG2[j][1] + half[i][2] * kG2[j][2];
            if (v < -32768 || v > 32767) return std::nullopt;
            dst[((i * 4 + j) * c + ci) * k + ko] = static_cast<int16_t>(v);
          }
      }
      if (4 * magnitudes * xr->magnitude() > int64_t{0x7FFFFFFF}) return std::nullopt;
    }
    return u;
  }

  // The values an integer expression can take: a constant's, a cast's
  // (when they fit its dtype), a sum's or difference's, a transpose's or
  // reshape's (their operand's), a variable's bound value's; else every
  // value of its dtype.  Nullopt for what is not an integer of at most 32
  // bits.
  std::optional<Range> value_range(const ir::Expr& e, int depth) {
    const auto* t = e.defined() && e->checked_type.defined() ? e->checked_type.as<ir::TensorTypeNode>() : nullptr;
    auto full = t ? dtype_range(t->dtype) : std::nullopt;
    if (!full || depth > 16) return full;
    auto within = [&](std::optional<Range> r) { return r && r->lo >= full->lo && r->hi <= full->hi ? r : full; };
    if (const auto* cst = e.as<graph::ConstantNode>()) {
      auto values = integer_values(*cst->data.get());
      if (!values || values->empty()) return full;
      auto [lo, hi] = std::minmax_element(values->begin(), values->end());
      return Range{*lo, *hi};
    }
    if (e.as<graph::VarNode>()) {
      auto found = bound_.find(e.get());
      return found == bound_.end() ? full : within(value_range(found->second, depth + 1));
    }
    if (const auto* cast = call_of(e, "cast")) return within(value_range(cast->args[0].cast<ir::Expr>(), depth + 1));
    // Operators that move values without changing them (ConvertLayout's transposes among them).
    for (const char* name : {"transpose", "reshape", "squeeze", "expand_dims", "flatten", "slice", "broadcast_to"})
      if (const auto* move = call_of(e, name)) return within(value_range(move->args[0].cast<ir::Expr>(), depth + 1));
    const auto* add = call_of(e, "add");
    const auto* sub = call_of(e, "subtract");
    if (add || sub) {
      const graph::CallNode* call = add ? add : sub;
      auto a = value_range(call->args[0].cast<ir::Expr>(), depth + 1);
      auto b = value_range(call->args[1].cast<ir::Expr>(), depth + 1);
      if (!a || !b) return full;
      return within(add ? Range{a->lo + b->lo, a->hi + b->hi} : Range{a->lo - b->hi, a->hi - b->lo});
    }
    return full;
  }

  int64_t min_channels_;
  int64_t strip_bytes_;  // the most bytes of tiles and products one strip of tile rows holds (0: no strips)
  bool bytes_ = false;
  std::unordered_map<const Object*, ir::Expr> bound_;  // the function's let-bound variables' values
};

}  // namespace

transform::Pass Winograd() {
  transform::PassInfo info =
      transform::PassInfo::named("Winograd")
          .summary(
              "stride-1 3x3 convolutions channels-last with constant weights (float32, or integers summed in int32 "
              "where the ranges keep it exact) become Winograd's F(2x2, 3x3): an input transform, a batched matmul "
              "with weights transformed at compile time, an output transform")
          .opt_level(2)
          .options({SchemaField{"min_channels", "int", Any(int64_t{16}),
                                "the fewest input and output channels a convolution needs to be rewritten"}
                        .at_least(1),
                    SchemaField{"strip_bytes", "int", Any(int64_t{2} << 20),
                                "the most bytes of transformed tiles and their products one strip of tile rows "
                                "holds: a larger map runs as strips, each transformed, multiplied and transformed "
                                "back on its own (0: the whole map at once)"}
                        .at_least(0)})
          .needs({"types_inferred"})
          .changes({"graph"})
          .preserves({"ops_lowered", "fused"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext& context) {
    return rewrite_graph_bodies(module, [&](const std::string& name, const graph::FunctionNode& f) {
      bool bytes = target::native_intrinsics(target::function_target(module, name)).count("dot4_u8i8");
      return Rewriter(context.get_config("Winograd.min_channels").as_int(),
                      context.get_config("Winograd.strip_bytes").as_int(), bytes, f.body)
          .run(f.body);
    });
  });
}

}  // namespace loom::passes
