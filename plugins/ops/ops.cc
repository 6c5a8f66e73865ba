// The operator library: type rules and lowerings ("FLower": a typed call ->
// the prim function that computes it in destination-passing style) of the
// operators models are written with (docs/operators.md).  LegalizeOps (in
// the passes plugin) turns each call into call_dps of its lowering.
#include <loom/plugin_sdk.h>

#include "lowering.h"

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("ops") LOOM_PLUGIN_VERSION("0.1.0")
                     LOOM_PLUGIN_DESCRIPTION("The operator library: type rules and lowerings to prim functions")
                     LOOM_PLUGIN_PROVIDES(
                         "op:relu,op:neg,op:abs,op:exp,op:log,op:sqrt,op:rsqrt,op:tanh,op:sigmoid,op:erf,op:gelu,"
                         "op:silu,op:add,op:subtract,op:multiply,op:divide,op:power,op:maximum,op:minimum,"
                         "op:equal,op:not_equal,op:less,op:less_equal,op:greater,op:greater_equal,op:where,"
                         "op:clip,op:cast,op:sum,op:mean,op:max,op:min,op:matmul,op:dense,op:reshape,op:flatten,"
                         "op:transpose,op:expand_dims,op:squeeze,op:broadcast_to,op:softmax,op:log_softmax,"
                         "op:layer_norm,op:batch_norm,op:conv2d,op:max_pool2d,op:avg_pool2d,op:global_avg_pool2d,op:concat,op:split,op:slice,op:pad"));

LOOM_PLUGIN_INIT(ctx) {
  loom::ops::register_elementwise_ops();
  loom::ops::register_reduction_ops();
  loom::ops::register_linalg_ops();
  loom::ops::register_shape_ops();
  loom::ops::register_nn_ops();
  loom::ops::register_conv_ops();
}
