// The RPC wire format (docs/rpc.md, "The protocol").  Everything read is
// checked against a limit or what is left of its payload before it is
// allocated; refusals are ProtocolErrors naming the message and field.
#include "loom/rpc/protocol.h"

#include <cstring>
#include <sstream>

namespace loom::rpc {

namespace {

bool carries_data(uint32_t type) {
  return type == static_cast<uint32_t>(Msg::kUpload) || type == static_cast<uint32_t>(Msg::kArraySet) ||
         type == static_cast<uint32_t>(Msg::kOk);
}

template <class T>
void put(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // little-endian hosts only (x86-64, AArch64)
  out.append(bytes, sizeof(T));
}

template <class T>
T get(std::string_view bytes) {
  T v;
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

}  // namespace

std::string message_name(uint32_t type) {
  switch (static_cast<Msg>(type)) {
    case Msg::kHello:
      return "HELLO";
    case Msg::kAuth:
      return "AUTH";
    case Msg::kUpload:
      return "UPLOAD";
    case Msg::kLoadModule:
      return "LOAD_MODULE";
    case Msg::kGetFunction:
      return "GET_FUNCTION";
    case Msg::kFunctionNames:
      return "FUNCTION_NAMES";
    case Msg::kDevices:
      return "DEVICES";
    case Msg::kArrayEmpty:
      return "ARRAY_EMPTY";
    case Msg::kArraySet:
      return "ARRAY_SET";
    case Msg::kArrayGet:
      return "ARRAY_GET";
    case Msg::kCall:
      return "CALL";
    case Msg::kTimeEvaluator:
      return "TIME_EVALUATOR";
    case Msg::kProfile:
      return "PROFILE";
    case Msg::kRelease:
      return "RELEASE";
    case Msg::kClose:
      return "CLOSE";
    case Msg::kInfo:
      return "INFO";
    case Msg::kOk:
      return "OK";
    case Msg::kError:
      return "ERROR";
  }
  return "message " + std::to_string(type);
}

uint64_t frame_limit(uint32_t type, const Limits& limits) {
  return carries_data(type) ? limits.max_upload + kDataSlack : kControlLimit;
}

void FrameReader::feed(std::string_view bytes) { buffer_.append(bytes.data(), bytes.size()); }

bool FrameReader::next(Frame* out) {
  if (!have_header_) {
    if (buffer_.size() < kHeaderBytes) return false;
    type_ = get<uint32_t>(buffer_);
    size_ = get<uint64_t>(std::string_view(buffer_).substr(4));
    uint64_t limit = frame_limit(type_, limits_);
    if (size_ > limit) {
      throw ProtocolError(ErrorCode::kLimit, "a " + message_name(type_) + " frame announces " + std::to_string(size_) +
                                                 " bytes; the limit is " + std::to_string(limit));
    }
    buffer_.erase(0, kHeaderBytes);
    have_header_ = true;
  }
  if (buffer_.size() < size_) return false;
  out->type = type_;
  out->payload = buffer_.substr(0, size_);
  buffer_.erase(0, size_);
  have_header_ = false;
  return true;
}

uint64_t FrameReader::wanted() const {
  uint64_t need = have_header_ ? (size_ > buffer_.size() ? size_ - buffer_.size() : 0)
                               : (buffer_.size() < kHeaderBytes ? kHeaderBytes - buffer_.size() : 0);
  if (need == 0) need = 1;
  return need < kReadPiece ? need : kReadPiece;
}

std::string encode_frame(uint32_t type, std::string_view payload) {
  std::string out;
  out.reserve(kHeaderBytes + payload.size());
  put<uint32_t>(out, type);
  put<uint64_t>(out, payload.size());
  out.append(payload.data(), payload.size());
  return out;
}

Value Value::integer(int64_t v) {
  Value x;
  x.kind = kInt;
  x.i = v;
  return x;
}
Value Value::real(double v) {
  Value x;
  x.kind = kFloat;
  x.f = v;
  return x;
}
Value Value::string(std::string v) {
  Value x;
  x.kind = kStr;
  x.s = std::move(v);
  return x;
}
Value Value::blob(std::string v) {
  Value x;
  x.kind = kBytes;
  x.s = std::move(v);
  return x;
}
Value Value::of_handle(uint64_t h) {
  Value x;
  x.kind = kHandle;
  x.handle = h;
  return x;
}
Value Value::tuple(std::vector<Value> items) {
  Value x;
  x.kind = kTuple;
  x.items = std::move(items);
  return x;
}

std::string Value::describe() const {
  switch (kind) {
    case kNone:
      return "none";
    case kBool:
      return "bool";
    case kInt:
      return "int";
    case kFloat:
      return "float";
    case kStr:
      return "str";
    case kBytes:
      return "bytes";
    case kHandle:
      return "handle";
    case kTensor: {
      std::ostringstream s;
      s << "tensor " << dtype << " (";
      for (size_t k = 0; k < shape.size(); ++k) s << (k ? ", " : "") << shape[k];
      s << ") on " << device;
      return s.str();
    }
    case kTuple:
      return "tuple of " + std::to_string(items.size());
  }
  return "?";
}

Writer& Writer::u8(uint8_t v) {
  put(out_, v);
  return *this;
}
Writer& Writer::u32(uint32_t v) {
  put(out_, v);
  return *this;
}
Writer& Writer::i64(int64_t v) {
  put(out_, v);
  return *this;
}
Writer& Writer::u64(uint64_t v) {
  put(out_, v);
  return *this;
}
Writer& Writer::f64(double v) {
  put(out_, v);
  return *this;
}
Writer& Writer::str(std::string_view v) {
  put<uint32_t>(out_, static_cast<uint32_t>(v.size()));
  out_.append(v.data(), v.size());
  return *this;
}
Writer& Writer::bytes(std::string_view v) {
  put<uint64_t>(out_, v.size());
  out_.append(v.data(), v.size());
  return *this;
}
Writer& Writer::raw(std::string_view v) {
  out_.append(v.data(), v.size());
  return *this;
}

Writer& Writer::value(const Value& v) {
  u8(v.kind);
  switch (v.kind) {
    case Value::kNone:
      break;
    case Value::kBool:
      u8(v.i != 0);
      break;
    case Value::kInt:
      i64(v.i);
      break;
    case Value::kFloat:
      f64(v.f);
      break;
    case Value::kStr:
      str(v.s);
      break;
    case Value::kBytes:
      bytes(v.s);
      break;
    case Value::kHandle:
      u64(v.handle);
      break;
    case Value::kTensor:
      u64(v.handle).str(v.dtype).str(v.device).u32(static_cast<uint32_t>(v.shape.size()));
      for (int64_t d : v.shape) i64(d);
      break;
    case Value::kTuple:
      u32(static_cast<uint32_t>(v.items.size()));
      for (const Value& item : v.items) value(item);
      break;
  }
  return *this;
}

void Reader::fail(const std::string& field, const std::string& why) const {
  throw ProtocolError(ErrorCode::kProtocol, what_ + ": " + field + ": " + why);
}

std::string_view Reader::take(size_t n, const char* field) {
  if (n > left()) {
    fail(field, "needs " + std::to_string(n) + " byte(s), the payload has " + std::to_string(left()) + " left");
  }
  std::string_view out = data_.substr(pos_, n);
  pos_ += n;
  return out;
}

uint8_t Reader::u8(const char* field) { return get<uint8_t>(take(1, field)); }
uint32_t Reader::u32(const char* field) { return get<uint32_t>(take(4, field)); }
int64_t Reader::i64(const char* field) { return get<int64_t>(take(8, field)); }
uint64_t Reader::u64(const char* field) { return get<uint64_t>(take(8, field)); }
double Reader::f64(const char* field) { return get<double>(take(8, field)); }
std::string_view Reader::raw(size_t n, const char* field) { return take(n, field); }

std::string_view Reader::str(const char* field, uint32_t max) {
  uint32_t n = u32(field);
  if (n > max) fail(field, "a string of " + std::to_string(n) + " bytes; at most " + std::to_string(max));
  return take(n, field);
}

std::string_view Reader::bytes(const char* field) {
  uint64_t n = u64(field);
  if (n > left()) {
    fail(field, "announces " + std::to_string(n) + " byte(s), the payload has " + std::to_string(left()) + " left");
  }
  return take(static_cast<size_t>(n), field);
}

Value Reader::value(const char* field, int depth) {
  if (depth > kMaxValueDepth) fail(field, "values nest deeper than " + std::to_string(kMaxValueDepth));
  Value v;
  uint8_t kind = u8(field);
  switch (kind) {
    case Value::kNone:
      break;
    case Value::kBool: {
      uint8_t b = u8(field);
      if (b > 1) fail(field, "a bool of " + std::to_string(b));
      v.i = b;
      break;
    }
    case Value::kInt:
      v.i = i64(field);
      break;
    case Value::kFloat:
      v.f = f64(field);
      break;
    case Value::kStr:
      v.s = std::string(str(field, 1u << 20));
      break;
    case Value::kBytes:
      v.s = std::string(bytes(field));
      break;
    case Value::kHandle:
      v.handle = u64(field);
      break;
    case Value::kTensor: {
      v.handle = u64(field);
      v.dtype = std::string(str(field, 64));
      v.device = std::string(str(field, 64));
      uint32_t rank = u32(field);
      if (rank > kMaxRank)
        fail(field, "a tensor of rank " + std::to_string(rank) + "; at most " + std::to_string(kMaxRank));
      for (uint32_t k = 0; k < rank; ++k) v.shape.push_back(i64(field));
      break;
    }
    case Value::kTuple: {
      uint32_t n = u32(field);
      if (n > left())
        fail(field, "a tuple of " + std::to_string(n) + " values in " + std::to_string(left()) + " bytes");
      v.items.reserve(n);
      for (uint32_t k = 0; k < n; ++k) v.items.push_back(value(field, depth + 1));
      break;
    }
    default:
      fail(field, "unknown value kind " + std::to_string(kind));
  }
  v.kind = static_cast<Value::Kind>(kind);
  return v;
}

std::vector<Value> Reader::values(const char* field) {
  uint32_t n = u32(field);
  if (n > left()) fail(field, std::to_string(n) + " values in " + std::to_string(left()) + " bytes");
  std::vector<Value> out;
  out.reserve(n);
  for (uint32_t k = 0; k < n; ++k) out.push_back(value(field, 1));
  return out;
}

void Reader::end() {
  if (left() != 0) fail("end", std::to_string(left()) + " byte(s) after the last field");
}

void check_file_name(std::string_view name) {
  auto refuse = [&](const std::string& why) {
    throw ProtocolError(ErrorCode::kPath, "the file name '" + std::string(name.substr(0, 300)) + "' " + why +
                                              " (one plain file name of letters, digits, '.', '_' and '-', "
                                              "not starting with '.', is what the work folder takes)");
  };
  if (name.empty()) refuse("is empty");
  if (name.size() > 255) refuse("is longer than 255 bytes");
  if (name[0] == '.') refuse("starts with '.'");
  for (char c : name) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (c == '/') refuse("has a '/': uploads go in the work folder itself, never elsewhere");
    if (!ok) refuse("has the byte " + std::to_string(static_cast<unsigned char>(c)));
  }
}

Request decode_request(const Frame& frame) {
  Request r;
  r.type = static_cast<Msg>(frame.type);
  Reader in(frame.payload, message_name(frame.type));
  auto shape = [&](const char* field) {
    uint32_t rank = in.u32(field);
    if (rank > kMaxRank) {
      throw ProtocolError(ErrorCode::kProtocol, message_name(frame.type) + ": " + field + ": rank " +
                                                    std::to_string(rank) + "; at most " + std::to_string(kMaxRank));
    }
    std::vector<int64_t> out;
    for (uint32_t k = 0; k < rank; ++k) {
      int64_t d = in.i64(field);
      if (d < 0 || d > (int64_t{1} << 40)) {
        throw ProtocolError(ErrorCode::kProtocol, message_name(frame.type) + ": " + field + ": extent " +
                                                      std::to_string(d) + " out of range");
      }
      out.push_back(d);
    }
    return out;
  };
  switch (r.type) {
    case Msg::kUpload:
      r.name = std::string(in.str("name", 255 + 64));
      check_file_name(r.name);
      r.data = std::string(in.bytes("data"));
      break;
    case Msg::kLoadModule:
      r.name = std::string(in.str("name", 255 + 64));
      check_file_name(r.name);
      break;
    case Msg::kGetFunction:
      r.handle = in.u64("module");
      r.name = std::string(in.str("name"));
      break;
    case Msg::kFunctionNames:
      r.handle = in.u64("module");
      break;
    case Msg::kProfile:
      r.handle = in.u64("module");
      r.action = in.u8("action");
      if (r.action > 2) {
        throw ProtocolError(ErrorCode::kProtocol,
                            "PROFILE: action " + std::to_string(r.action) + " (0 read, 1 start, 2 stop)");
      }
      break;
    case Msg::kArrayGet:
      r.handle = in.u64("handle");
      break;
    case Msg::kRelease: {
      uint32_t n = in.u32("count");
      if (n > in.left() / 8) {
        throw ProtocolError(ErrorCode::kProtocol, "RELEASE: count: " + std::to_string(n) + " handles in " +
                                                      std::to_string(in.left()) + " bytes");
      }
      for (uint32_t k = 0; k < n; ++k) r.handles.push_back(in.u64("handles"));
      break;
    }
    case Msg::kDevices:
    case Msg::kClose:
    case Msg::kInfo:
      break;
    case Msg::kArrayEmpty:
      r.device = std::string(in.str("device", 64));
      r.dtype = std::string(in.str("dtype", 64));
      r.shape = shape("shape");
      break;
    case Msg::kArraySet:
      r.handle = in.u64("handle");
      r.data = std::string(in.bytes("data"));
      break;
    case Msg::kCall:
      r.handle = in.u64("function");
      r.args = in.values("arguments");
      break;
    case Msg::kTimeEvaluator: {
      r.handle = in.u64("function");
      r.device = std::string(in.str("device", 64));
      r.number = in.i64("number");
      r.repeat = in.i64("repeat");
      r.min_repeat_ms = in.f64("min_repeat_ms");
      uint8_t flush = in.u8("cache_flush");
      if (flush > 1) {
        throw ProtocolError(ErrorCode::kProtocol, "TIME_EVALUATOR: cache_flush: a bool of " + std::to_string(flush));
      }
      r.cache_flush = flush != 0;
      r.args = in.values("arguments");
      bool ok = r.number >= 1 && r.number <= (int64_t{1} << 30) && r.repeat >= 1 && r.repeat <= 10000 &&
                r.min_repeat_ms >= 0 && r.min_repeat_ms <= 3.6e6;  // the comparisons also refuse NaN
      if (!ok) {
        throw ProtocolError(ErrorCode::kProtocol,
                            "TIME_EVALUATOR: number (1 to 2^30), repeat (1 to 10000) and "
                            "min_repeat_ms (0 to one hour) out of range");
      }
      break;
    }
    default:
      throw ProtocolError(ErrorCode::kProtocol,
                          "the server does not take a " + message_name(frame.type) + " frame after the handshake");
  }
  in.end();
  return r;
}

std::string encode_request(const Request& r) {
  Writer w;
  switch (r.type) {
    case Msg::kUpload:
      w.str(r.name).bytes(r.data);
      break;
    case Msg::kLoadModule:
      w.str(r.name);
      break;
    case Msg::kGetFunction:
      w.u64(r.handle).str(r.name);
      break;
    case Msg::kFunctionNames:
    case Msg::kArrayGet:
      w.u64(r.handle);
      break;
    case Msg::kProfile:
      w.u64(r.handle).u8(r.action);
      break;
    case Msg::kRelease:
      w.u32(static_cast<uint32_t>(r.handles.size()));
      for (uint64_t h : r.handles) w.u64(h);
      break;
    case Msg::kDevices:
    case Msg::kClose:
    case Msg::kInfo:
      break;
    case Msg::kArrayEmpty:
      w.str(r.device).str(r.dtype).u32(static_cast<uint32_t>(r.shape.size()));
      for (int64_t d : r.shape) w.i64(d);
      break;
    case Msg::kArraySet:
      w.u64(r.handle).bytes(r.data);
      break;
    case Msg::kCall:
      w.u64(r.handle).u32(static_cast<uint32_t>(r.args.size()));
      for (const Value& v : r.args) w.value(v);
      break;
    case Msg::kTimeEvaluator:
      w.u64(r.handle).str(r.device).i64(r.number).i64(r.repeat).f64(r.min_repeat_ms).u8(r.cache_flush);
      w.u32(static_cast<uint32_t>(r.args.size()));
      for (const Value& v : r.args) w.value(v);
      break;
    default:
      throw ProtocolError(ErrorCode::kProtocol, "not a request: " + message_name(static_cast<uint32_t>(r.type)));
  }
  return encode_frame(static_cast<uint32_t>(r.type), w.data());
}

std::string encode_hello(const Hello& hello, bool from_server) {
  Writer w;
  w.raw(kMagic).u32(hello.version);
  if (from_server) w.u8(hello.key_required).raw(hello.nonce);
  return encode_frame(static_cast<uint32_t>(Msg::kHello), w.data());
}

Hello decode_hello(const Frame& frame, bool from_server) {
  const char* who = from_server ? "the server's HELLO" : "the client's HELLO";
  if (frame.type == static_cast<uint32_t>(Msg::kError) && from_server) throw decode_error(frame);
  if (frame.type != static_cast<uint32_t>(Msg::kHello)) {
    throw ProtocolError(ErrorCode::kProtocol, std::string("expected ") + who + ", got a " + message_name(frame.type) +
                                                  " frame (is this a Loom RPC " +
                                                  (from_server ? "server?)" : "client?)"));
  }
  Reader in(frame.payload, who);
  if (in.raw(kMagic.size(), "magic") != kMagic) {
    throw ProtocolError(ErrorCode::kProtocol, std::string(who) + " does not start with \"loom-rpc\"");
  }
  Hello h;
  h.version = in.u32("version");
  if (from_server && h.version == kProtocolVersion) {
    h.key_required = in.u8("key_required") != 0;
    h.nonce = std::string(in.raw(kNonceBytes, "nonce"));
  }
  if (h.version == kProtocolVersion) in.end();  // another version's HELLO may carry more
  return h;
}

std::string version_mismatch(uint32_t server, uint32_t client) {
  return "protocol version mismatch: the server speaks version " + std::to_string(server) + ", the client version " +
         std::to_string(client) + " (update the older side)";
}

std::string encode_error(ErrorCode code, std::string_view message) {
  Writer w;
  w.u32(static_cast<uint32_t>(code)).str(message.substr(0, 65536));
  return encode_frame(static_cast<uint32_t>(Msg::kError), w.data());
}

ProtocolError decode_error(const Frame& frame) {
  Reader in(frame.payload, "ERROR");
  uint32_t code = in.u32("code");
  std::string message(in.str("message", 65536));
  in.end();
  if (code < 1 || code > 8) code = static_cast<uint32_t>(ErrorCode::kProtocol);
  return ProtocolError(static_cast<ErrorCode>(code), message);
}

std::string encode_ok(const Value& value) {
  Writer w;
  w.value(value);
  return encode_frame(static_cast<uint32_t>(Msg::kOk), w.data());
}

Value decode_ok(const Frame& frame) {
  if (frame.type == static_cast<uint32_t>(Msg::kError)) throw decode_error(frame);
  if (frame.type != static_cast<uint32_t>(Msg::kOk)) {
    throw ProtocolError(ErrorCode::kProtocol, "expected a reply, got a " + message_name(frame.type) + " frame");
  }
  Reader in(frame.payload, "OK");
  Value v = in.value("value");
  in.end();
  return v;
}

std::string client_proof_input(std::string_view server_nonce, std::string_view client_nonce) {
  return std::string("loom-rpc auth") + std::string(server_nonce) + std::string(client_nonce);
}

std::string server_proof_input(std::string_view server_nonce, std::string_view client_nonce) {
  return std::string("loom-rpc server") + std::string(client_nonce) + std::string(server_nonce);
}

}  // namespace loom::rpc
