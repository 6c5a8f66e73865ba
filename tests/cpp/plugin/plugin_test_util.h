// Helpers for plugin tests: fixture folders and scratch files.
#ifndef LOOM_TESTS_CPP_PLUGIN_UTIL_H_
#define LOOM_TESTS_CPP_PLUGIN_UTIL_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "loom/object/function.h"
#include "loom/plugin/manager.h"

namespace loom::test {

inline std::string fixture_dir(const std::string& folder) { return std::string(LOOM_FIXTURE_DIR) + "/" + folder; }
inline std::string fixture(const std::string& folder, const std::string& name) {
  return fixture_dir(folder) + "/loom_" + name + ".so";
}

// A fresh scratch folder, removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("loom_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::filesystem::path path_;
};

inline std::string plugin_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const PluginError& e) {
    return e.what();
  }
  return "no PluginError";
}

// The host keeps working after a failure: a good plugin loads and runs.
inline void expect_host_still_works() {
  PluginManager manager({fixture_dir("good")});
  PluginRecord good = manager.load("fx_good");
  EXPECT_EQ(good.state, PluginState::kLoaded);
  EXPECT_EQ(FunctionRegistry::get("fx_good.twice")(21).as_int(), 42);
}

}  // namespace loom::test

#endif
