// Sockets, the handshake's cryptography and the C++ client of the RPC
// protocol (docs/rpc.md): what loom-rpc-server and `loomc run --remote`
// share.  The MACs and nonces are OpenSSL's (libcrypto).
#ifndef LOOM_RPC_NET_H_
#define LOOM_RPC_NET_H_

#include <string>
#include <string_view>

#include "loom/rpc/protocol.h"

namespace loom::rpc {

struct Endpoint {
  std::string host;
  int port = 0;
  std::string text() const;  // "host:port", "[v6%if]:port"
};
// "HOST:PORT" or "[IPV6]:PORT"; ProtocolError naming the text otherwise.
Endpoint parse_endpoint(const std::string& text);
bool is_loopback(const std::string& host);

// A listening TCP socket on host:port (port 0: a free one, written to
// *bound_port); std::runtime_error naming the address on failure.
int listen_on(const std::string& host, int port, int* bound_port);
// A connected socket; ProtocolError naming the endpoint on failure.
int connect_to(const Endpoint& endpoint, double timeout_seconds);

// Writes all of `bytes`; false when the peer has gone.
bool send_all(int fd, std::string_view bytes);
// Reads the next frame through `reader`.  False at a clean end of stream
// between frames; ProtocolError for an end of stream mid-frame or a frame
// over its limit.
bool read_frame(int fd, FrameReader& reader, Frame* out);

std::string hmac_sha256(std::string_view key, std::string_view data);
std::string random_bytes(size_t n);
bool same_bytes(std::string_view a, std::string_view b);  // in constant time for equal lengths

// The shared secret in `path` (surrounding whitespace dropped); Error-text
// runtime_error when the file cannot be read, is readable by other users
// or holds fewer than 16 bytes.
std::string read_key_file(const std::string& path);

// A session with a server: the handshake in the constructor, then one
// request and its reply at a time.  Errors are ProtocolErrors with the
// server's code and message.
class Client {
 public:
  Client(const std::string& endpoint, const std::string& key, double connect_timeout = 10);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  Value request(const Request& request);
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  Endpoint endpoint_;
  int fd_ = -1;
  FrameReader reader_;
};

}  // namespace loom::rpc

#endif  // LOOM_RPC_NET_H_
