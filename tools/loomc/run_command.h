// `loomc run`: runs a function of a library (or of a model built in
// memory from its text and a config) on .npy or seeded random inputs,
// writes its outputs as .npy and optionally times it (docs/architecture.md, "loomc").
#ifndef LOOM_TOOLS_LOOMC_RUN_COMMAND_H_
#define LOOM_TOOLS_LOOMC_RUN_COMMAND_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "loom/runtime/ndarray.h"
#include "loom/runtime/vm.h"

namespace loomc {

struct RunOptions {
  std::string input;   // LIBRARY.so or MODEL.loom
  std::string config;  // for a .loom input
  std::string function = "main";
  std::vector<std::string> inputs, outputs;  // .npy files
  std::string seed = "0";
  std::string bench;     // number of timed runs; empty: none
  bool profile = false;  // print each module's profile (ModuleNode::profile) after the runs
  std::string trace;     // write the kernel calls as Chrome trace events (docs/rpc.md)
  std::string remote;    // HOST:PORT of a loom-rpc-server: run there (docs/rpc.md)
  std::string key;       // its key file
};

int run_model(const RunOptions& options);

// Where random inputs lie: floats uniform in [low, high), integers uniform
// in [int_low, int_high], bools 0 or 1.
struct InputRange {
  double low = -1, high = 1;
  int64_t int_low = 0, int_high = 9;
};
// A random array for parameter `index` of a VM function's signature, which
// must be a tensor of static shape (Error naming the input otherwise).
loom::runtime::NDArray random_input(const loom::runtime::VMSignature& signature, size_t index, std::mt19937_64& rng,
                                    const InputRange& range);
// The tensors of a function's result, in order (tuples flattened); Error
// for anything else.
void flatten_outputs(const loom::Any& result, std::vector<loom::runtime::NDArray>* out);

}  // namespace loomc

#endif  // LOOM_TOOLS_LOOMC_RUN_COMMAND_H_
