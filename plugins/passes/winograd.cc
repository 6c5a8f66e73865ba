#include "winograd.h"

#include "graph_util.h"
#include "loom/graph/function.h"
#include "loom/graph/operator.h"
#include "loom/ir/op.h"
#include "loom/object/traversal.h"
#include "loom/runtime/ndarray.h"

namespace loom::passes {

namespace {

// G of F(2x2, 3x3): the weights' transform, U = G g G^T (4x4 per channel pair).
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

// Whether every entry of conv2d's `key` (strides or dilation: 1 or 2 entries) is 1.
bool all_ones(const Map& attrs, const char* key) {
  for (const Any& a : attrs.at(key).cast<Array>())
    if (a.as_int() != 1) return false;
  return true;
}

class Rewriter {
 public:
  explicit Rewriter(int64_t min_channels) : min_channels_(min_channels) {
    m_.on<graph::CallNode>([this](const graph::CallNode* original, const ObjectRef& self) -> Any {
      ObjectRef mutated = m_.mutate_children(self);
      ir::Expr rewritten = rewrite(*original, *mutated.as<graph::CallNode>());
      return rewritten.defined() ? Any(rewritten) : Any(mutated);
    });
  }

  ir::Expr run(const ir::Expr& body) { return m_.mutate_as<ir::Expr>(body); }

 private:
  // conv2d(x NHWC, w OHWI constant float32 K 3 3 C, stride 1, dilation 1,
  // one group), x of static shape, both C and K at least min_channels.
  ir::Expr rewrite(const graph::CallNode& original, const graph::CallNode& conv) {
    const auto* op = conv.callee.as<ir::OpNode>();
    if (!op || op->name != "conv2d") return ir::Expr();
    const auto* type = original.checked_type.defined() ? original.checked_type.as<ir::TensorTypeNode>() : nullptr;
    const auto* w = conv.args[1].cast<ir::Expr>().as<graph::ConstantNode>();
    if (!type || !w || type->dtype != DataType::Float(32) || w->data->dtype != DataType::Float(32) ||
        w->data->device.device_type != kDLCPU || !w->data->is_contiguous()) {
      return ir::Expr();
    }
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
    // U[i][j][c][k] = sum over a, b of G[i][a] g[k][a][b][c] G[j][b], in double.
    runtime::NDArray u = runtime::NDArray::empty({4, 4, c, k}, DataType::Float(32));
    const float* src = static_cast<const float*>(g->data());
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
    ir::Expr tiles = graph::Call(ir::Op::get("winograd_input"), {conv.args[0].cast<ir::Expr>()},
                                 Map({{"padding", attrs.at("padding")}}));  // 1, 2 or 4 entries, as conv2d's
    ir::Expr products = graph::Call(ir::Op::get("matmul"), {tiles, graph::Constant(u)});
    return graph::Call(ir::Op::get("winograd_output"), {products},
                       Map({{"height", Any(out[1])}, {"width", Any(out[2])}}));
  }

  int64_t min_channels_;
  Mutator m_;
};

}  // namespace

transform::Pass Winograd() {
  transform::PassInfo info =
      transform::PassInfo::named("Winograd")
          .summary(
              "stride-1 3x3 convolutions channels-last with constant float32 weights become Winograd's F(2x2, 3x3): "
              "an input transform, a batched matmul with weights transformed at compile time, an output transform")
          .opt_level(2)
          .options({SchemaField{"min_channels", "int", Any(int64_t{16}),
                                "the fewest input and output channels a convolution needs to be rewritten"}
                        .at_least(1)})
          .needs({"types_inferred"})
          .changes({"graph"})
          .preserves({"ops_lowered", "fused"});
  return graph_body_pass(info, [](const graph::FunctionNode& f, const transform::PassContext& context) {
    if (f.attrs.contains("primitive") || f.attrs.contains("codegen")) return f.body;
    return Rewriter(context.get_config("Winograd.min_channels").as_int()).run(f.body);
  });
}

}  // namespace loom::passes
