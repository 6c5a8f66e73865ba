// `loomc run`: runs a function of a library (or of a model built in
// memory from its text and a config) on .npy or seeded random inputs,
// writes its outputs as .npy and optionally times it (docs/architecture.md, "loomc").
#ifndef LOOM_TOOLS_LOOMC_RUN_COMMAND_H_
#define LOOM_TOOLS_LOOMC_RUN_COMMAND_H_

#include <string>
#include <vector>

namespace loomc {

struct RunOptions {
  std::string input;     // LIBRARY.so or MODEL.loom
  std::string config;    // for a .loom input
  std::string function = "main";
  std::vector<std::string> inputs, outputs;  // .npy files
  std::string seed = "0";
  std::string bench;  // number of timed runs; empty: none
  bool profile = false;  // print each module's profile (ModuleNode::profile) after the runs
};

int run_model(const RunOptions& options);

}  // namespace loomc

#endif  // LOOM_TOOLS_LOOMC_RUN_COMMAND_H_
