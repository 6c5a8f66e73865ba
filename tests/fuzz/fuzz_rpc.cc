// The RPC server's message reader (docs/rpc.md): any bytes are split
// into frames and decoded into requests, or refused with a ProtocolError;
// a request that decodes encodes back to the same frame.  Memory kept
// never exceeds what arrived (a frame's announced size is checked first).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "loom/rpc/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom::rpc;  // NOLINT
  if (size == 0) return 0;
  // The first byte picks the piece size the stream arrives in.
  size_t piece = 1 + data[0] % 17;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  FrameReader reader(Limits{4096});
  bool first = true;
  try {
    for (size_t at = 0; at < input.size(); at += piece) {
      reader.feed(input.substr(at, piece));
      Frame frame;
      while (reader.next(&frame)) {
        if (frame.payload.size() > input.size()) {
          std::fprintf(stderr, "fuzz: a payload of %zu bytes from %zu bytes of input\n", frame.payload.size(),
                       input.size());
          std::abort();
        }
        try {
          if (first) {
            decode_hello(frame, false);
            first = false;
            continue;
          }
          Request r = decode_request(frame);
          std::string again = encode_request(r);
          if (again != encode_frame(frame.type, frame.payload)) {
            std::fprintf(stderr, "fuzz: a %s request does not encode back to its frame\n",
                         message_name(frame.type).c_str());
            std::abort();
          }
        } catch (const ProtocolError&) {
        }
        try {
          decode_ok(frame);
        } catch (const ProtocolError&) {
        }
      }
    }
  } catch (const ProtocolError&) {
  }
  return 0;
}
