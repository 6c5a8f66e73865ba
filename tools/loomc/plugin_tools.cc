// Child processes for `loomc plugin doctor` and `loomc plugin test`: a
// command run with its output captured and a time limit, and a plugin
// loaded in one (see plugin_tools.h).
#include "plugin_tools.h"

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "loom/plugin/manifest.h"
#include "loom/support/strings.h"

extern char** environ;

namespace loomc {

namespace fs = std::filesystem;
// Runs argv[0] (searched on PATH) with extra environment entries, its
// stdout and stderr captured; killed after `timeout_s`.
ChildResult run_child(const std::vector<std::string>& argv, int timeout_s, const std::vector<std::string>& extra_env) {
  ChildResult result;
  int fds[2];
  if (pipe(fds) != 0) return result;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    bool replaced = std::any_of(extra_env.begin(), extra_env.end(), [&](const std::string& x) {
      return entry.compare(0, x.find('=') + 1, x, 0, x.find('=') + 1) == 0;
    });
    if (!replaced) env_text.push_back(entry);
  }
  for (const auto& x : extra_env) env_text.push_back(x);
  std::vector<char*> env;
  for (auto& e : env_text) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    result.output = std::string("cannot start ") + argv[0] + ": " + std::strerror(rc);
    return result;
  }
  result.started = true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  char buffer[4096];
  bool open = true;
  while (open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 200)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    ssize_t n = read(fds[0], buffer, sizeof(buffer));
    if (n <= 0)
      open = false;
    else if (result.output.size() < (1 << 20))
      result.output.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  // Its output closed; it may still not exit (a child that closed its
  // stdout and stderr): the same deadline holds.
  int status = 0;
  for (;;) {
    pid_t done = waitpid(pid, &status, result.timed_out ? 0 : WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (done == 0 && std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      kill(pid, SIGKILL);
    } else if (done == 0) {
      usleep(10000);
    }
  }
  if (result.timed_out) return result;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

std::string self_path() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("loomc") : p.string();
}

// The folder of the core libraries this loomc runs with: a plugin's
// libloom_* dependencies resolve there when it is opened in this process.
std::string core_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&loom::core_cxx_abi_tag), &info) && info.dli_fname) {
    return fs::path(info.dli_fname).parent_path().string();
  }
  return "";
}

namespace {
std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}
}  // namespace

// What `loomc plugins load PATH` in a child said, as one line: its
// error without the "loomc: " and "plugin PATH: " prefixes.
std::string child_failure(const ChildResult& child, const std::string& path, int timeout_s) {
  if (!child.started) return child.output;
  if (child.timed_out) {
    return "did not finish within " + std::to_string(timeout_s) + " s (a hang in init or in a static initialiser)";
  }
  if (child.signal)
    return "the process died of " + signal_name(child.signal) +
           " while loading it (a crash in init or in a static initialiser)";
  std::vector<std::string> errors;
  for (const std::string& raw : loom::split(child.output, '\n')) {
    std::string line = raw;
    if (!loom::starts_with(line, "loomc: ")) continue;
    line = line.substr(7);
    if (loom::starts_with(line, "error: ")) line = line.substr(7);
    std::string prefix = "plugin " + path + ": ";
    if (loom::starts_with(line, prefix)) line = line.substr(prefix.size());
    errors.push_back(line);
  }
  if (errors.empty()) return "exit status " + std::to_string(child.exit_code) + ": " + child.output;
  return loom::join(errors, "; ");
}

ChildResult load_in_child(const std::string& path, int timeout_s) {
  return run_child({self_path(), "plugins", "load", path}, timeout_s);
}

}  // namespace loomc
