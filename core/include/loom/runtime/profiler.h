// The kernel profiler (docs/rpc.md, "Profiles and traces"): what the VM
// records of each kernel call while a module tree is profiling, for every
// target (the call's name, device, time and the bytes of its tensors), as
// one JSON object that `loomc run --profile` prints as a table, `--trace`
// writes as Chrome trace events and Python's Module.profile() returns.
#ifndef LOOM_RUNTIME_PROFILER_H_
#define LOOM_RUNTIME_PROFILER_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "loom/runtime/module.h"

namespace loom::runtime {

struct ProfileEvent {
  std::string name;      // "@fused_conv2d_add_relu" (a kernel), "@main" (a graph function)
  std::string category;  // "kernel" or "function"
  std::string device;    // "cpu:0", "opencl:0", ...
  int64_t start_ns = 0;  // since the profiler started
  int64_t duration_ns = 0;
  int64_t bytes = 0;   // of the call's tensors (inputs and outputs), when known
  int64_t flops = -1;  // floating-point operations, where the codegen counted them (tir::float_ops); -1 unknown
};

// Thread-safe; bounded (kMaxEvents, then counted as dropped).
class Profiler {
 public:
  static constexpr size_t kMaxEvents = size_t{1} << 20;
  using Clock = std::chrono::steady_clock;

  void start();  // clears what was recorded; the clock starts again
  int64_t now_ns() const;
  void record(ProfileEvent event);
  // {"kernels": [per kernel name and device: calls, total_us, mean_us,
  // share, bytes, and flops (the calls' sum) where every call's is known;
  // by total time, longest first], "total_us": kernels' sum,
  // "traceEvents": [Chrome trace "X" events], "dropped": N}
  std::string to_json() const;

 private:
  mutable std::mutex mutex_;
  Clock::time_point origin_ = Clock::now();
  std::vector<ProfileEvent> events_;
  int64_t dropped_ = 0;
};

// Starts (clearing what was recorded) or stops profiling in every module
// of the tree that can (ModuleNode::set_profiling).
void set_profiling(const Module& root, bool on);
// What the tree's modules recorded, as one JSON object {"KIND": PROFILE}
// (breadth first; the first module of a kind that keeps a profile): what
// `loomc run --profile` reports, locally and from a server's PROFILE.
std::string profiles_json(const Module& root);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_PROFILER_H_
