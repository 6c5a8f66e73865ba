// The operator library's examples for the conformance kit (`loomc plugin
// test`, docs/plugin-tools.md): calls a codegen must compute as the
// reference interpreter does.  Operators not listed are checked on the
// kit's guess (each input Tensor[(3, 5), float32], default attributes);
// those listed either need attributes or inputs the guess does not give,
// or a range where they are defined.
#include "lowering.h"

namespace loom::ops {

namespace {
const char* const kF35 = "Tensor[(3, 5), float32]";
const char* const kImage = "Tensor[(1, 3, 8, 8), float32]";
}  // namespace

void register_op_examples() {
  using graph::OpExample;
  auto set = [](const std::string& op, std::vector<OpExample> examples) { graph::set_op_examples(op, examples); };
  // Defined on positive inputs only.
  set("log", {{"log(%a0)", {kF35}, 0.1, 5}});
  set("sqrt", {{"sqrt(%a0)", {kF35}, 0.1, 5}});
  set("rsqrt", {{"rsqrt(%a0)", {kF35}, 0.1, 5}});
  set("power", {{"power(%a0, %a1)", {kF35, kF35}, 0.5, 2}});
  set("divide", {{"divide(%a0, %a1)", {kF35, "Tensor[(5,), float32]"}, 0.5, 3}});
  // Broadcasting and mixed dtypes.
  set("add", {{"add(%a0, %a1)", {"Tensor[(3, 1), float32]", "Tensor[(1, 5), float32]"}},
              {"add(%a0, %a1)", {"Tensor[(4, 6), int32]", "Tensor[(6,), int32]"}, -50, 50}});
  set("where", {{"where(%a0, %a1, %a2)", {"Tensor[(3, 5), bool]", kF35, "Tensor[(5,), float32]"}}});
  set("cast", {{"cast(%a0, dtype=int32)", {kF35}, -20, 20}, {"cast(%a0, dtype=float64)", {kF35}}});
  set("clip", {{"clip(%a0, a_min=-1.5, a_max=2.0)", {kF35}}});
  // Shapes and layouts.
  set("broadcast_to", {{"broadcast_to(%a0, shape=[2, 3, 5])", {"Tensor[(3, 1), float32]"}}});
  set("expand_dims", {{"expand_dims(%a0, axis=1)", {kF35}}});
  set("reshape", {{"reshape(%a0, shape=[5, -1])", {kF35}}});
  set("slice", {{"slice(%a0, begin=[1, 0], end=[3, 5], strides=[1, 2])", {kF35}}});
  set("split", {{"split(%a0, indices_or_sections=[1, 3], axis=1)", {kF35}}});
  set("pad", {{"pad(%a0, pad_width=[1, 0, 2, 3], pad_value=0.5)", {kF35}}});
  set("matmul", {{"matmul(%a0, %a1)", {"Tensor[(2, 3, 5), float32]", "Tensor[(5, 4), float32]"}},
                 {"matmul(%a0, %a1, transpose_b=true)", {kF35, "Tensor[(4, 5), float32]"}}});
  // Neural-network operators.
  set("conv2d", {{"conv2d(%a0, %a1, strides=[2, 2], padding=[1, 1])", {kImage, "Tensor[(4, 3, 3, 3), float32]"}},
                 {"conv2d(%a0, %a1, groups=3)", {kImage, "Tensor[(3, 1, 3, 3), float32]"}}});
  set("max_pool2d", {{"max_pool2d(%a0, pool_size=[3, 2], strides=[2, 2], padding=[1, 1])", {kImage}}});
  set("avg_pool2d", {{"avg_pool2d(%a0, pool_size=[3, 2], strides=[2, 2], padding=[1, 1])", {kImage}}});
  set("global_avg_pool2d", {{"global_avg_pool2d(%a0)", {kImage}}});
  set("batch_norm", {{"batch_norm(%a0, %a1, %a2, %a3, %a4)",
                      {kImage, "Tensor[(3,), float32]", "Tensor[(3,), float32]", "Tensor[(3,), float32]",
                       "Tensor[(3,), float32]"},
                      0.5, 2}});
  set("layer_norm", {{"layer_norm(%a0, %a1, %a2, epsilon=0.001)",
                      {kF35, "Tensor[(5,), float32]", "Tensor[(5,), float32]"}}});
}

}  // namespace loom::ops
