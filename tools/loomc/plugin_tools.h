// `loomc plugin doctor` (plugin_doctor.cc) and `loomc plugin test`
// (plugin_kit.cc), docs/plugin-tools.md: why a plugin file does not load,
// and whether it does what Loom expects.
// Whatever runs the plugin's code first runs in a child process (this
// loomc, `plugins load PATH`) with a time limit.
#ifndef LOOM_TOOLS_LOOMC_PLUGIN_TOOLS_H_
#define LOOM_TOOLS_LOOMC_PLUGIN_TOOLS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace loomc {

// ---- child processes (plugin_tools.cc): whatever runs a plugin's code
// for the doctor or the kit runs in one of these.
struct ChildResult {
  bool started = false;
  bool timed_out = false;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  std::string output;  // stdout and stderr together
};

// Runs argv[0] (searched on PATH) with extra environment entries ("K=V"),
// its stdout and stderr captured; killed after `timeout_s`.
ChildResult run_child(const std::vector<std::string>& argv, int timeout_s,
                      const std::vector<std::string>& extra_env = {});
// This loomc's own path, to run it as a child.
std::string self_path();
// The folder of the core libraries this loomc runs with.
std::string core_library_dir();
// `loomc plugins load PATH` in a child, and what it said as one line.
ChildResult load_in_child(const std::string& path, int timeout_s);
std::string child_failure(const ChildResult& child, const std::string& path, int timeout_s);

// ---- the doctor and the kit
struct KitOptions {
  bool json = false;
  uint64_t seed = 0;
  std::string only;    // run the checks whose name starts with this
  int timeout_s = 30;  // the child process that loads the plugin
};

// Prints its findings and a verdict; 0 when the plugin loads.
int plugin_doctor(const std::string& path, int timeout_s);
// Prints the table of checks; 0 when none failed.
int plugin_test(const std::string& path, const KitOptions& options);

}  // namespace loomc

#endif  // LOOM_TOOLS_LOOMC_PLUGIN_TOOLS_H_
