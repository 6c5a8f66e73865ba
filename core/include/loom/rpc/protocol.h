// The RPC wire format (docs/rpc.md, "The protocol"): frames, payload
// fields and values, shared by loom-rpc-server, loomc's client and the
// fuzz target.  Plain C++ on bytes, no Loom object: a server trusts nothing
// it reads, so every length here is checked against a limit or against
// what is left before anything is allocated, and every refusal is a
// ProtocolError naming the field.
#ifndef LOOM_RPC_PROTOCOL_H_
#define LOOM_RPC_PROTOCOL_H_

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace loom::rpc {

constexpr uint32_t kProtocolVersion = 1;
constexpr std::string_view kMagic = "loom-rpc";
constexpr size_t kNonceBytes = 32;
constexpr size_t kHeaderBytes = 12;           // u32 type, u64 size
constexpr uint64_t kControlLimit = 1u << 20;  // a frame that carries no data
constexpr uint64_t kDataSlack = 64u << 10;    // a data frame: max_upload plus this
constexpr uint64_t kReadPiece = 1u << 20;     // payloads are read in pieces of this
constexpr int kMaxValueDepth = 16;
constexpr uint32_t kMaxRank = 32;

enum class Msg : uint32_t {
  kHello = 1,
  kAuth = 2,
  kUpload = 10,
  kLoadModule = 11,
  kGetFunction = 12,
  kFunctionNames = 13,
  kDevices = 14,
  kArrayEmpty = 15,
  kArraySet = 16,
  kArrayGet = 17,
  kCall = 18,
  kTimeEvaluator = 19,
  kProfile = 20,
  kRelease = 21,
  kClose = 22,
  kInfo = 23,
  kOk = 100,
  kError = 101,
};
// "UPLOAD", ...; "message 77" for a type this version does not know.
std::string message_name(uint32_t type);

enum class ErrorCode : uint32_t {
  kProtocol = 1,
  kAuthentication = 2,
  kVersion = 3,
  kLimit = 4,
  kPath = 5,
  kRemote = 6,
  kSessionDied = 7,
  kSessionTimeout = 8,
};

// A refusal of what was read (or of a request the server cannot serve):
// its code travels in the ERROR frame.
class ProtocolError : public std::runtime_error {
 public:
  ProtocolError(ErrorCode code, const std::string& message) : std::runtime_error(message), code(code) {}
  ErrorCode code;
};

struct Limits {
  uint64_t max_upload = uint64_t{1} << 30;
};
// The largest payload a frame of `type` may announce: data frames (UPLOAD,
// ARRAY_SET, and OK, which carries ARRAY_GET's bytes) max_upload plus
// kDataSlack, the others kControlLimit.
uint64_t frame_limit(uint32_t type, const Limits& limits);

struct Frame {
  uint32_t type = 0;
  std::string payload;
};

// Splits a byte stream into frames.  The header is checked (a type's
// limit) as soon as its 12 bytes are in, before any payload is kept, so a
// frame announcing 2^62 bytes is refused at once; the payload is kept
// only as it arrives.
class FrameReader {
 public:
  explicit FrameReader(Limits limits) : limits_(limits) {}
  // Appends bytes read from the stream.
  void feed(std::string_view bytes);
  // The next whole frame, if one is in; throws ProtocolError(kLimit) for a
  // header over its type's limit.
  bool next(Frame* out);
  // How many more bytes the frame in progress needs (at least 1), capped
  // at kReadPiece: what to ask the stream for next.
  uint64_t wanted() const;
  bool mid_frame() const { return !buffer_.empty() || have_header_; }

 private:
  Limits limits_;
  std::string buffer_;
  bool have_header_ = false;
  uint32_t type_ = 0;
  uint64_t size_ = 0;
};

std::string encode_frame(uint32_t type, std::string_view payload);

// A value on the wire: arguments and results of remote functions.
struct Value {
  enum Kind : uint8_t {
    kNone = 0,
    kBool = 1,
    kInt = 2,
    kFloat = 3,
    kStr = 4,
    kBytes = 5,
    kHandle = 6,
    kTensor = 7,
    kTuple = 8
  };
  Kind kind = kNone;
  int64_t i = 0;               // bool, int
  double f = 0;                // float
  std::string s;               // str, bytes
  uint64_t handle = 0;         // handle, tensor
  std::string dtype, device;   // tensor: "float32", "cpu:0"
  std::vector<int64_t> shape;  // tensor
  std::vector<Value> items;    // tuple

  static Value none() { return Value(); }
  static Value integer(int64_t v);
  static Value real(double v);
  static Value string(std::string v);
  static Value blob(std::string v);
  static Value of_handle(uint64_t h);
  static Value tuple(std::vector<Value> items);
  std::string describe() const;  // "int", "tensor float32 (4, 16) on cpu:0", ...
};

class Writer {
 public:
  Writer& u8(uint8_t v);
  Writer& u32(uint32_t v);
  Writer& i64(int64_t v);
  Writer& u64(uint64_t v);
  Writer& f64(double v);
  Writer& str(std::string_view v);    // u32 length
  Writer& bytes(std::string_view v);  // u64 length
  Writer& raw(std::string_view v);    // no length
  Writer& value(const Value& v);
  std::string take() { return std::move(out_); }
  const std::string& data() const { return out_; }

 private:
  std::string out_;
};

// Reads the fields of one payload; every read names its field in the
// ProtocolError it throws when the payload ends early or a length
// overruns it.  `what` ("CALL") starts each message.
class Reader {
 public:
  Reader(std::string_view payload, std::string what) : data_(payload), what_(std::move(what)) {}
  uint8_t u8(const char* field);
  uint32_t u32(const char* field);
  int64_t i64(const char* field);
  uint64_t u64(const char* field);
  double f64(const char* field);
  std::string_view str(const char* field, uint32_t max = 4096);
  std::string_view bytes(const char* field);
  std::string_view raw(size_t n, const char* field);
  Value value(const char* field, int depth = 0);
  std::vector<Value> values(const char* field);  // u32 count, then values
  // Refuses bytes left over after the last field.
  void end();
  size_t left() const { return data_.size() - pos_; }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& why) const;
  std::string_view take(size_t n, const char* field);
  std::string_view data_;
  size_t pos_ = 0;
  std::string what_;
};

// A request the server serves, decoded and checked (names, shapes,
// counts): what the fuzz target drives.
struct Request {
  Msg type = Msg::kClose;
  std::string name;               // UPLOAD, LOAD_MODULE, GET_FUNCTION
  std::string data;               // UPLOAD, ARRAY_SET
  uint64_t handle = 0;            // GET_FUNCTION, FUNCTION_NAMES, ARRAY_*, CALL, TIME_EVALUATOR, PROFILE
  std::vector<uint64_t> handles;  // RELEASE
  std::string device;             // ARRAY_EMPTY, TIME_EVALUATOR
  std::string dtype;              // ARRAY_EMPTY
  std::vector<int64_t> shape;
  std::vector<Value> args;  // CALL, TIME_EVALUATOR
  int64_t number = 1, repeat = 1;
  double min_repeat_ms = 0;
  bool cache_flush = false;
  uint8_t action = 0;  // PROFILE: 0 read, 1 start (clearing), 2 stop
};
// A frame after the handshake as a request; ProtocolError for an unknown
// or out-of-place type, malformed fields or trailing bytes.
Request decode_request(const Frame& frame);
std::string encode_request(const Request& request);

// Upload names: one plain file name of [A-Za-z0-9._-], not starting with
// '.', at most 255 bytes; ProtocolError(kPath) naming it otherwise.
void check_file_name(std::string_view name);

// The handshake's frames.
struct Hello {
  uint32_t version = kProtocolVersion;
  bool key_required = false;  // server's only
  std::string nonce;          // server's only: kNonceBytes
};
std::string encode_hello(const Hello& hello, bool from_server);
Hello decode_hello(const Frame& frame, bool from_server);
// "protocol version mismatch: ..." for the two versions.
std::string version_mismatch(uint32_t server, uint32_t client);

// The error frame's payload.
std::string encode_error(ErrorCode code, std::string_view message);
ProtocolError decode_error(const Frame& frame);
std::string encode_ok(const Value& value);
Value decode_ok(const Frame& frame);

// The strings the two MACs of the handshake are taken over.
std::string client_proof_input(std::string_view server_nonce, std::string_view client_nonce);
std::string server_proof_input(std::string_view server_nonce, std::string_view client_nonce);

}  // namespace loom::rpc

#endif  // LOOM_RPC_PROTOCOL_H_
