// The loop pass library: passes over prim functions, registered by name
// so a YAML pipeline, the CLI and Python can name them (docs/passes.md).
// One pass per file pair.
#include <loom/plugin_sdk.h>

#include "auto_schedule.h"
#include "default_device_schedule.h"
#include "flatten_buffer.h"
#include "loop_partition.h"
#include "pair_products.h"
#include "lower_intrinsics.h"
#include "simplify.h"
#include "split_host_device.h"
#include "thread_sync.h"
#include "tuning.h"
#include "storage_rewrite.h"
#include "unroll_loop.h"
#include "vectorize_loop.h"

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("loop_passes") LOOM_PLUGIN_VERSION("0.1.0") LOOM_PLUGIN_DESCRIPTION(
    "Loop passes: auto-scheduling, integer products paired, simplification, flattening, vectorizing, unrolling, "
    "partitioning, storage reuse, intrinsic lowering, the default device "
    "schedule and the host/device split"));

LOOM_PLUGIN_INIT(ctx) {
  using loom::transform::PassRegistry;
  PassRegistry::register_pass(loom::loop::AutoSchedule());
  PassRegistry::register_pass(loom::loop::PairProducts());
  PassRegistry::register_pass(loom::loop::Simplify());
  PassRegistry::register_pass(loom::loop::FlattenBuffer());
  PassRegistry::register_pass(loom::loop::VectorizeLoop());
  PassRegistry::register_pass(loom::loop::UnrollLoop());
  PassRegistry::register_pass(loom::loop::LoopPartition());
  PassRegistry::register_pass(loom::loop::StorageRewrite());
  PassRegistry::register_pass(loom::loop::LowerIntrinsics());
  PassRegistry::register_pass(loom::loop::DefaultDeviceSchedule());
  PassRegistry::register_pass(loom::loop::SplitHostDevice());
  PassRegistry::register_pass(loom::loop::ThreadSync());
  loom::loop::register_tuning_functions();
}
