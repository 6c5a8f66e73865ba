// One RPC session of loom-rpc-server (docs/rpc.md): the handshake, then
// requests served on the runtime alone (libloom_runtime and the runtime
// halves it loads), in the child process the server forked for it.
#ifndef LOOM_TOOLS_RPC_SERVER_SESSION_H_
#define LOOM_TOOLS_RPC_SERVER_SESSION_H_

#include <string>

#include "loom/rpc/protocol.h"

namespace loom::rpc {

struct SessionOptions {
  std::string key;      // empty: none required
  std::string workdir;  // where uploads go
  Limits limits;
  std::string peer;  // the client's address, for the log
};

// Serves the connection `fd` until the client closes it or sends CLOSE;
// returns the process exit status for the session.
int serve_session(int fd, const SessionOptions& options);

}  // namespace loom::rpc

#endif  // LOOM_TOOLS_RPC_SERVER_SESSION_H_
