// One RPC session (docs/rpc.md): the handshake, then requests served on
// the runtime alone.  Runs in a child process of its own, so whatever a
// loaded library does ends with this process; the parent reports it.
#include "session.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>

#include "loom/object/containers.h"
#include "loom/rpc/net.h"
#include "loom/runtime/device_api.h"
#include "loom/runtime/library.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/profiler.h"
#include "loom/runtime/time_evaluator.h"
#include "loom/support/error.h"
#include "loom/support/cpu.h"
#include "loom/support/json.h"
#include "loom/support/size.h"
#include "loom/version.h"

namespace loom::rpc {

namespace {

using runtime::Module;
using runtime::NDArray;

ProtocolError remote(const std::string& message) { return ProtocolError(ErrorCode::kRemote, message); }

class Session {
 public:
  explicit Session(const SessionOptions& options) : options_(options) {
    dir_ = open(options.workdir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_ < 0) throw std::runtime_error("cannot open the work folder " + options.workdir);
  }
  ~Session() { close(dir_); }

  Value serve(const Request& r) {
    switch (r.type) {
      case Msg::kUpload:
        return upload(r);
      case Msg::kLoadModule: {
        struct stat st {};
        if (fstatat(dir_, r.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
          throw remote("no file '" + r.name + "' in the work folder (upload it first)");
        }
        if (!S_ISREG(st.st_mode)) throw ProtocolError(ErrorCode::kPath, "'" + r.name + "' is not a regular file");
        return add(runtime::load_module(options_.workdir + "/" + r.name));
      }
      case Msg::kGetFunction:
        return add(get<Module>(r.handle, "module").get_function(r.name));
      case Msg::kFunctionNames: {
        std::string names;
        for (const std::string& name : get<Module>(r.handle, "module")->function_names()) names += name + "\n";
        return Value::string(names);
      }
      case Msg::kInfo: {
        // What tuning records of a measurement (docs/tuning.md), and what runs here.
        JsonWriter json(0);
        json.begin_object().key("cpu").value(detect_cpu()).key("loom").value(LOOM_VERSION);
        json.key("protocol").value(static_cast<int64_t>(kProtocolVersion)).key("devices");
        json.string_array(runtime::DeviceAPIRegistry::list()).end_object();
        return Value::string(json.str());
      }
      case Msg::kDevices: {
        std::vector<Value> out;
        for (const std::string& name : runtime::DeviceAPIRegistry::list()) out.push_back(Value::string(name));
        return Value::tuple(std::move(out));
      }
      case Msg::kArrayEmpty: {
        DataType dtype = DataType::parse(r.dtype);
        uint64_t bytes = checked_nbytes(r.shape, (dtype.bits * dtype.lanes + 7) / 8, "ARRAY_EMPTY");
        if (bytes > options_.limits.max_upload) {
          throw ProtocolError(ErrorCode::kLimit, "an array of " + std::to_string(bytes) +
                                                     " bytes is over --max-upload " +
                                                     std::to_string(options_.limits.max_upload));
        }
        return to_value(Any(NDArray::empty(r.shape, dtype, Device::parse(r.device))));
      }
      case Msg::kArraySet: {
        NDArray a = get<NDArray>(r.handle, "tensor");
        if (r.data.size() != a->nbytes()) {
          throw remote("ARRAY_SET: " + std::to_string(r.data.size()) + " bytes for a tensor of " +
                       std::to_string(a->nbytes()));
        }
        a.copy_from(NDArray::from_bytes(a.shape_vector(), a->dtype, r.data));
        return Value();
      }
      case Msg::kArrayGet: {
        NDArray a = get<NDArray>(r.handle, "tensor");
        NDArray host = a->device.device_type == kDLCPU ? a : a.copy_to(Device());
        return Value::blob(std::string(static_cast<const char*>(host->data()), host->nbytes()));
      }
      case Msg::kCall: {
        std::vector<Any> args = to_anys(r.args);
        Function f = get<Function>(r.handle, "function");
        return to_value(f.call(args.data(), static_cast<int32_t>(args.size())));
      }
      case Msg::kTimeEvaluator: {
        std::vector<Any> args = to_anys(r.args);
        runtime::TimeEvaluatorOptions o{r.number, r.repeat, r.min_repeat_ms, r.cache_flush};
        runtime::TimeEvaluation t =
            runtime::time_evaluate(get<Function>(r.handle, "function"), args, Device::parse(r.device), o);
        std::vector<Value> seconds;
        for (double s : t.seconds) seconds.push_back(Value::real(s));
        return Value::tuple({Value::integer(t.number), Value::tuple(std::move(seconds))});
      }
      case Msg::kProfile: {
        Module root = get<Module>(r.handle, "module");
        if (r.action != 0) {
          runtime::set_profiling(root, r.action == 1);
          return Value();
        }
        return Value::string(runtime::profiles_json(root));
      }
      case Msg::kRelease: {
        std::string unknown;
        for (uint64_t h : r.handles) {
          if (!handles_.erase(h)) unknown += (unknown.empty() ? "" : ", ") + std::to_string(h);
        }
        if (!unknown.empty()) throw remote("RELEASE: no handle " + unknown);
        return Value();
      }
      default:
        return Value();
    }
  }

 private:
  Value upload(const Request& r) {
    if (r.data.size() > options_.limits.max_upload) {
      throw ProtocolError(ErrorCode::kLimit, "the upload of " + std::to_string(r.data.size()) +
                                                 " bytes is over --max-upload " +
                                                 std::to_string(options_.limits.max_upload));
    }
    // Written beside its name and renamed over it: a name is never opened
    // for writing, so a symlink planted there is replaced, not followed.
    std::string temp = ".upload-" + std::to_string(getpid()) + "-" + r.name;
    // A new file (O_EXCL): not one planted under the temporary name, a hard
    // link to a file outside among them.
    unlinkat(dir_, temp.c_str(), 0);
    int fd = openat(dir_, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw remote("cannot write '" + r.name + "': " + std::strerror(errno));
    size_t done = 0;
    while (done < r.data.size()) {
      ssize_t n = write(fd, r.data.data() + done, r.data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::string why = std::strerror(errno);
        close(fd);
        unlinkat(dir_, temp.c_str(), 0);
        throw remote("cannot write '" + r.name + "': " + why);
      }
      done += static_cast<size_t>(n);
    }
    close(fd);
    if (renameat(dir_, temp.c_str(), dir_, r.name.c_str()) != 0) {
      std::string why = std::strerror(errno);
      unlinkat(dir_, temp.c_str(), 0);
      throw remote("cannot write '" + r.name + "': " + why);
    }
    return Value::integer(static_cast<int64_t>(done));
  }

  template <class T>
  T get(uint64_t handle, const char* what) const {
    auto it = handles_.find(handle);
    if (it == handles_.end()) throw remote(std::string("no ") + what + " handle " + std::to_string(handle));
    if (!it->second.template as<typename T::ContainerType>()) {
      throw remote("handle " + std::to_string(handle) + " is a " + it->second->type_key() + ", not a " + what);
    }
    return downcast<T>(it->second);
  }

  Value add(const ObjectRef& object) {
    uint64_t h = next_++;
    handles_[h] = object;
    return Value::of_handle(h);
  }

  std::vector<Any> to_anys(const std::vector<Value>& values) const {
    std::vector<Any> out;
    for (const Value& v : values) out.push_back(to_any(v));
    return out;
  }

  Any to_any(const Value& v) const {
    switch (v.kind) {
      case Value::kNone:
        return Any();
      case Value::kBool:
        return Any(v.i != 0);
      case Value::kInt:
        return Any(v.i);
      case Value::kFloat:
        return Any(v.f);
      case Value::kStr:
        return Any(v.s);
      case Value::kBytes:
        return Any(NDArray::from_bytes({static_cast<int64_t>(v.s.size())}, DataType::UInt(8), v.s));
      case Value::kHandle:
      case Value::kTensor: {
        auto it = handles_.find(v.handle);
        if (it == handles_.end()) throw remote("no handle " + std::to_string(v.handle));
        return Any(it->second);
      }
      case Value::kTuple: {
        std::vector<Any> items;
        for (const Value& item : v.items) items.push_back(to_any(item));
        return Any(Array(items));
      }
    }
    return Any();
  }

  Value to_value(const Any& a) {
    switch (a.kind()) {
      case AnyKind::kNone:
        return Value();
      case AnyKind::kBool: {
        Value v;
        v.kind = Value::kBool;
        v.i = a.as_bool();
        return v;
      }
      case AnyKind::kInt:
        return Value::integer(a.as_int());
      case AnyKind::kFloat:
        return Value::real(a.as_float());
      case AnyKind::kStr:
        return Value::string(a.as_string());
      case AnyKind::kDataType:
        return Value::string(a.as_dtype().to_string());
      case AnyKind::kDevice:
        return Value::string(a.as_device().to_string());
      default:
        break;
    }
    if (const auto* array = dynamic_cast<const ArrayNode*>(a.object())) {
      std::vector<Value> items;
      for (const Any& item : array->items) items.push_back(to_value(item));
      return Value::tuple(std::move(items));
    }
    if (!a.is_object_like()) throw remote("a result of kind " + std::string(a.kind_name()) + " cannot travel");
    Value v = add(a.as_object_ref());
    if (const auto* t = dynamic_cast<const runtime::NDArrayNode*>(a.object())) {
      v.kind = Value::kTensor;
      v.dtype = t->dtype.to_string();
      v.device = t->device.to_string();
      v.shape.assign(t->dl_tensor().shape, t->dl_tensor().shape + t->dl_tensor().ndim);
    }
    return v;
  }

  const SessionOptions& options_;
  int dir_ = -1;
  std::map<uint64_t, ObjectRef> handles_;
  uint64_t next_ = 1;
};

bool send_error(int fd, ErrorCode code, const std::string& message) {
  return send_all(fd, encode_error(code, message));
}

// The handshake: version, then the key by challenge-response.  False (the
// client told why) when the client is refused.
bool handshake(int fd, FrameReader& reader, const SessionOptions& o) {
  Frame frame;
  if (!read_frame(fd, reader, &frame)) return false;
  Hello theirs = decode_hello(frame, false);
  if (theirs.version != kProtocolVersion) {
    std::string message = version_mismatch(kProtocolVersion, theirs.version);
    std::cerr << "loom-rpc-server: refused " << o.peer << ": " << message << std::endl;
    send_error(fd, ErrorCode::kVersion, message);
    return false;
  }
  Hello ours;
  ours.key_required = !o.key.empty();
  ours.nonce = random_bytes(kNonceBytes);
  if (!send_all(fd, encode_hello(ours, true))) return false;
  if (!read_frame(fd, reader, &frame)) return false;
  if (frame.type != static_cast<uint32_t>(Msg::kAuth)) {
    throw ProtocolError(ErrorCode::kProtocol, "expected AUTH, got a " + message_name(frame.type) + " frame");
  }
  Reader in(frame.payload, "AUTH");
  std::string client_nonce(in.raw(kNonceBytes, "nonce"));
  std::string proof(in.raw(32, "proof"));
  in.end();
  if (!o.key.empty()) {
    if (!same_bytes(proof, hmac_sha256(o.key, client_proof_input(ours.nonce, client_nonce)))) {
      std::cerr << "loom-rpc-server: refused " << o.peer << ": wrong key" << std::endl;
      send_error(fd, ErrorCode::kAuthentication, "the server refused the key");
      return false;
    }
    return send_all(fd, encode_ok(Value::blob(hmac_sha256(o.key, server_proof_input(ours.nonce, client_nonce)))));
  }
  return send_all(fd, encode_ok(Value::blob("")));
}

}  // namespace

int serve_session(int fd, const SessionOptions& options) {
  FrameReader reader(options.limits);
  try {
    timeval handshake_limit{10, 0};  // a client that says nothing does not hold a session
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &handshake_limit, sizeof handshake_limit);
    if (!handshake(fd, reader, options)) return 0;
    timeval none{0, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  } catch (const ProtocolError& e) {
    send_error(fd, e.code, e.what());
    return 0;
  }
  Session session(options);
  for (;;) {
    Frame frame;
    try {
      if (!read_frame(fd, reader, &frame)) return 0;
    } catch (const ProtocolError& e) {
      // The stream cannot be followed past a refused or broken frame.
      send_error(fd, e.code, e.what());
      return 0;
    }
    std::string reply;
    try {
      Request request = decode_request(frame);
      if (request.type == Msg::kClose) {
        send_all(fd, encode_ok(Value()));
        return 0;
      }
      reply = encode_ok(session.serve(request));
    } catch (const ProtocolError& e) {
      reply = encode_error(e.code, e.what());
    } catch (const std::exception& e) {
      reply = encode_error(ErrorCode::kRemote, e.what());
    }
    if (!send_all(fd, reply)) return 0;
  }
}

}  // namespace loom::rpc
