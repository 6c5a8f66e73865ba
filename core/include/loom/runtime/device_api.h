// Device APIs (docs/runtime.md): one per device type, registered by name
// ("cpu" in the core; "opencl", "vulkan", ... from plugins, loaded on first
// use through the capability "device:NAME").
#ifndef LOOM_RUNTIME_DEVICE_API_H_
#define LOOM_RUNTIME_DEVICE_API_H_

#include <dlpack/dlpack.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loom/object/any.h"

namespace loom::runtime {

// Reuses freed blocks by size class (powers of two, at least 64 bytes).
class WorkspacePool {
 public:
  using Allocate = std::function<void*(size_t bytes)>;
  using Free = std::function<void(void*)>;
  WorkspacePool(Allocate allocate, Free free) : allocate_(std::move(allocate)), free_(std::move(free)) {}
  ~WorkspacePool();
  void* alloc(size_t bytes);
  void release(void* ptr);  // back to the pool; throws for a pointer it did not hand out
  size_t cached_blocks() const;

 private:
  Allocate allocate_;
  Free free_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_blocks_;  // size class -> blocks
  std::map<void*, size_t> in_use_;                    // block -> size class
};

class DeviceAPI {
 public:
  virtual ~DeviceAPI() = default;
  virtual void* alloc(Device device, size_t bytes, size_t alignment) = 0;
  virtual void free(Device device, void* ptr) = 0;
  // Copies `from` to `to` (same dtype and number of bytes, compact); one of
  // them is on this API's device, the other on it or on the CPU.
  virtual void copy(const DLTensor& from, DLTensor& to, void* stream) = 0;
  virtual void synchronize(Device device, void* stream) = 0;
  virtual void* create_stream(Device) { return nullptr; }
  virtual void free_stream(Device, void*) {}
  // Temporary buffers, pooled.
  virtual void* alloc_workspace(Device device, size_t bytes) = 0;
  virtual void free_workspace(Device device, void* ptr) = 0;
};

struct DeviceAPIEntry {
  std::string name;  // the device name: "cpu", "opencl", ...
  std::shared_ptr<DeviceAPI> api;
  std::string owner;
};

class DeviceAPIRegistry {
 public:
  static void register_api(const std::string& device_name, std::shared_ptr<DeviceAPI> api);
  // The API for `device`; loads the plugin providing "device:NAME" on a
  // miss; Error naming the device when none is available.
  static DeviceAPI& get(Device device);
  static std::vector<std::string> list();
};

// The device name of a DLPack device type ("cpu" for kDLCPU).
std::string device_name(int32_t device_type);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_DEVICE_API_H_
