// EvenChannels: an integer convolution (operands of at most 16 bits summed
// in int32, one group, constant weights, NCHW or NHWC) with an odd number
// of input channels takes one more channel of zeros on its input and its
// weights, where the function's target implements dot2_i16 natively:
// PairProducts then pairs every product of each tap, side by side in
// memory, instead of leaving one unpaired step per tap (a stem
// convolution's 3 channels; docs/passes.md, "EvenChannels").
#ifndef LOOM_PLUGINS_PASSES_EVEN_CHANNELS_H_
#define LOOM_PLUGINS_PASSES_EVEN_CHANNELS_H_

#include "loom/transform/pass.h"

namespace loom::passes {
transform::Pass EvenChannels();
}  // namespace loom::passes

#endif  // LOOM_PLUGINS_PASSES_EVEN_CHANNELS_H_
