// `loomc import` and `loomc tune`: the importers and the tuner are Python
// (they read models with the onnx package; tuning drives worker processes
// and a cost model), so loomc replaces itself by the interpreter it was
// built for, running the package of the same build or installation.
#include "import_command.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace loomc {

namespace fs = std::filesystem;

int run_python(const std::vector<std::string>& module_and_args, const std::string& command, const std::string& needs) {
  const char* chosen = std::getenv("LOOM_PYTHON");
  std::string python = chosen && *chosen ? chosen : LOOM_PYTHON_EXECUTABLE;
  std::error_code ec;
  fs::path self = fs::canonical("/proc/self/exe", ec);
  fs::path build_bin = fs::weakly_canonical(LOOM_BUILD_BINDIR, ec);
  std::string package;
  if (!self.empty() && self.parent_path() == build_bin) {
    // In the build tree: the sources' package, with this build's extension.
    package = LOOM_SOURCE_PYTHONPATH;
    setenv("LOOM_BUILD_DIR", LOOM_BUILD_DIR, 0);
  } else {
    package = (self.parent_path() / LOOM_INSTALLED_PYTHONPATH).lexically_normal().string();
  }
  const char* existing = std::getenv("PYTHONPATH");
  std::string path = existing && *existing ? package + ":" + existing : package;
  setenv("PYTHONPATH", path.c_str(), 1);
  std::vector<std::string> words = {python, "-m"};
  words.insert(words.end(), module_and_args.begin(), module_and_args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  execvp(python.c_str(), argv.data());
  std::cerr << "loomc " << command << ": cannot run " << python << ": " << std::strerror(errno) << " (loomc " << command
            << " runs Python: it needs Python 3 with " << needs << "; set LOOM_PYTHON to another interpreter)\n";
  return 1;
}

int import_model(const std::vector<std::string>& args) {
  std::vector<std::string> words = {"loom.frontend", "import"};
  words.insert(words.end(), args.begin(), args.end());
  return run_python(words, "import", "NumPy and onnx");
}

int tune_model(const std::vector<std::string>& args) {
  std::vector<std::string> words = {"loom.tune"};
  words.insert(words.end(), args.begin(), args.end());
  return run_python(words, "tune", "NumPy, xgboost and (for dask://) distributed");
}

}  // namespace loomc
