// Helpers shared by the C++ tests.
#ifndef LOOM_TESTS_CPP_TEST_UTIL_H_
#define LOOM_TESTS_CPP_TEST_UTIL_H_

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::test {

// The message of the exception `fn` throws, or "no error".
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

// A malformed-input fixture: a file whose first line is
// "# expect-error: LINE:COL: MESSAGE".
struct ExpectedErrorFile {
  std::string name;      // the file name, used as the source name
  std::string text;      // the whole file
  std::string expected;  // "NAME:LINE:COL: MESSAGE"
};

// Every file in `dir`, sorted by name; throws if one lacks the header.
inline std::vector<ExpectedErrorFile> expected_error_files(const std::string& dir) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  std::vector<ExpectedErrorFile> out;
  const std::string marker = "# expect-error: ";
  for (const auto& path : paths) {
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    if (text.rfind(marker, 0) != 0) throw std::runtime_error(path.string() + " lacks an expect-error header");
    std::string name = path.filename().string();
    out.push_back({name, text, name + ":" + text.substr(marker.size(), text.find('\n') - marker.size())});
  }
  return out;
}

// `n` uniform floats in [lo, hi) from a fixed seed.
inline std::vector<float> random_floats(size_t n, unsigned seed, float lo = -10, float hi = 10) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (auto& v : out) v = dist(rng);
  return out;
}

// Runs a shell command; its exit status and its stdout and stderr together.
struct CommandResult {
  int status;
  std::string output;
};
inline CommandResult run_command(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run " + command);
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// A folder under the system temporary folder, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "loom-test-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace loom::test

#endif
