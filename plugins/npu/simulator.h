// The reference NPU's executor and cycle model (docs/npu-spec.md): runs a
// decoded command stream on host memory, in stream order, with every
// access checked, and times it with one clock per engine and the
// semaphores' signal times.
#ifndef LOOM_PLUGINS_NPU_SIMULATOR_H_
#define LOOM_PLUGINS_NPU_SIMULATOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "isa.h"

namespace loom::npu {

// The machine a stream runs on (the target npu's attributes).
struct Machine {
  int64_t scratchpad_words = 256 * 1024 / 4;
  int64_t rows = 16, cols = 16;  // the matrix unit
  int64_t dma_bytes_per_cycle = 64;
  int64_t dma_latency = 64;
  int64_t lanes = 16;  // the vector unit
};

struct ClassStats {
  int64_t instructions = 0;
  int64_t cycles = 0;  // busy cycles of its engine
  int64_t macs = 0;
  int64_t dma_bytes = 0;
};

struct Profile {
  int64_t cycles = 0;  // the latest completion
  int64_t macs = 0;
  int64_t dma_bytes = 0;
  std::map<std::string, ClassStats> classes;  // by opcode name
  double utilisation(const Machine& m) const {
    return cycles ? static_cast<double>(macs) / (static_cast<double>(cycles) * m.rows * m.cols) : 0.0;
  }
};

// A scratchpad word: an fp32 or an int32, as the instruction reading it
// says by its dtype (docs/npu-spec.md, "Integers").
union Word {
  float f;
  int32_t i;
};

// A region argument: its host memory, its size in elements and their dtype.
struct Region {
  void* data;
  uint64_t words;  // elements
  Dtype dtype = Dtype::kFloat32;
};

// Runs `stream` with the region's inputs and outputs (in the order of its
// dps call) and `constants` (the constant section, word-aligned).
// Throws Error naming the instruction on an access outside a buffer or
// the scratchpad, a wait nothing signalled before it, a dtype its opcode
// does not take, an int8 MATMUL operand out of range, or a stream needing
// more scratchpad than `machine` has.
Profile execute(const Stream& stream, const std::vector<Region>& inputs, const std::vector<Region>& outputs,
                const std::vector<Word>& constants, const Machine& machine);

}  // namespace loom::npu

#endif  // LOOM_PLUGINS_NPU_SIMULATOR_H_
