// The operator library: type rules and lowerings ("FLower": a typed call ->
// the prim function that computes it in destination-passing style) of the
// operators models are written with (docs/operators.md).  LegalizeOps (in
// the passes plugin) turns each call into call_dps of its lowering.
#include <loom/plugin_sdk.h>

#include "lowering.h"

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("ops") LOOM_PLUGIN_VERSION("0.1.0")
                         LOOM_PLUGIN_DESCRIPTION("The operator library: type rules and lowerings to prim functions"));

LOOM_PLUGIN_INIT(ctx) {
  loom::ops::register_elementwise_ops();
  loom::ops::register_reduction_ops();
  loom::ops::register_linalg_ops();
  loom::ops::register_shape_ops();
  loom::ops::register_nn_ops();
  loom::ops::register_conv_ops();
  loom::ops::register_index_ops();
  loom::ops::register_resize_ops();
  loom::ops::register_quant_ops();
  loom::ops::register_op_examples();  // for the conformance kit (docs/plugin-tools.md)
}
