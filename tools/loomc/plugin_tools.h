// `loomc plugin doctor` and `loomc plugin test` (docs/plugin-tools.md): why
// a plugin file does not load, and whether it does what Loom expects.
// Whatever runs the plugin's code first runs in a child process (this
// loomc, `plugins load PATH`) with a time limit.
#ifndef LOOM_TOOLS_LOOMC_PLUGIN_TOOLS_H_
#define LOOM_TOOLS_LOOMC_PLUGIN_TOOLS_H_

#include <string>

namespace loomc {

struct KitOptions {
  bool json = false;
  uint64_t seed = 0;
  std::string only;  // run the checks whose name starts with this
  int timeout_s = 30;  // the child process that loads the plugin
};

// Prints its findings and a verdict; 0 when the plugin loads.
int plugin_doctor(const std::string& path, int timeout_s);
// Prints the table of checks; 0 when none failed.
int plugin_test(const std::string& path, const KitOptions& options);

}  // namespace loomc

#endif  // LOOM_TOOLS_LOOMC_PLUGIN_TOOLS_H_
