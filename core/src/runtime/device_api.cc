// The device API registry, the workspace pool and the CPU device API.
#include "loom/support/size.h"
#include "loom/runtime/device_api.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "loom/support/registry.h"

namespace loom::runtime {

// ---- workspace pool -------------------------------------------------------------
namespace {
size_t size_class(size_t bytes) {
  size_t size = 64;
  while (size < bytes) size <<= 1;
  return size;
}
}  // namespace

WorkspacePool::~WorkspacePool() {
  for (auto& item : free_blocks_)
    for (void* p : item.second) free_(p);
}

void* WorkspacePool::alloc(size_t bytes) {
  size_t size = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  void* block = nullptr;
  auto& cached = free_blocks_[size];
  if (!cached.empty()) {
    block = cached.back();
    cached.pop_back();
  } else {
    block = allocate_(size);
  }
  in_use_[block] = size;
  return block;
}

void WorkspacePool::release(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = in_use_.find(ptr);
  if (found == in_use_.end()) LOOM_THROW(Error) << "free_workspace of a pointer the workspace pool did not hand out";
  free_blocks_[found->second].push_back(ptr);
  in_use_.erase(found);
}

size_t WorkspacePool::cached_blocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (const auto& item : free_blocks_) n += item.second.size();
  return n;
}

// ---- registry -------------------------------------------------------------------
namespace {
NamedRegistry<DeviceAPIEntry>& apis() {
  static auto* instance = new NamedRegistry<DeviceAPIEntry>("device API", "device");
  return *instance;
}
}  // namespace

std::string device_name(int32_t device_type) {
  Device d;
  d.device_type = device_type;
  std::string text = d.to_string();
  return text.substr(0, text.find(':'));
}

void DeviceAPIRegistry::register_api(const std::string& device_name, std::shared_ptr<DeviceAPI> api) {
  if (!api) LOOM_THROW(Error) << "device API for '" << device_name << "' is null";
  if (!Device::type_of(device_name)) {
    LOOM_THROW(Error) << "device API for '" << device_name << "': no device is named '" << device_name
                      << "'; a vendor's device registers its name and code first: Device::register_type(\""
                      << device_name << "\", CODE) with CODE from " << Device::kVendorFirst << " to "
                      << Device::kVendorLast;
  }
  apis().add(DeviceAPIEntry{device_name, std::move(api), ""});
}

namespace {
DeviceAPI& lookup(Device device) {
  std::string name = device_name(device.device_type);
  auto entry = apis().find(name);
  if (!entry) {
    LOOM_THROW(Error) << "no device API for '" << name << "' (device " << device.to_string()
                      << "): no loaded plugin provides 'device:" << name << "'";
  }
  return *entry->api;  // registries are never destroyed, so the API outlives this reference
}
}  // namespace

DeviceAPI& DeviceAPIRegistry::get(Device device) {
  // The host's API is the core's own (registered below, never removed):
  // found once.  A lookup by name builds the name and copies the entry,
  // and every kernel's workspace and every VM call's arena asks.
  if (device.device_type == Device::kCPU) {
    static DeviceAPI* const cpu = &lookup(device);
    return *cpu;
  }
  return lookup(device);
}

std::vector<std::string> DeviceAPIRegistry::list() { return apis().names(); }

// ---- CPU ------------------------------------------------------------------------
namespace {
class CPUDeviceAPI : public DeviceAPI {
 public:
  void* alloc(Device, size_t bytes, size_t alignment) override {
    if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) {
      LOOM_THROW(Error) << "alignment " << alignment << " is not a power of two of at least " << sizeof(void*);
    }
    if (bytes > kMaxTensorBytes) {
      LOOM_THROW(Error) << "cannot allocate " << readable_bytes(bytes) << " on cpu: more than Loom allocates ("
                        << readable_bytes(kMaxTensorBytes) << ")";
    }
    size_t rounded = (std::max<size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
    if (rounded >= kLargeBlock) {
      std::lock_guard<std::mutex> lock(cache_mutex_);
      auto cached = cache_.find({rounded, alignment});
      if (cached != cache_.end()) {
        void* p = cached->second;
        cache_.erase(cached);
        cached_bytes_ -= rounded;
        large_[p] = {rounded, alignment};
        return p;
      }
    }
    void* p = std::aligned_alloc(alignment, rounded);
    if (!p) LOOM_THROW(Error) << "cannot allocate " << readable_bytes(bytes) << " on cpu: out of memory";
    if (rounded >= kLargeBlock) {
      std::lock_guard<std::mutex> lock(cache_mutex_);
      large_[p] = {rounded, alignment};
    }
    return p;
  }
  // Large blocks are kept for reuse (up to kMaxCached bytes): the same
  // tensors come and go on every call of a model, and fresh pages from
  // the kernel cost a fault each (a 64 MiB output: ~16k faults).  From
  // 64 KiB: glibc gives such a block back to the kernel on free often
  // enough (mmap, or trimming the heap's top) that a 512 KiB output took
  // 128 faults, 0.45 ms, on each of a model's first dozen calls.
  void free(Device, void* ptr) override {
    if (!ptr) return;
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto found = large_.find(ptr);
    if (found == large_.end()) {
      std::free(ptr);
      return;
    }
    auto key = found->second;
    large_.erase(found);
    if (cached_bytes_ + key.first > kMaxCached) {
      std::free(ptr);
      return;
    }
    cache_.emplace(key, ptr);
    cached_bytes_ += key.first;
  }
  void copy(const DLTensor& from, DLTensor& to, void*) override {
    size_t bytes = 1;
    for (int i = 0; i < from.ndim; ++i) bytes *= static_cast<size_t>(from.shape[i]);
    bytes *= (from.dtype.bits * from.dtype.lanes + 7) / 8;
    if (bytes) {
      std::memcpy(static_cast<char*>(to.data) + to.byte_offset, static_cast<const char*>(from.data) + from.byte_offset,
                  bytes);
    }
  }
  void synchronize(Device, void*) override {}
  void* alloc_workspace(Device, size_t bytes) override { return pool_.alloc(bytes); }
  void free_workspace(Device, void* ptr) override { pool_.release(ptr); }

 private:
  static constexpr size_t kLargeBlock = size_t{64} << 10, kMaxCached = size_t{512} << 20;
  std::mutex cache_mutex_;
  std::multimap<std::pair<size_t, size_t>, void*> cache_;       // (bytes, alignment) -> free block
  std::unordered_map<void*, std::pair<size_t, size_t>> large_;  // live large blocks
  size_t cached_bytes_ = 0;
  WorkspacePool pool_{[](size_t bytes) {
                        void* p = std::aligned_alloc(64, bytes);
                        if (!p)
                          LOOM_THROW(Error)
                              << "cannot allocate a " << readable_bytes(bytes) << " workspace: out of memory";
                        return p;
                      },
                      [](void* p) { std::free(p); }};
};

const bool cpu_registered = [] {
  DeviceAPIRegistry::register_api("cpu", std::make_shared<CPUDeviceAPI>());
  return true;
}();
}  // namespace

}  // namespace loom::runtime
