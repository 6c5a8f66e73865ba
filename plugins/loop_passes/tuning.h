// Tuning's C++ side (docs/tuning.md): tasks, sampled schedules, loop-nest
// features for the cost model, and the database a build reads.  The
// search itself is Python's (loom.tune); it calls the functions this
// plugin registers (tune.*).
#ifndef LOOM_PLUGINS_LOOP_PASSES_TUNING_H_
#define LOOM_PLUGINS_LOOP_PASSES_TUNING_H_

#include <memory>
#include <string>
#include <vector>

#include "loom/tir/function.h"

namespace loom::loop {

// A prim function in its task form: attributes dropped and every variable
// and buffer renamed in order of appearance (%v0, %v1, ...), so that the
// same computation in two models, whatever its names, is one task whose
// traces (which name loops and buffers) replay on both.  `hash`: 16 hex
// digits of the canonical text's FNV-1a hash.
tir::PrimFunc canonical_task(const tir::PrimFunc& f, std::string* hash);

// One measured record of a database (docs/tuning.md, "Database").
struct TuningRecord {
  std::string task, target, cpu, trace;  // trace: its JSON text
  double median_us = 0;
  int line = 0;
};

class TuningDatabase {
 public:
  // The database at `path`, read once while the file's size and time stay
  // the same.  A malformed line, or a record of another format version,
  // is a warning "PATH:LINE: why" (printed once, on the first read) and
  // is skipped; a missing or unreadable file is an Error.
  static std::shared_ptr<const TuningDatabase> open(const std::string& path);
  // The records of one task on one target and CPU that carry a time, one
  // per trace (its first), fastest first by the median of the trace's
  // times.
  std::vector<const TuningRecord*> best(const std::string& task, const std::string& target,
                                        const std::string& cpu) const;
  const std::string& path() const { return path_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::string path_;
  std::vector<TuningRecord> records_;
  std::vector<std::string> warnings_;
};

// The target text records carry: the target as the text format prints it.
std::string target_key(const Any& target);

// Registers tune.tasks, tune.sample, tune.replay, tune.features and
// tune.cpu (docs/tuning.md, "Interfaces").
void register_tuning_functions();

}  // namespace loom::loop

#endif  // LOOM_PLUGINS_LOOP_PASSES_TUNING_H_
