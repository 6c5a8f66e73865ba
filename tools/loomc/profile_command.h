// Kernel profiles (docs/rpc.md, "Profiles and traces"): the table `loomc
// run --profile` prints, the Chrome trace `--trace` writes, and `loomc
// profile TRACE.json [--html OUT.html]`, which reads a trace back and
// draws its kernels by time as a page that needs no network.
#ifndef LOOM_TOOLS_LOOMC_PROFILE_COMMAND_H_
#define LOOM_TOOLS_LOOMC_PROFILE_COMMAND_H_

#include <string>
#include <vector>

#include "loom/support/json.h"

namespace loomc {

// A VM profile's "kernels" array as a table, longest first, each kernel's
// share of the kernels' time.
void print_kernel_table(const loom::JsonValue& profile);
// The profiles' "traceEvents" as one Chrome trace event file.
void write_trace(const std::vector<loom::JsonValue>& profiles, const std::string& path);
int profile_command(const std::string& trace, const std::string& html);

}  // namespace loomc

#endif  // LOOM_TOOLS_LOOMC_PROFILE_COMMAND_H_
