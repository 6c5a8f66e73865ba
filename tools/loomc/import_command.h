// `loomc import MODEL.onnx -o OUT.loom`: runs the Python ONNX importer
// (python3 -m loom.frontend import ...) with the package this loomc
// belongs to (docs/frontends.md, "From the command line").
#ifndef LOOM_TOOLS_LOOMC_IMPORT_COMMAND_H_
#define LOOM_TOOLS_LOOMC_IMPORT_COMMAND_H_

#include <string>
#include <vector>

namespace loomc {

// `args` are the words after "import"; returns only when the interpreter
// cannot be started (exit status 1, the reason on stderr).
// Replaces loomc by `python -m MODULE ARGS...` (the package of this build
// or installation); returns only when that cannot start.
int run_python(const std::vector<std::string>& module_and_args, const std::string& command, const std::string& needs);
int import_model(const std::vector<std::string>& args);
int tune_model(const std::vector<std::string>& args);

}  // namespace loomc

#endif  // LOOM_TOOLS_LOOMC_IMPORT_COMMAND_H_
