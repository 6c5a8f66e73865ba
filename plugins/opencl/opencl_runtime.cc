// device:opencl and the runtime module `opencl` over the ICD loader
// (ocl-icd).  One context and one in-order command queue per device:
// kernels, copies and workspace reuse are ordered by the queue, so only a
// copy to the host (blocking) and synchronize() wait for the device.
#include "opencl_runtime.h"

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <loom/support/error.h>
#include <loom/support/size.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <regex>

namespace loom::opencl {

namespace {

std::string error_name(cl_int e) {
  switch (e) {
    case CL_DEVICE_NOT_FOUND:
      return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE:
      return "CL_DEVICE_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
      return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES:
      return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY:
      return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE:
      return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE:
      return "CL_INVALID_VALUE";
    case CL_INVALID_BINARY:
      return "CL_INVALID_BINARY";
    case CL_INVALID_BUFFER_SIZE:
      return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_MEM_OBJECT:
      return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_KERNEL_ARGS:
      return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_ARG_SIZE:
      return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_WORK_GROUP_SIZE:
      return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE:
      return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE:
      return "CL_INVALID_GLOBAL_WORK_SIZE";
    case -1001:
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "OpenCL error " + std::to_string(e);
  }
}

[[noreturn]] void fail(const std::string& what, cl_int e) {
  LOOM_THROW(Error) << "opencl: " << what << " (" << error_name(e) << ")";
}
void check(cl_int e, const std::string& what) {
  if (e != CL_SUCCESS) fail(what, e);
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  clGetDeviceInfo(d, what, 0, nullptr, &size);
  std::string out(size, '\0');
  clGetDeviceInfo(d, what, size, out.data(), nullptr);
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

struct DeviceState {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  std::string platform_name, name, version;
  cl_ulong max_alloc = 0;
  size_t max_work_group = 0;
  std::once_flag opened;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  std::unique_ptr<runtime::WorkspacePool> pool;
  std::string describe() const { return platform_name + " / " + name + " (" + version + ")"; }
};

// Every device of every platform, found once; kept for the process's life
// (never destroyed: drivers tear down their own state at exit).
class Devices {
 public:
  static Devices& get() {
    static auto* devices = new Devices();
    return *devices;
  }
  size_t count() {
    enumerate();
    return devices_.size();
  }
  DeviceState& open(int id) {
    DeviceState& s = at(id);
    std::call_once(s.opened, [&] {
      cl_int e = CL_SUCCESS;
      s.context = clCreateContext(nullptr, 1, &s.device, nullptr, nullptr, &e);
      check(e, "cannot create a context on " + s.describe());
      s.queue = clCreateCommandQueue(s.context, s.device, 0, &e);
      check(e, "cannot create a command queue on " + s.describe());
      DeviceState* state = &s;
      s.pool =
          std::make_unique<runtime::WorkspacePool>([state, id](size_t bytes) { return allocate(*state, id, bytes); },
                                                   [](void* p) { clReleaseMemObject(static_cast<cl_mem>(p)); });
    });
    return s;
  }
  DeviceState& at(int id) {
    enumerate();
    if (id < 0 || static_cast<size_t>(id) >= devices_.size()) {
      LOOM_THROW(Error) << "opencl: no device " << id << " (there " << (devices_.size() == 1 ? "is " : "are ")
                        << devices_.size() << ": " << list() << ")";
    }
    return *devices_[id];
  }
  std::string list() {
    std::string out;
    for (size_t k = 0; k < devices_.size(); ++k)
      out += (k ? "; " : "") + std::to_string(k) + " " + devices_[k]->describe();
    return out;
  }
  static void* allocate(DeviceState& s, int id, size_t bytes) {
    if (bytes > s.max_alloc) {
      LOOM_THROW(Error) << "opencl: cannot allocate " << readable_bytes(bytes) << " on opencl:" << id
                        << ": out of device memory (one buffer may have at most " << readable_bytes(s.max_alloc)
                        << " on " << s.describe() << ")";
    }
    cl_int e = CL_SUCCESS;
    cl_mem m = clCreateBuffer(s.context, CL_MEM_READ_WRITE, std::max<size_t>(bytes, 1), nullptr, &e);
    if (e != CL_SUCCESS) {
      fail("cannot allocate " + readable_bytes(bytes) + " on opencl:" + std::to_string(id) + ": out of device memory",
           e);
    }
    return m;
  }

 private:
  void enumerate() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (enumerated_) return;
    cl_uint n = 0;
    cl_int e = clGetPlatformIDs(0, nullptr, &n);
    if (e == -1001 || (e == CL_SUCCESS && n == 0)) {
      LOOM_THROW(Error) << "opencl: no OpenCL platform found (the ICD loader lists no driver in /etc/OpenCL/vendors): "
                           "install one, for example Debian's pocl-opencl-icd for OpenCL on the CPU";
    }
    check(e, "cannot list the OpenCL platforms");
    std::vector<cl_platform_id> platforms(n);
    check(clGetPlatformIDs(n, platforms.data(), nullptr), "cannot list the OpenCL platforms");
    for (cl_platform_id p : platforms) {
      size_t size = 0;
      clGetPlatformInfo(p, CL_PLATFORM_NAME, 0, nullptr, &size);
      std::string platform_name(size, '\0');
      clGetPlatformInfo(p, CL_PLATFORM_NAME, size, platform_name.data(), nullptr);
      while (!platform_name.empty() && platform_name.back() == '\0') platform_name.pop_back();
      cl_uint m = 0;
      if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &m) != CL_SUCCESS || m == 0) continue;
      std::vector<cl_device_id> ids(m);
      clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, m, ids.data(), nullptr);
      for (cl_device_id d : ids) {
        auto s = std::make_unique<DeviceState>();
        s->platform = p;
        s->device = d;
        s->platform_name = platform_name;
        s->name = device_string(d, CL_DEVICE_NAME);
        s->version = device_string(d, CL_DEVICE_VERSION);
        clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof s->max_alloc, &s->max_alloc, nullptr);
        clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof s->max_work_group, &s->max_work_group, nullptr);
        devices_.push_back(std::move(s));
      }
    }
    if (devices_.empty()) {
      LOOM_THROW(Error) << "opencl: the OpenCL platforms have no device: install a driver, for example Debian's "
                           "pocl-opencl-icd for OpenCL on the CPU";
    }
    enumerated_ = true;
  }

  std::mutex mutex_;
  bool enumerated_ = false;
  std::vector<std::unique_ptr<DeviceState>> devices_;
};

size_t tensor_bytes(const DLTensor& t) {
  size_t bytes = 1;
  for (int i = 0; i < t.ndim; ++i) bytes *= static_cast<size_t>(t.shape[i]);
  return bytes * ((t.dtype.bits * t.dtype.lanes + 7) / 8);
}

class OpenCLDeviceAPI : public runtime::DeviceAPI {
 public:
  void* alloc(Device d, size_t bytes, size_t) override {
    return Devices::allocate(Devices::get().open(d.device_id), d.device_id, bytes);
  }
  void free(Device, void* ptr) override {
    if (ptr) clReleaseMemObject(static_cast<cl_mem>(ptr));
  }
  void copy(const DLTensor& from, DLTensor& to, void*) override {
    size_t bytes = tensor_bytes(from);
    if (bytes == 0) return;
    bool from_device = from.device.device_type == kDLOpenCL, to_device = to.device.device_type == kDLOpenCL;
    if (from_device && to_device && from.device.device_id == to.device.device_id) {
      DeviceState& s = Devices::get().open(to.device.device_id);
      check(clEnqueueCopyBuffer(s.queue, static_cast<cl_mem>(from.data), static_cast<cl_mem>(to.data), from.byte_offset,
                                to.byte_offset, bytes, 0, nullptr, nullptr),
            "cannot copy between buffers");
    } else if (from_device && to_device) {  // two devices: through the host
      std::string staging(bytes, '\0');
      DeviceState& a = Devices::get().open(from.device.device_id);
      DeviceState& b = Devices::get().open(to.device.device_id);
      check(clEnqueueReadBuffer(a.queue, static_cast<cl_mem>(from.data), CL_TRUE, from.byte_offset, bytes,
                                staging.data(), 0, nullptr, nullptr),
            "cannot read a buffer");
      check(clEnqueueWriteBuffer(b.queue, static_cast<cl_mem>(to.data), CL_TRUE, to.byte_offset, bytes, staging.data(),
                                 0, nullptr, nullptr),
            "cannot write a buffer");
    } else if (to_device) {
      DeviceState& s = Devices::get().open(to.device.device_id);
      check(clEnqueueWriteBuffer(s.queue, static_cast<cl_mem>(to.data), CL_TRUE, to.byte_offset, bytes,
                                 static_cast<const char*>(from.data) + from.byte_offset, 0, nullptr, nullptr),
            "cannot copy to the device");
    } else if (from_device) {
      DeviceState& s = Devices::get().open(from.device.device_id);
      check(clEnqueueReadBuffer(s.queue, static_cast<cl_mem>(from.data), CL_TRUE, from.byte_offset, bytes,
                                static_cast<char*>(to.data) + to.byte_offset, 0, nullptr, nullptr),
            "cannot copy from the device");
    } else {
      LOOM_THROW(Error) << "opencl: a copy with neither side on an OpenCL device";
    }
  }
  void synchronize(Device d, void*) override { check(clFinish(Devices::get().open(d.device_id).queue), "clFinish"); }
  void* alloc_workspace(Device d, size_t bytes) override { return Devices::get().open(d.device_id).pool->alloc(bytes); }
  void free_workspace(Device d, void* ptr) override { Devices::get().open(d.device_id).pool->release(ptr); }
};

// ---- the module ------------------------------------------------------------------------

// A program's kernels on one device (a runtime::KernelModuleNode: the base
// keeps the kernel table, checks each call and saves the module): the
// OpenCL C source, and the driver's binary of it for the device that
// built it, which a later load on the same device takes instead of
// compiling again.
class OpenCLModuleNode : public runtime::KernelModuleNode {
 public:
  std::string source;
  runtime::Bytes binary;      // for the device named binary_device, or none
  std::string binary_device;  // DeviceState::describe() of the device that built it

  ~OpenCLModuleNode() override {
    for (cl_kernel k : cl_kernels_) clReleaseKernel(k);
    if (program_) clReleaseProgram(program_);
  }
  std::string type_key() const override { return "opencl"; }
  std::string inspect_source(const std::string& format) const override {
    if (format == "opencl" || format == "cl") return source;
    LOOM_THROW(Error) << "opencl module: no source format '" << format << "' (it has: opencl)";
  }

  // Builds the program for device_id (from the binary when it was built
  // for this device and the driver takes it, else from the source) and
  // makes its kernels, with their arguments' kinds read once.
  void restore() override {
    build_program();
    for (size_t index = 0; index < kernels.size(); ++index) {
      const runtime::KernelNode& sig = kernel(index);
      cl_int e = CL_SUCCESS;
      cl_kernel k = clCreateKernel(program_, sig.name.c_str(), &e);
      check(e, "cannot create kernel '" + sig.name + "'");
      cl_kernels_.push_back(k);
      std::vector<ArgKind> kinds;
      for (size_t i = 0; i < sig.args.size(); ++i) kinds.push_back(arg_kind(sig, i));
      arg_kinds_.push_back(std::move(kinds));
    }
  }

  void build_program() {
    DeviceState& s = Devices::get().open(device_id);
    cl_int e = CL_SUCCESS;
    if (binary.defined() && !binary.data().empty() && binary_device == s.describe()) {
      const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data().data());
      size_t size = binary.data().size();
      cl_int status = CL_SUCCESS;
      cl_program p = clCreateProgramWithBinary(s.context, 1, &s.device, &size, &bytes, &status, &e);
      if (e == CL_SUCCESS && status == CL_SUCCESS &&
          clBuildProgram(p, 1, &s.device, "", nullptr, nullptr) == CL_SUCCESS) {
        program_ = p;
        return;
      }
      if (p) clReleaseProgram(p);  // refused: rebuilt from the source below
    }
    const char* text = source.c_str();
    cl_program p = clCreateProgramWithSource(s.context, 1, &text, nullptr, &e);
    check(e, "cannot create a program");
    e = clBuildProgram(p, 1, &s.device, "", nullptr, nullptr);
    if (e != CL_SUCCESS) {
      size_t size = 0;
      clGetProgramBuildInfo(p, s.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
      std::string log(size, '\0');
      clGetProgramBuildInfo(p, s.device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
      clReleaseProgram(p);
      LOOM_THROW(Error) << "opencl: " << kernel_at_error(log) << " does not build on " << s.describe() << " ("
                        << error_name(e) << "); the build log:\n"
                        << log;
    }
    program_ = p;
    size_t size = 0;
    if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) == CL_SUCCESS && size > 0) {
      std::string out(size, '\0');
      unsigned char* at = reinterpret_cast<unsigned char*>(out.data());
      if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof at, &at, nullptr) == CL_SUCCESS) {
        binary = runtime::Bytes(std::move(out));
        binary_device = s.describe();
      }
    }
  }

  LOOM_OBJECT(OpenCLModuleNode, runtime::KernelModuleNode, "opencl.Module");
  static void reflect(ReflectionBuilder<OpenCLModuleNode>& r) {
    r.field("source", &OpenCLModuleNode::source, "the program's OpenCL C")
        .field("binary", &OpenCLModuleNode::binary, "the driver's binary of it, or none", kOptional)
        .field("binary_device", &OpenCLModuleNode::binary_device, "the device the binary is for");
  }

 private:
  // "kernel 'NAME'" for the kernel whose source holds the first line a
  // build log names, else every kernel's name.
  std::string kernel_at_error(const std::string& log) const {
    std::smatch m;
    std::string names;
    for (const std::string& k : function_names()) names += (names.empty() ? "'" : ", '") + k + "'";
    // Clang writes "FILE:LINE:COL: error: ...", PoCL "error: FILE:LINE:COL: ...".
    if (!std::regex_search(log, m, std::regex(R"(:(\d+):\d+: error)")) &&
        !std::regex_search(log, m, std::regex(R"(error: \S*:(\d+):\d+:)"))) {
      return "the program of kernels " + names;
    }
    int line = std::stoi(m[1]);
    std::string found;
    int at = 1;
    for (size_t pos = 0; pos < source.size() && at <= line; pos = source.find('\n', pos) + 1, ++at) {
      if (source.compare(pos, 14, "__kernel void ") == 0) {
        size_t begin = pos + 14, end = source.find('(', begin);
        found = source.substr(begin, end - begin);
      }
      if (source.find('\n', pos) == std::string::npos) break;
    }
    return found.empty() ? "the program of kernels " + names : "kernel '" + found + "' (an IR function of that name)";
  }

  // How a kernel argument is set: a buffer's handle, or a scalar of a size.
  enum class ArgKind { kBuffer, kFloat32, kFloat64, kInt64, kInt32, kInt16, kInt8 };
  static ArgKind arg_kind(const runtime::KernelNode& sig, size_t i) {
    static const std::map<std::string, ArgKind> kinds = {
        {"buffer", ArgKind::kBuffer}, {"float32", ArgKind::kFloat32}, {"float64", ArgKind::kFloat64},
        {"int64", ArgKind::kInt64},   {"uint64", ArgKind::kInt64},    {"int32", ArgKind::kInt32},
        {"uint32", ArgKind::kInt32},  {"int16", ArgKind::kInt16},     {"uint16", ArgKind::kInt16},
        {"int8", ArgKind::kInt8},     {"uint8", ArgKind::kInt8}};
    auto found = kinds.find(sig.args[i].as_string());
    if (found == kinds.end()) {
      LOOM_THROW(Error) << "opencl kernel '" << sig.name << "': argument " << i << " has the kind '"
                        << sig.args[i].as_string() << "', which OpenCL kernels do not take";
    }
    return found->second;
  }

  // The kernel on the module's device, enqueued (not waited for).
  void launch(size_t index, const runtime::LaunchSizes& sizes, const Any* args) const override {
    const runtime::KernelNode& sig = kernel(index);
    size_t global[3], local[3];
    for (int d = 0; d < 3; ++d) {
      global[d] = static_cast<size_t>(sizes.grid[d] * sizes.block[d]);
      local[d] = static_cast<size_t>(sizes.block[d]);
    }
    DeviceState& s = Devices::get().open(device_id);
    std::lock_guard<std::mutex> lock(mutex_);  // a kernel's arguments are state: one launch at a time
    cl_kernel k = cl_kernels_[index];
    const std::vector<ArgKind>& kinds = arg_kinds_[index];
    for (size_t i = 0; i < kinds.size(); ++i) {
      const Any& a = args[i];
      cl_int e;
      switch (kinds[i]) {
        case ArgKind::kBuffer:
          e = set_arg<cl_mem>(k, i, static_cast<cl_mem>(a.as_opaque_ptr()));
          break;
        case ArgKind::kFloat32:
          e = set_arg<cl_float>(k, i, static_cast<cl_float>(a.as_float()));
          break;
        case ArgKind::kFloat64:
          e = set_arg<cl_double>(k, i, a.as_float());
          break;
        case ArgKind::kInt64:
          e = set_arg<cl_long>(k, i, a.as_int());
          break;
        case ArgKind::kInt32:
          e = set_arg<cl_int>(k, i, static_cast<cl_int>(a.as_int()));
          break;
        case ArgKind::kInt16:
          e = set_arg<cl_short>(k, i, static_cast<cl_short>(a.as_int()));
          break;
        case ArgKind::kInt8:
          e = set_arg<cl_char>(k, i, static_cast<cl_char>(a.as_int()));
          break;
      }
      if (e != CL_SUCCESS) check(e, "kernel '" + sig.name + "': cannot set argument " + std::to_string(i));
    }
    // The fewest dimensions that hold the launch (a driver may do less
    // work per launch for fewer).
    cl_uint dims = local[2] > 1 || global[2] > 1 ? 3 : local[1] > 1 || global[1] > 1 ? 2 : 1;
    cl_int e = clEnqueueNDRangeKernel(s.queue, k, dims, nullptr, global, local, 0, nullptr, nullptr);
    if (e == CL_INVALID_WORK_GROUP_SIZE || e == CL_INVALID_WORK_ITEM_SIZE) {
      fail("kernel '" + sig.name + "': a block of " + std::to_string(local[0]) + "x" + std::to_string(local[1]) + "x" +
               std::to_string(local[2]) + " threads is more than " + s.describe() +
               " runs in one work-group (at most " + std::to_string(s.max_work_group) +
               "; lower the target's max-work-group-size)",
           e);
    }
    check(e, "cannot launch kernel '" + sig.name + "'");
  }

  template <class T>
  static cl_int set_arg(cl_kernel k, size_t i, T value) {
    return clSetKernelArg(k, static_cast<cl_uint>(i), sizeof value, &value);
  }

  mutable std::mutex mutex_;
  cl_program program_ = nullptr;
  std::vector<cl_kernel> cl_kernels_;            // by kernel index
  std::vector<std::vector<ArgKind>> arg_kinds_;  // by kernel index
};

}  // namespace

std::shared_ptr<runtime::DeviceAPI> make_device_api() { return std::make_shared<OpenCLDeviceAPI>(); }

std::string describe_device(int device_id) { return Devices::get().at(device_id).describe(); }

int find_device(const std::string& platform, int device) {
  Devices& all = Devices::get();
  int seen = 0;
  for (size_t k = 0; k < all.count(); ++k) {
    if (all.at(static_cast<int>(k)).platform_name.find(platform) == std::string::npos) continue;
    if (seen++ == device) return static_cast<int>(k);
  }
  LOOM_THROW(Error) << "opencl: no device " << device << " on a platform named like '" << platform
                    << "' (the devices: " << all.list() << ")";
}

runtime::Module make_module(std::string source, Array kernels, int device_id) {
  auto node = make_object<OpenCLModuleNode>();
  node->source = std::move(source);
  node->kernels = std::move(kernels);
  node->device_id = device_id;
  return runtime::KernelModuleNode::finish(node);
}

void register_module_kind() { runtime::KernelModuleNode::register_loader<OpenCLModuleNode>("opencl"); }

}  // namespace loom::opencl
