// Helpers shared by the C++ tests.
#ifndef LOOM_TESTS_CPP_TEST_UTIL_H_
#define LOOM_TESTS_CPP_TEST_UTIL_H_

#include <algorithm>
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

}  // namespace loom::test

#endif
