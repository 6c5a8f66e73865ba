#include "even_channels.h"

#include <cstring>

#include "graph_util.h"
#include "loom/graph/function.h"
#include "loom/graph/operator.h"
#include "loom/ir/op.h"
#include "loom/object/traversal.h"
#include "loom/runtime/ndarray.h"
#include "loom/target/target.h"
#include "loom/tir/intrinsic.h"

namespace loom::passes {

namespace {

// The position of `axis` in a layout of the four letters of `letters`
// ("NCHW" for data, "OIHW" for weights), or -1 when `layout` is not one.
int axis_of(const std::string& layout, const std::string& letters, char axis) {
  if (layout.size() != 4) return -1;
  for (char c : letters)
    if (layout.find(c) == std::string::npos) return -1;
  return static_cast<int>(layout.find(axis));
}

// `a` with one slice of zeros appended along `axis`.
runtime::NDArray padded(const runtime::NDArrayNode& a, int axis) {
  std::vector<int64_t> shape;
  for (const Any& d : a.shape) shape.push_back(d.as_int());
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; ++k) outer *= shape[k];
  for (size_t k = axis + 1; k < shape.size(); ++k) inner *= shape[k];
  size_t element = a.dtype.bits / 8, from = shape[axis] * inner * element, to = (shape[axis] + 1) * inner * element;
  shape[axis] += 1;
  runtime::NDArray out = runtime::NDArray::zeros(shape, a.dtype);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out.data_as<char>() + o * to, static_cast<const char*>(a.data()) + o * from, from);
  return out;
}

// conv2d(x, w) with an odd channel count, as the file's comment says:
// conv2d(pad(x), w padded), or undefined.
ir::Expr even(const graph::CallNode& original, const graph::CallNode& conv) {
  const auto* op = conv.callee.as<ir::OpNode>();
  if (!op || op->name != "conv2d") return ir::Expr();
  const auto* type = original.checked_type.defined() ? original.checked_type.as<ir::TensorTypeNode>() : nullptr;
  ir::Expr x = original.args[0].cast<ir::Expr>();
  const auto* xt = x->checked_type.defined() ? x->checked_type.as<ir::TensorTypeNode>() : nullptr;
  const auto* w = conv.args[1].cast<ir::Expr>().as<graph::ConstantNode>();
  if (!type || !xt || !w || type->dtype != DataType::Int(32) || !tir::dot2_i16_operand(xt->dtype) ||
      !tir::dot2_i16_operand(w->data->dtype) || w->data->device.device_type != kDLCPU || !w->data->is_contiguous() ||
      xt->unknown_rank() || xt->shape.size() != 4 || w->data->shape.size() != 4) {
    return ir::Expr();
  }
  Map attrs = ir::OpRegistry::check_attrs("conv2d", conv.attrs);
  int data_axis = axis_of(attrs.at("data_layout").as_string(), "NCHW", 'C');
  int weight_axis = axis_of(attrs.at("kernel_layout").as_string(), "OIHW", 'I');
  if (data_axis < 0 || weight_axis < 0 || attrs.at("groups").as_int() != 1) return ir::Expr();
  auto channels = graph::constant_dim(xt->shape[data_axis]);
  if (!channels || *channels % 2 == 0 || w->data->shape[weight_axis].as_int() != *channels) return ir::Expr();
  std::vector<Any> widths(8, Any(int64_t{0}));
  widths[2 * data_axis + 1] = Any(int64_t{1});
  ir::Expr input = call_op("pad", {conv.args[0].cast<ir::Expr>()}, Map({{"pad_width", Any(Array(widths))}}));
  return graph::Call(conv.callee, {input, graph::Constant(padded(*w->data.get(), weight_axis))}, conv.attrs);
}

}  // namespace

transform::Pass EvenChannels() {
  transform::PassInfo info =
      transform::PassInfo::named("EvenChannels")
          .summary(
              "integer convolutions summed in int32 with an odd number of input channels take one channel of zeros "
              "on their input and constant weights, where the target implements dot2_i16, so that every product "
              "pairs")
          .opt_level(2)
          .needs({"types_inferred"})
          .changes({"graph"})
          .preserves({"ops_lowered", "fused"});
  return transform::module_pass(info, [](const ir::IRModule& module, const transform::PassContext&) {
    return rewrite_graph_bodies(module, [&](const std::string& name, const graph::FunctionNode& f) {
      if (!target::native_intrinsics(target::function_target(module, name)).count("dot2_i16")) return f.body;
      return rewrite_calls(f.body, even);
    });
  });
}

}  // namespace loom::passes
