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
  // Broadcasting and mixed dtypes.
  set("add", {{"add(%a0, %a1)", {"Tensor[(3, 1), float32]", "Tensor[(1, 5), float32]"}},
              {"add(%a0, %a1)", {"Tensor[(4, 6), int32]", "Tensor[(6,), int32]"}, -50, 50}});
  set("where", {{"where(%a0, %a1, %a2)", {"Tensor[(3, 5), bool]", kF35, "Tensor[(5,), float32]"}}});
  set("cast", {{"cast(%a0, dtype=int32)", {kF35}, -20, 20}, {"cast(%a0, dtype=float64)", {kF35}}});
  set("clip", {{"clip(%a0, a_min=-1.5, a_max=2.0)", {kF35}}});
  // Shapes and layouts.
  set("broadcast_to", {{"broadcast_to(%a0, shape=[2, 3, 5])", {"Tensor[(3, 1), float32]"}}});
  set("arange", {{"arange(extent=7)", {}}, {"arange(extent=6, start=0.5, step=-1.5, dtype=float32)", {}}});
  set("expand_dims", {{"expand_dims(%a0, axis=1)", {kF35}}});
  set("reshape", {{"reshape(%a0, shape=[5, -1])", {kF35}}});
  set("split", {{"split(%a0, indices_or_sections=[1, 3], axis=1)", {kF35}}});
  set("matmul", {{"matmul(%a0, %a1)", {"Tensor[(2, 3, 5), float32]", "Tensor[(5, 4), float32]"}},
                 {"matmul(%a0, %a1, transpose_b=true)", {kF35, "Tensor[(4, 5), float32]"}},
                 {"matmul(%a0, %a1, out_dtype=\"int32\")", {"Tensor[(3, 5), uint8]", "Tensor[(5, 4), int8]"}, 0, 120}});
  set("dense",
      {{"dense(%a0, %a1)", {kF35, "Tensor[(4, 5), float32]"}},
       {"dense(%a0, %a1, out_dtype=\"int32\")", {"Tensor[(3, 16), int16]", "Tensor[(4, 16), int8]"}, -120, 120}});
  // Quantization: positive scales, zero points in the format's range.
  set("quantize", {{"quantize(%a0, %a1, %a2)", {kF35, "Tensor[(5,), float32]", "Tensor[(5,), uint8]"}, 0.5, 3}});
  set("dequantize", {{"dequantize(%a0, %a1, %a2)",
                      {"Tensor[(3, 5), int8]", "Tensor[(5,), float32]", "Tensor[(5,), int8]"},
                      -100,
                      100}});
  // Weight-only quantized dense layers: integer weights (their range), K whole groups.
  set("dense_int8", {{"dense_int8(%a0, %a1)", {"Tensor[(3, 64), float32]", "Tensor[(4, 64), int8]"}, -100, 100}});
  set("dense_int4", {{"dense_int4(%a0, %a1, %a2)",
                      {"Tensor[(3, 64), float32]", "Tensor[(4, 32), uint8]", "Tensor[(4, 2), float32]"},
                      0,
                      255}});
  // Neural-network operators.
  set("conv2d", {{"conv2d(%a0, %a1, strides=[2, 2], padding=[1, 1])", {kImage, "Tensor[(4, 3, 3, 3), float32]"}},
                 {"conv2d(%a0, %a1, groups=3)", {kImage, "Tensor[(3, 1, 3, 3), float32]"}},
                 {"conv2d(%a0, %a1, padding=[1, 1], out_dtype=\"int32\")",
                  {"Tensor[(1, 3, 8, 8), uint8]", "Tensor[(4, 3, 3, 3), int8]"},
                  0,
                  127}});
  set("global_avg_pool2d", {{"global_avg_pool2d(%a0)", {kImage}}});
  // Winograd's transforms: odd sizes (a last tile half outside), asymmetric padding.
  set("winograd_input", {{"winograd_input(%a0, padding=[1, 0, 1, 2])", {"Tensor[(2, 5, 6, 3), float32]"}}});
  set("winograd_output", {{"winograd_output(%a0, height=5, width=3)", {"Tensor[(4, 4, 12, 3), float32]"}}});
  set("batch_norm",
      {{"batch_norm(%a0, %a1, %a2, %a3, %a4)",
        {kImage, "Tensor[(3,), float32]", "Tensor[(3,), float32]", "Tensor[(3,), float32]", "Tensor[(3,), float32]"},
        0.5,
        2}});
  set("layer_norm",
      {{"layer_norm(%a0, %a1, %a2, epsilon=0.001)", {kF35, "Tensor[(5,), float32]", "Tensor[(5,), float32]"}}});
  // Functions defined on part of the line.
  set("asin", {{"asin(%a0)", {kF35}, -0.95, 0.95}});
  set("acos", {{"acos(%a0)", {kF35}, -0.95, 0.95}});
  set("atanh", {{"atanh(%a0)", {kF35}, -0.9, 0.9}});
  set("acosh", {{"acosh(%a0)", {kF35}, 1.05, 4}});
  set("tan", {{"tan(%a0)", {kF35}, -1.4, 1.4}});
  // Integers of both signs (the divisor 2 b + 1: never 0, which the
  // reference interpreter refuses), and shifts past the width.
  const char* const kI35 = "Tensor[(3, 5), int32]";
  for (const char* op : {"divide", "floor_divide", "floor_mod", "trunc_mod"}) {
    std::vector<OpExample> examples{
        {std::string(op) + "(%a0, add(add(%a1, %a1), cast(equal(%a1, %a1), dtype=int32)))", {kI35, kI35}, -4, 4}};
    if (std::string(op) != "divide")
      examples.push_back({std::string(op) + "(%a0, %a1)", {kF35, kF35}, 0.5, 3});
    else
      examples.push_back({"divide(%a0, %a1)", {kF35, "Tensor[(5,), float32]"}, 0.5, 3});
    set(op, examples);
  }
  for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    set(op, {{std::string(op) + "(%a0, %a1)", {kI35, "Tensor[(5,), int32]"}, -100, 100}});
  }
  set("bitwise_not", {{"bitwise_not(%a0)", {kI35}, -100, 100}});
  set("left_shift", {{"left_shift(%a0, %a1)", {"Tensor[(3, 5), uint32]", "Tensor[(3, 5), uint32]"}, 0, 40}});
  set("right_shift", {{"right_shift(%a0, %a1)", {kI35, kI35}, -40, 40},
                      {"right_shift(%a0, %a1)", {"Tensor[(3, 5), uint8]", "Tensor[(3, 5), uint8]"}, 0, 12}});
  for (const char* op : {"logical_and", "logical_or", "logical_xor"}) {
    set(op, {{std::string(op) + "(%a0, %a1)", {"Tensor[(3, 5), bool]", "Tensor[(5,), bool]"}}});
  }
  set("logical_not", {{"logical_not(%a0)", {"Tensor[(3, 5), bool]"}}});
  set("bitwise_not", {{"bitwise_not(%a0)", {kI35}, -100, 100}});
  // Indexing: indices from -5 to 4 over axes of 5 (negative ones count
  // from the end), duplicates included.
  set("take", {{"take(%a0, %a1, axis=1)", {kF35, "Tensor[(2, 4), int64]"}, -5, 4}});
  set("gather_elements", {{"gather_elements(%a0, %a1, axis=1)", {kF35, "Tensor[(3, 4), int64]"}, -5, 4}});
  set("gather_nd", {{"gather_nd(%a0, %a1)", {"Tensor[(5, 5, 2), float32]", "Tensor[(4, 2), int32]"}, -5, 4}});
  set("scatter_elements",
      {{"scatter_elements(%a0, %a1, %a2, axis=1, reduction=\"add\")",
        {kF35, "Tensor[(3, 4), int64]", "Tensor[(3, 4), float32]"},
        -5,
        4},
       {"scatter_elements(%a0, %a1, %a2, axis=1)", {kF35, "Tensor[(3, 4), int64]", "Tensor[(3, 4), float32]"}, -5, 4}});
  set("scatter_nd", {{"scatter_nd(%a0, %a1, %a2, reduction=\"max\")",
                      {"Tensor[(5, 3), float32]", "Tensor[(4, 1), int64]", "Tensor[(4, 3), float32]"},
                      -5,
                      4}});
  set("argmax", {{"argmax(%a0, axis=1)", {kF35}},
                 {"argmax(%a0, axis=0, keepdims=false, select_last_index=true)", {kI35}, -2, 2}});
  set("argmin", {{"argmin(%a0, axis=1)", {kF35}}, {"argmin(%a0, axis=0, select_last_index=true)", {kI35}, -2, 2}});
  set("cumsum",
      {{"cumsum(%a0, axis=1)", {kF35}}, {"cumsum(%a0, axis=0, exclusive=true, reverse=true)", {kI35}, -9, 9}});
  set("topk", {{"topk(%a0, k=3, axis=1)", {kF35}}, {"topk(%a0, k=2, axis=0, largest=false)", {kI35}, -2, 2}});
  // Einsum, transposed convolution, resize, the pools' ceil mode and
  // dilation, padding modes and negative steps.
  set("einsum", {{"einsum(%a0, %a1, equation=\"ij,jk->ik\")", {kF35, "Tensor[(5, 4), float32]"}},
                 {"einsum(%a0, equation=\"...ii->...i\")", {"Tensor[(2, 3, 3), float32]"}}});
  set("conv2d_transpose", {{"conv2d_transpose(%a0, %a1, strides=[2, 2], padding=[1, 1], output_padding=[1, 1])",
                            {kImage, "Tensor[(3, 2, 3, 3), float32]"}}});
  set("resize", {{"resize(%a0, sizes=[1, 3, 12, 5], mode=\"linear\")", {kImage}},
                 {"resize(%a0, sizes=[1, 3, 16, 16], mode=\"cubic\", coordinate_transformation_mode=\"align_corners\")",
                  {kImage}},
                 {"resize(%a0, sizes=[1, 3, 16, 12], coordinate_transformation_mode=\"asymmetric\")", {kImage}}});
  // Grid points across the image and beyond its edges.
  set("grid_sample", {{"grid_sample(%a0, %a1)", {kImage, "Tensor[(1, 4, 5, 2), float32]"}, -1.3, 1.3},
                      {"grid_sample(%a0, %a1, mode=\"bicubic\", padding_mode=\"reflection\", align_corners=true)",
                       {kImage, "Tensor[(1, 4, 5, 2), float32]"},
                       -1.3,
                       1.3},
                      {"grid_sample(%a0, %a1, mode=\"nearest\", padding_mode=\"border\")",
                       {kImage, "Tensor[(1, 4, 5, 2), float32]"},
                       -1.3,
                       1.3}});
  set("max_pool2d", {{"max_pool2d(%a0, pool_size=[3, 2], strides=[2, 2], padding=[1, 1])", {kImage}},
                     {"max_pool2d(%a0, pool_size=[3, 3], strides=[2, 2], ceil_mode=true, dilation=[1, 2])", {kImage}}});
  set("avg_pool2d", {{"avg_pool2d(%a0, pool_size=[3, 2], strides=[2, 2], padding=[1, 1])", {kImage}},
                     {"avg_pool2d(%a0, pool_size=[3, 3], strides=[2, 2], ceil_mode=true, count_include_pad=true, "
                      "padding=[1, 1])",
                      {kImage}}});
  set("pad", {{"pad(%a0, pad_width=[1, 0, 2, 3], pad_value=0.5)", {kF35}},
              {"pad(%a0, pad_width=[2, 1, 3, 4], mode=\"reflect\")", {kF35}},
              {"pad(%a0, pad_width=[2, 1, 3, 4], mode=\"edge\")", {kF35}}});
  set("slice", {{"slice(%a0, begin=[1, 0], end=[3, 5], strides=[1, 2])", {kF35}},
                {"slice(%a0, begin=[-1, 4], end=[-10, 0], strides=[-2, -1])", {kF35}}});
}

}  // namespace loom::ops
