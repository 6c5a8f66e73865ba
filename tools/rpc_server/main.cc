// loom-rpc-server (docs/rpc.md): runs, times and profiles built libraries
// for remote clients.  Links libloom_runtime only (the backends' runtime
// halves are plugins it loads when a module needs them): no compiler, no
// Python.  Safe by default: loopback unless --allow-remote (which needs a
// key), the key checked by challenge-response, uploads confined to the
// work folder, and each session in a child process the parent watches, so
// a kernel that crashes or hangs ends its own session only and the client
// is told why.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>

#include "loom/rpc/net.h"
#include "session.h"

namespace {

using loom::rpc::ErrorCode;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  int port = 9090;
  std::string key_file;
  std::string workdir;
  uint64_t max_upload = uint64_t{1} << 30;
  double session_timeout = 600;
  int max_sessions = 64;
  bool allow_remote = false;
};

const char* kUsage =
    "usage: loom-rpc-server [--host ADDR] [--port N] [--key KEYFILE] [--workdir DIR]\n"
    "                       [--max-upload SIZE] [--session-timeout SECONDS] [--max-sessions N]\n"
    "                       [--allow-remote]\n"
    "Serves remote runs of built libraries (docs/rpc.md).  --host defaults to 127.0.0.1;\n"
    "another address needs --allow-remote and --key.  SIZE takes K, M, G (powers of 1024).\n";

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "loom-rpc-server: " << message << "\n" << kUsage;
  std::exit(2);
}

uint64_t parse_size(const std::string& text, const std::string& option) {
  size_t used = 0;
  uint64_t v = 0;
  try {
    v = std::stoull(text, &used);
  } catch (const std::exception&) {
    usage_error(option + " takes a size (bytes, or with K, M, G), got '" + text + "'");
  }
  std::string unit = text.substr(used);
  uint64_t scale = unit.empty() || unit == "B"    ? 1
                   : unit == "K" || unit == "KiB" ? 1u << 10
                   : unit == "M" || unit == "MiB" ? 1u << 20
                   : unit == "G" || unit == "GiB" ? 1u << 30
                                                  : 0;
  if (scale == 0 || v == 0 || v > (uint64_t{1} << 40) / scale) {
    usage_error(option + " takes a size from 1 byte to 1 TiB (bytes, or with K, M, G), got '" + text + "'");
  }
  return v * scale;
}

double parse_number(const std::string& text, const std::string& option, double low, double high) {
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used == text.size() && v >= low && v <= high) return v;
  } catch (const std::exception&) {
  }
  usage_error(option + " takes a number from " + std::to_string(static_cast<int64_t>(low)) + " to " +
              std::to_string(static_cast<int64_t>(high)) + ", got '" + text + "'");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--host") {
      o.host = value();
    } else if (a == "--port") {
      o.port = static_cast<int>(parse_number(value(), a, 0, 65535));
    } else if (a == "--key") {
      o.key_file = value();
    } else if (a == "--workdir") {
      o.workdir = value();
    } else if (a == "--max-upload") {
      o.max_upload = parse_size(value(), a);
    } else if (a == "--session-timeout") {
      o.session_timeout = parse_number(value(), a, 1, 7 * 86400);
    } else if (a == "--max-sessions") {
      o.max_sessions = static_cast<int>(parse_number(value(), a, 1, 4096));
    } else if (a == "--allow-remote") {
      o.allow_remote = true;
    } else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else {
      usage_error("unknown option '" + a + "'");
    }
  }
  return o;
}

std::string peer_text(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    port = ntohs(a->sin6_port);
  }
  return loom::rpc::Endpoint{text, port}.text();
}

volatile sig_atomic_t stopping = 0;
void on_stop(int) { stopping = 1; }

struct Child {
  int fd;
  std::string peer;
  Clock::time_point start;
  bool timed_out = false;
};

// Reports how a session's process ended to its client (when it did not end
// by itself) and closes the parent's side of the connection.
void finish(const Child& child, int status, double timeout) {
  if (child.timed_out) {
    std::string message = "the session timed out after " + std::to_string(static_cast<int64_t>(timeout)) +
                          " s (--session-timeout) and was killed; the server goes on";
    loom::rpc::send_all(child.fd, loom::rpc::encode_error(ErrorCode::kSessionTimeout, message));
    std::cerr << "loom-rpc-server: session of " << child.peer << " timed out" << std::endl;
  } else if (WIFSIGNALED(status)) {
    std::string message = std::string("the session process was killed by SIG") + sigabbrev_np(WTERMSIG(status)) + " (" +
                          strsignal(WTERMSIG(status)) + "): a kernel crashed or a library aborted; the server goes on";
    loom::rpc::send_all(child.fd, loom::rpc::encode_error(ErrorCode::kSessionDied, message));
    std::cerr << "loom-rpc-server: session of " << child.peer << ": " << message << std::endl;
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    std::string message = "the session process exited with status " + std::to_string(WEXITSTATUS(status)) +
                          " (a library called exit?); the server goes on";
    loom::rpc::send_all(child.fd, loom::rpc::encode_error(ErrorCode::kSessionDied, message));
    std::cerr << "loom-rpc-server: session of " << child.peer << ": " << message << std::endl;
  }
  close(child.fd);
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  std::string key;
  try {
    if (!o.key_file.empty()) key = loom::rpc::read_key_file(o.key_file);
  } catch (const std::exception& e) {
    usage_error(e.what());
  }
  if (!loom::rpc::is_loopback(o.host)) {
    if (!o.allow_remote) {
      usage_error("--host " + o.host + " is not a loopback address: serving the network needs --allow-remote");
    }
    if (key.empty()) usage_error("--allow-remote needs --key: without one anyone who reaches the port runs code here");
    std::cerr << "loom-rpc-server: warning: serving " << o.host
              << " beyond this machine; whoever holds the key can run any code as this user "
                 "(the traffic is not encrypted: docs/rpc.md, \"Security\")"
              << std::endl;
  } else if (key.empty()) {
    std::cerr << "loom-rpc-server: warning: no --key; any user of this machine can run code through the server"
              << std::endl;
  }
  namespace fs = std::filesystem;
  try {
    if (o.workdir.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/loom-rpc-XXXXXX";
      if (!mkdtemp(pattern.data())) usage_error("cannot make a work folder under " + pattern);
      o.workdir = pattern;
    } else {
      fs::create_directories(o.workdir);
    }
    o.workdir = fs::canonical(o.workdir).string();
  } catch (const std::exception& e) {
    usage_error(std::string("--workdir: ") + e.what());
  }

  int bound = 0, listener = -1;
  try {
    listener = loom::rpc::listen_on(o.host, o.port, &bound);
  } catch (const std::exception& e) {
    std::cerr << "loom-rpc-server: " << e.what() << std::endl;
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  struct sigaction stop {};
  stop.sa_handler = on_stop;
  sigaction(SIGTERM, &stop, nullptr);
  sigaction(SIGINT, &stop, nullptr);
  std::cout << "loom-rpc-server: listening on " << loom::rpc::Endpoint{o.host, bound}.text() << " (work folder "
            << o.workdir << ")" << std::endl;

  std::map<pid_t, Child> children;
  while (!stopping) {
    pollfd p{listener, POLLIN, 0};
    int ready = poll(&p, 1, 100);
    // Reap ended sessions, and kill those past their time.
    for (;;) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      auto it = children.find(pid);
      if (it == children.end()) continue;
      finish(it->second, status, o.session_timeout);
      children.erase(it);
    }
    for (auto& [pid, child] : children) {
      if (!child.timed_out && std::chrono::duration<double>(Clock::now() - child.start).count() > o.session_timeout) {
        child.timed_out = true;
        kill(pid, SIGKILL);
      }
    }
    if (ready <= 0 || !(p.revents & POLLIN)) continue;
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    int fd = accept4(listener, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;  // replies are small writes: no Nagle delay behind the client's delayed ACK
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::string peer = peer_text(addr);
    if (static_cast<int>(children.size()) >= o.max_sessions) {
      loom::rpc::send_all(
          fd, loom::rpc::encode_error(ErrorCode::kLimit, "the server is at --max-sessions " +
                                                             std::to_string(o.max_sessions) + "; try again later"));
      close(fd);
      continue;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
      loom::rpc::send_all(fd, loom::rpc::encode_error(ErrorCode::kSessionDied, "the server cannot fork a session"));
      close(fd);
      continue;
    }
    if (pid == 0) {
      // A session ends with its server, also one killed with SIGKILL.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      close(listener);
      for (const auto& [other, child] : children) close(child.fd);  // other sessions' connections
      signal(SIGTERM, SIG_DFL);
      signal(SIGINT, SIG_DFL);
      loom::rpc::SessionOptions s{key, o.workdir, loom::rpc::Limits{o.max_upload}, peer};
      int rc = loom::rpc::serve_session(fd, s);
      shutdown(fd, SHUT_RDWR);
      _exit(rc);  // no atexit handlers or static destructors of what the session loaded
    }
    children[pid] = Child{fd, peer, Clock::now()};
  }
  // Stopped: the sessions end with the server.
  for (auto& [pid, child] : children) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(child.fd);
  }
  return 0;
}
