// Timing a function as TVM's time_evaluator does (docs/rpc.md, "The
// client"): the one code path behind Python's loom.runtime.time_evaluator
// and the RPC server's TIME_EVALUATOR, so local and remote figures compare.
#ifndef LOOM_RUNTIME_TIME_EVALUATOR_H_
#define LOOM_RUNTIME_TIME_EVALUATOR_H_

#include <cstdint>
#include <vector>

#include "loom/object/function.h"

namespace loom::runtime {

struct TimeEvaluatorOptions {
  int64_t number = 1;        // runs per repeat (grows to reach min_repeat_ms)
  int64_t repeat = 1;        // repeats reported
  double min_repeat_ms = 0;  // a repeat shorter than this runs again with a larger number
  bool cache_flush = false;  // write a buffer larger than the last-level cache before each run
};

struct TimeEvaluation {
  int64_t number = 0;           // runs per repeat in the end
  std::vector<double> seconds;  // per run, one entry per repeat
};

// One untimed run, then `repeat` repeats of `number` runs each, `device`
// synchronized before the clock starts and before it stops.  A repeat
// that lasted less than min_repeat_ms is run again with `number` grown by
// what the time asks for (at least 1.618x).  With cache_flush each run is
// timed alone after the flush.  Error for counts out of range.
TimeEvaluation time_evaluate(const Function& function, const std::vector<Any>& args, Device device,
                             const TimeEvaluatorOptions& options);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_TIME_EVALUATOR_H_
