// Plugin discovery and loading, measured against peers in the same run.
//
// 1. `loomc plugins list` over 50 distinct plugins (copies of one fixture
//    with patched names), as a whole process: Loom reads each manifest from
//    the file.  Peer: a process that dlopen()s the same 50 files, which is
//    what discovering by loading (reading a manifest through code) costs.
// 2. Loading and initialising one trivial plugin in process through
//    PluginManager::load_path (manifest read, checks, Boost.DLL open, init
//    in a registration scope).  Peer: Boost.DLL open + dlsym + the same init
//    call, without the manager.  Each iteration uses a fresh copy, so every
//    load is a real first load.
//
// Prints medians and ratios (Loom / peer).  Targets from the issue: list
// under 30 ms median, load under 5 ms median.
#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "loom/plugin.h"
#include "loom/plugin/manager.h"
#include "bench_util.h"

extern char** environ;
namespace fs = std::filesystem;

namespace {

using loom::bench::Clock;
using loom::bench::median;

// Writes a copy of the template with every "bench_tpl_00" renamed.
void write_copy(const std::string& source_bytes, const fs::path& path, int index) {
  char name[16];
  std::snprintf(name, sizeof(name), "bench_tpl_%02d", index % 100);
  std::string bytes = source_bytes;
  const std::string from = "bench_tpl_00";
  for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + from.size()))
    bytes.replace(at, from.size(), name);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs argv with LOOM_PLUGIN_PATH=dir and stdout to /dev/null; returns ms.
double time_process(const std::vector<std::string>& argv, const std::string& plugin_dir) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::string env_entry = "LOOM_PLUGIN_PATH=" + plugin_dir;
  std::vector<char*> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "LOOM_PLUGIN_PATH=", 17) != 0) env.push_back(*e);
  env.push_back(const_cast<char*>(env_entry.c_str()));
  env.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  auto start = Clock::now();
  pid_t pid;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), env.data()) != 0) {
    std::perror("posix_spawn");
    std::exit(1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  posix_spawn_file_actions_destroy(&actions);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s exited with status %d\n", args[0], status);
    std::exit(1);
  }
  return ms;
}

// The peer of `plugins list`: open every plugin in the folder.
int dlopen_all(const std::string& dir) {
  std::vector<boost::dll::shared_library> libraries;
  for (const auto& entry : fs::directory_iterator(dir))
    libraries.emplace_back(entry.path(), boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  std::printf("%zu\n", libraries.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--dlopen-all") return dlopen_all(argv[2]);
  int runs = argc > 1 ? std::max(5, std::atoi(argv[1])) : 31;
  const std::string self = fs::canonical("/proc/self/exe").string();
  const std::string template_bytes = read_file(LOOM_BENCH_TEMPLATE);
  fs::path root = fs::temp_directory_path() / ("loom_bench_" + std::to_string(::getpid()));
  fs::create_directories(root / "list");

  // 1. Listing 50 plugins.
  for (int i = 1; i <= 50; ++i)
    write_copy(template_bytes, root / "list" / ("loom_bench_" + std::to_string(i) + ".so"), i);
  std::vector<double> loom_list, peer_list;
  std::string dir = (root / "list").string();
  time_process({LOOM_BENCH_LOOMC, "plugins", "list"}, dir);  // warm the page cache
  for (int i = 0; i < runs; ++i) {
    loom_list.push_back(time_process({LOOM_BENCH_LOOMC, "plugins", "list"}, dir));
    peer_list.push_back(time_process({self, "--dlopen-all", dir}, dir));
  }
  // Sanity: Loom saw all 50 plugins (plus the build tree's own).
  loom::PluginManager check({dir});
  size_t discovered = 0;
  for (const auto& r : check.list()) discovered += r.state == loom::PluginState::kDiscovered;
  if (discovered != 50) {
    std::fprintf(stderr, "expected 50 discovered plugins, got %zu\n", discovered);
    return 1;
  }

  // 2. Loading and initialising one trivial plugin, in process.
  fs::create_directories(root / "load");
  std::vector<double> loom_load, peer_load;
  int copy = 51;
  loom::PluginManager manager({});
  for (int i = 0; i < runs && copy < 100; ++i) {
    fs::path a = root / "load" / ("loom_a" + std::to_string(i) + ".so");
    fs::path b = root / "load" / ("loom_b" + std::to_string(i) + ".so");
    write_copy(template_bytes, a, copy++);
    write_copy(template_bytes, b, copy++);

    auto start = Clock::now();
    loom::PluginRecord r = manager.load_path(a.string());
    loom_load.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (r.state != loom::PluginState::kLoaded) return 1;

    start = Clock::now();
    auto* library =
        new boost::dll::shared_library(b, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    auto init = library->get<int(const LoomPluginHost*, char*, size_t)>(LOOM_PLUGIN_INIT_SYMBOL);
    LoomPluginHost host{
        sizeof(LoomPluginHost), LOOM_PLUGIN_ABI_MAJOR, LOOM_PLUGIN_ABI_MINOR, "0.1.0", "peer", "peer", 0};
    char error[256];
    if (init(&host, error, sizeof(error)) != 0) return 1;
    peer_load.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  fs::remove_all(root);

  double ll = median(loom_list), pl = median(peer_list), lo = median(loom_load), po = median(peer_load);
  std::printf("plugin benchmarks (%d runs each, medians)\n", runs);
  std::printf(
      "  loomc plugins list, 50 plugins: %7.2f ms  | peer dlopen all 50: %7.2f ms | ratio %.2f | target < 30 ms: %s\n",
      ll, pl, ll / pl, ll < 30 ? "met" : "MISSED");
  std::printf(
      "  load + init one plugin:         %7.3f ms  | peer raw open+init: %7.3f ms | ratio %.2f | target < 5 ms: %s\n",
      lo, po, lo / po, lo < 5 ? "met" : "MISSED");
  return 0;
}
