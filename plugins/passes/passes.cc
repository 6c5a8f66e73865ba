// The graph pass library: passes over graph functions, registered by name
// so a YAML pipeline, the CLI and Python can name them (docs/passes.md).
// One pass per file pair.
#include <algorithm>
#include <loom/plugin_sdk.h>

#include "annotate_target.h"
#include "canonicalize_bindings.h"
#include "convert_layout.h"
#include "dead_code_elimination.h"
#include "eliminate_common_subexpr.h"
#include "even_channels.h"
#include "fold_batch_norm.h"
#include "fold_constant.h"
#include "fuse_ops.h"
#include "fuse_tir.h"
#include "legalize_ops.h"
#include "merge_composite.h"
#include "partition_graph.h"
#include "amx_matmul.h"
#include "plan_devices.h"
#include "qdq_to_integer.h"
#include "to_mixed_precision.h"
#include "winograd.h"

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("passes") LOOM_PLUGIN_VERSION("0.1.0")
                         LOOM_PLUGIN_DESCRIPTION("Graph passes: lowering of operators and clean-ups")
                     // FoldConstant's evaluator: the reference interpreter.
                     LOOM_PLUGIN_REQUIRES("function:ref.run_prim_func")
                         LOOM_PLUGIN_PROVIDES("property:devices_planned"));

namespace {
// What the CPU and the device pipelines begin with: graph clean-ups and
// folding, partitioning for the config's codegens, fusion and lowering.
// QDQToInteger comes before FoldConstant, which would make dequantized
// weights float constants.
const std::vector<std::string> kGraphPasses = {"InferType",
                                               "CanonicalizeBindings",
                                               "QDQToInteger",
                                               "FoldBatchNorm",
                                               "FoldConstant",
                                               "EliminateCommonSubexpr",
                                               "DeadCodeElimination",
                                               "MergeComposite",
                                               "AnnotateTarget",
                                               "PartitionGraph",
                                               "EvenChannels",
                                               "AMXMatmul",
                                               "FuseOps",
                                               "LegalizeOps",
                                               "FuseTIR",
                                               "DeadCodeElimination"};
// What the CPU pipelines end with: the schedule and the loop passes.
const std::vector<std::string> kCpuLoopPasses = {"AutoSchedule",   "PairProducts",  "LowerIntrinsics", "FlattenBuffer",
                                                 "Simplify",       "LoopPartition", "VectorizeLoop",   "UnrollLoop",
                                                 "StorageRewrite", "Simplify"};

std::vector<std::string> concat(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}
}  // namespace

LOOM_PLUGIN_INIT(ctx) {
  using loom::transform::PassRegistry;
  // First: PlanDevices' contract names it.
  loom::passes::register_devices_planned();
  PassRegistry::register_pass(loom::passes::LegalizeOps());
  PassRegistry::register_pass(loom::passes::DeadCodeElimination());
  PassRegistry::register_pass(loom::passes::CanonicalizeBindings());
  PassRegistry::register_pass(loom::passes::EliminateCommonSubexpr());
  PassRegistry::register_pass(loom::passes::FoldConstant());
  PassRegistry::register_pass(loom::passes::FoldBatchNorm());
  PassRegistry::register_pass(loom::passes::QDQToInteger());
  PassRegistry::register_pass(loom::passes::AMXMatmul());
  PassRegistry::register_pass(loom::passes::ToMixedPrecision());
  PassRegistry::register_pass(loom::passes::FuseOps());
  PassRegistry::register_pass(loom::passes::FuseTIR());
  PassRegistry::register_pass(loom::passes::ConvertLayout());
  PassRegistry::register_pass(loom::passes::Winograd());
  PassRegistry::register_pass(loom::passes::EvenChannels());
  PassRegistry::register_pass(loom::passes::PlanDevices());
  PassRegistry::register_pass(loom::passes::MergeComposite());
  PassRegistry::register_pass(loom::passes::AnnotateTarget());
  PassRegistry::register_pass(loom::passes::PartitionGraph());
  // A named pipeline is a pass like any other, so a YAML pipeline, the CLI
  // and Python select it by name; its passes are looked up when it runs (so
  // the loop passes' plugin loads only then), and each still obeys the
  // context's opt level, disabled and required lists.
  using loom::transform::PassInfo;
  using loom::transform::pipeline;
  PassRegistry::register_pass(
      pipeline(PassInfo::named("O0").summary("the least that runs: operators lowered, nothing optimised"),
               {"InferType", "LegalizeOps"}));
  PassRegistry::register_pass(pipeline(
      PassInfo::named("cpu").summary("the CPU pipeline: graph clean-ups and folding, partitioning for the config's "
                                     "codegens (none: nothing), fusion, lowering, then the loop passes"),
      concat(kGraphPasses, kCpuLoopPasses)));
  // The llvm target's default: `cpu` with ConvertLayout after the
  // partitioning, so convolutional models run channels-last on the CPU
  // while the regions a codegen took (outlined functions, which
  // ConvertLayout leaves alone) keep the layout its patterns were written
  // for (docs/target-llvm.md, "Layout").
  std::vector<std::string> channels_last = kGraphPasses;
  channels_last.insert(std::find(channels_last.begin(), channels_last.end(), "PartitionGraph") + 1,
                       {"ConvertLayout", "Winograd"});
  PassRegistry::register_pass(pipeline(
      PassInfo::named("cpu_channels_last")
          .summary("the CPU pipeline with ConvertLayout after the partitioning: convolutions and pools channels-last"),
      concat(channels_last, kCpuLoopPasses)));
  // What makes a device target's prim functions kernels and host code
  // (the property kernels_split): the driver runs it when a pipeline left
  // them whole.
  PassRegistry::register_pass(
      pipeline(PassInfo::named("device_kernels")
                   .summary("the device's loop passes alone: a thread binding for each nest on a device, the barriers "
                            "shared memory needs, and the host/device split"),
               {"DefaultDeviceSchedule", "ThreadSync", "SplitHostDevice"}));
  // A device target's, and a module's whose functions are placed on
  // several targets (docs/devices.md): the same graph passes, the device
  // plan, then the CPU's loop passes for the functions on a CPU target
  // and a thread binding for every nest of those on a device, which the
  // host/device split divides into kernels and launches.
  PassRegistry::register_pass(
      pipeline(PassInfo::named("device").summary(
                   "graph clean-ups and folding, fusion, lowering, the device plan, then the loop passes for functions "
                   "on the CPU, the default device schedule for those on a device, and the host/device split"),
               concat(kGraphPasses, {"PlanDevices", "AutoSchedule", "PairProducts", "DefaultDeviceSchedule",
                                     "ThreadSync", "LowerIntrinsics", "FlattenBuffer", "Simplify", "LoopPartition",
                                     "VectorizeLoop", "UnrollLoop", "StorageRewrite", "SplitHostDevice", "Simplify"})));
}
