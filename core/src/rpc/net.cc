// Sockets, MACs and the C++ client of the RPC protocol (docs/rpc.md).
#include "loom/rpc/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace loom::rpc {

std::string Endpoint::text() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Endpoint parse_endpoint(const std::string& text) {
  auto refuse = [&]() -> Endpoint {
    throw ProtocolError(ErrorCode::kProtocol, "'" + text + "' is not HOST:PORT (or [IPV6]:PORT)");
  };
  Endpoint e;
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return refuse();
  e.host = text.substr(0, colon);
  if (e.host.front() == '[') {
    if (e.host.back() != ']') return refuse();
    e.host = e.host.substr(1, e.host.size() - 2);
  } else if (e.host.find(':') != std::string::npos) {
    return refuse();
  }
  std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return refuse();
  e.port = std::stoi(port);
  if (e.port > 65535) return refuse();
  return e;
}

bool is_loopback(const std::string& host) { return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0; }

namespace {

addrinfo* resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) throw std::runtime_error("cannot resolve '" + host + "': " + gai_strerror(rc));
  return found;
}

}  // namespace

int listen_on(const std::string& host, int port, int* bound_port) {
  addrinfo* found = resolve(host, port, true);
  std::string why = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
      *bound_port = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                                     : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
      freeaddrinfo(found);
      return fd;
    }
    why = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  throw std::runtime_error("cannot listen on " + Endpoint{host, port}.text() + ": " + why);
}

int connect_to(const Endpoint& endpoint, double timeout_seconds) {
  addrinfo* found = nullptr;
  try {
    found = resolve(endpoint.host, endpoint.port, false);
  } catch (const std::runtime_error& e) {
    throw ProtocolError(ErrorCode::kProtocol, e.what());
  }
  std::string why = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = poll(&p, 1, static_cast<int>(timeout_seconds * 1000));
      int err = 0;
      socklen_t len = sizeof err;
      if (rc == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
        rc = 0;
      } else {
        errno = rc == 0 ? ETIMEDOUT : err;
        rc = -1;
      }
    }
    if (rc == 0) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      freeaddrinfo(found);
      return fd;
    }
    why = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  throw ProtocolError(ErrorCode::kProtocol, "cannot connect to " + endpoint.text() + ": " + why);
}

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool read_frame(int fd, FrameReader& reader, Frame* out) {
  std::string piece;
  while (!reader.next(out)) {
    piece.resize(reader.wanted());
    ssize_t n = recv(fd, piece.data(), piece.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!reader.mid_frame()) return false;
      throw ProtocolError(ErrorCode::kProtocol, "the connection ended in the middle of a frame");
    }
    reader.feed(std::string_view(piece.data(), static_cast<size_t>(n)));
  }
  return true;
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
            data.size(), out, &len)) {
    throw std::runtime_error("HMAC-SHA256 failed");
  }
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    throw std::runtime_error("no random bytes from OpenSSL");
  }
  return out;
}

bool same_bytes(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string read_key_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw std::runtime_error("key file " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw std::runtime_error("key file " + path + " is not a regular file");
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    throw std::runtime_error("key file " + path + " is readable by other users; chmod 600 it");
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  std::string key = s.str();
  size_t first = key.find_first_not_of(" \t\r\n"), last = key.find_last_not_of(" \t\r\n");
  key = first == std::string::npos ? "" : key.substr(first, last - first + 1);
  if (key.size() < 16) {
    throw std::runtime_error("key file " + path + " holds " + std::to_string(key.size()) +
                             " bytes; a key needs at least 16 (for example: head -c 32 /dev/urandom | base64 > " +
                             path + ")");
  }
  return key;
}

Client::Client(const std::string& endpoint, const std::string& key, double connect_timeout)
    : endpoint_(parse_endpoint(endpoint)), reader_(Limits{uint64_t{1} << 40}) {
  fd_ = connect_to(endpoint_, connect_timeout);
  try {
    if (!send_all(fd_, encode_hello(Hello{}, false))) throw ProtocolError(ErrorCode::kProtocol, "connection lost");
    Frame frame;
    if (!read_frame(fd_, reader_, &frame)) {
      throw ProtocolError(ErrorCode::kProtocol, "the server at " + endpoint_.text() + " closed the connection");
    }
    Hello hello = decode_hello(frame, true);
    if (hello.version != kProtocolVersion) {
      throw ProtocolError(ErrorCode::kVersion, version_mismatch(hello.version, kProtocolVersion));
    }
    if (hello.key_required && key.empty()) {
      throw ProtocolError(ErrorCode::kAuthentication, "the server at " + endpoint_.text() + " requires a key");
    }
    std::string client_nonce = random_bytes(kNonceBytes);
    std::string proof =
        hello.key_required ? hmac_sha256(key, client_proof_input(hello.nonce, client_nonce)) : std::string(32, '\0');
    Writer w;
    w.raw(client_nonce).raw(proof);
    if (!send_all(fd_, encode_frame(static_cast<uint32_t>(Msg::kAuth), w.data()))) {
      throw ProtocolError(ErrorCode::kProtocol, "connection lost");
    }
    if (!read_frame(fd_, reader_, &frame)) {
      throw ProtocolError(ErrorCode::kProtocol, "the server at " + endpoint_.text() + " closed the connection");
    }
    Value back = decode_ok(frame);
    if (hello.key_required && (back.kind != Value::kBytes ||
                               !same_bytes(back.s, hmac_sha256(key, server_proof_input(hello.nonce, client_nonce))))) {
      throw ProtocolError(ErrorCode::kAuthentication, "the server at " + endpoint_.text() + " does not hold the key");
    }
  } catch (...) {
    close(fd_);
    throw;
  }
}

Client::~Client() {
  if (fd_ >= 0) {
    send_all(fd_, encode_request(Request{}));  // CLOSE
    close(fd_);
  }
}

Value Client::request(const Request& request) {
  if (!send_all(fd_, encode_request(request))) {
    throw ProtocolError(ErrorCode::kSessionDied, "the connection to " + endpoint_.text() + " was lost");
  }
  Frame frame;
  if (!read_frame(fd_, reader_, &frame)) {
    throw ProtocolError(ErrorCode::kSessionDied, "the server at " + endpoint_.text() + " ended the session");
  }
  return decode_ok(frame);
}

}  // namespace loom::rpc
