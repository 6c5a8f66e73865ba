// device:vulkan and the runtime module `vulkan` over the Vulkan loader.
// One logical device and compute queue per physical device used.  Work
// is recorded into the device's open command buffer (its "batch": each
// launch binds its pipeline, a descriptor set of its buffers and its
// scalars as push constants, then a memory barrier orders it before the
// next command).  A full batch is submitted without waiting, so the
// device runs it while the next is recorded (at most kInFlight batches
// are in flight, each with its own descriptor pool and fence); a copy
// between host and device, synchronize and releasing memory submit the
// open batch and wait for all of them.  Host copies go through one staging
// buffer per device, kept mapped; freed device buffers are kept by size
// for the next allocation (one queue orders every use of a buffer before
// the commands of its next owner), up to kCachedBytes.
#include "vulkan_runtime.h"

#include <vulkan/vulkan.h>

#include <loom/support/error.h>
#include <loom/support/size.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>

namespace loom::vulkan {

namespace {

std::string result_name(VkResult r) {
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default:
      return "VkResult " + std::to_string(static_cast<int>(r));
  }
}

void check(VkResult r, const std::string& what) {
  if (r != VK_SUCCESS) LOOM_THROW(Error) << "vulkan: " << what << " (" << result_name(r) << ")";
}

// ---- validation messages -----------------------------------------------------------

std::mutex messages_mutex;
std::string messages;

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  std::string line = std::string(severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error: " : "warning: ") +
                     (data && data->pMessage ? data->pMessage : "(no message)");
  // On stderr too, so a process that never asks (loomc run) still shows it.
  std::fprintf(stderr, "vulkan validation: %s\n", line.c_str());
  std::lock_guard<std::mutex> lock(messages_mutex);
  messages += line + "\n";
  return VK_FALSE;
}

// ---- devices -------------------------------------------------------------------------

struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
};

// A command buffer with its descriptor pool and fence, reused once its
// work is done.
struct Batch {
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkDescriptorPool descriptors = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  int recorded = 0;
};

struct DeviceState {
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory{};
  Features features;
  bool int64 = false;
  uint32_t family = 0;
  std::once_flag opened;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandPool commands = VK_NULL_HANDLE;
  VkPipelineCache cache = VK_NULL_HANDLE;
  std::unique_ptr<runtime::WorkspacePool> pool;
  std::recursive_mutex mutex;   // the batches, staging and cache; held while recording or submitting
  Batch open;                   // recording (cmd set) or none
  std::deque<Batch> in_flight;  // submitted, oldest first
  std::vector<Batch> idle;      // done, ready to record again
  Buffer* staging = nullptr;    // host-visible, mapped at `staged`
  void* staged = nullptr;
  std::multimap<VkDeviceSize, Buffer*> cached;  // freed device buffers by size
  VkDeviceSize cached_bytes = 0;

  std::string describe() const {
    return std::string(properties.deviceName) + " (Vulkan " +
           std::to_string(VK_API_VERSION_MAJOR(properties.apiVersion)) + "." +
           std::to_string(VK_API_VERSION_MINOR(properties.apiVersion)) + ")";
  }
};

constexpr uint32_t kSetsPerBatch = 256, kBuffersPerSet = 16;
constexpr size_t kInFlight = 3;                                 // batches submitted and not waited for
constexpr VkDeviceSize kCachedBytes = VkDeviceSize(256) << 20;  // freed buffers kept for reuse
constexpr VkDeviceSize kStagingKept = VkDeviceSize(64) << 20;   // larger staging buffers are not kept

void flush(DeviceState& s);  // submits the open batch and waits for every batch (below)

// The instance and every physical device, found once; kept for the
// process's life (drivers tear down their own state at exit).
class Vulkan {
 public:
  static Vulkan& get() {
    static auto* vulkan = new Vulkan();
    return *vulkan;
  }
  DeviceState& at(int id) {
    enumerate();
    if (id < 0 || static_cast<size_t>(id) >= devices_.size()) {
      LOOM_THROW(Error) << "vulkan: no device " << id << " (there " << (devices_.size() == 1 ? "is " : "are ")
                        << devices_.size() << ": " << list() << ")";
    }
    return *devices_[id];
  }
  DeviceState& open(int id) {
    DeviceState& s = at(id);
    std::call_once(s.opened, [&] { open_device(s, id); });
    return s;
  }
  std::string list() {
    std::string out;
    for (size_t k = 0; k < devices_.size(); ++k)
      out += (k ? "; " : "") + std::to_string(k) + " " + devices_[k]->describe();
    return out;
  }

 private:
  void enumerate() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (enumerated_) return;
    const char* env = std::getenv("LOOM_VULKAN_VALIDATION");
    bool validate = env && std::strcmp(env, "") != 0 && std::strcmp(env, "0") != 0;
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "loom";
    app.apiVersion = VK_API_VERSION_1_2;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* extension = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.pApplicationInfo = &app;
    if (validate) {
      info.enabledLayerCount = 1;
      info.ppEnabledLayerNames = &layer;
      info.enabledExtensionCount = 1;
      info.ppEnabledExtensionNames = &extension;
    }
    VkResult r = vkCreateInstance(&info, nullptr, &instance_);
    if (r == VK_ERROR_LAYER_NOT_PRESENT) {
      LOOM_THROW(Error) << "vulkan: LOOM_VULKAN_VALIDATION is set but the Khronos validation layer is missing: install "
                           "Debian's vulkan-validationlayers";
    }
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER) no_device();
    check(r, "cannot create an instance");
    if (validate) {
      auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
      VkDebugUtilsMessengerCreateInfoEXT m{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
      m.messageSeverity =
          VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
      m.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
      m.pfnUserCallback = on_message;
      if (create) check(create(instance_, &m, nullptr, &messenger_), "cannot create the validation messenger");
    }
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance_, &n, nullptr);
    if (n == 0) no_device();
    std::vector<VkPhysicalDevice> physical(n);
    vkEnumeratePhysicalDevices(instance_, &n, physical.data());
    for (VkPhysicalDevice p : physical) {
      auto s = std::make_unique<DeviceState>();
      s->physical = p;
      vkGetPhysicalDeviceProperties(p, &s->properties);
      vkGetPhysicalDeviceMemoryProperties(p, &s->memory);
      VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
      VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
      VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
      bool v12 = s->properties.apiVersion >= VK_API_VERSION_1_2;
      if (v12) {
        f2.pNext = &f11;
        f11.pNext = &f12;
      }
      vkGetPhysicalDeviceFeatures2(p, &f2);
      s->int64 = f2.features.shaderInt64;
      s->features.fp64 = f2.features.shaderFloat64;
      s->features.fp16 = v12 && f12.shaderFloat16 && f11.storageBuffer16BitAccess && f2.features.shaderInt16;
      s->features.int8 = v12 && f12.shaderInt8 && f12.storageBuffer8BitAccess;
      uint32_t families = 0;
      vkGetPhysicalDeviceQueueFamilyProperties(p, &families, nullptr);
      std::vector<VkQueueFamilyProperties> props(families);
      vkGetPhysicalDeviceQueueFamilyProperties(p, &families, props.data());
      bool found = false;
      for (uint32_t k = 0; k < families && !found; ++k) {
        if (props[k].queueFlags & VK_QUEUE_COMPUTE_BIT) {
          s->family = k;
          found = true;
        }
      }
      if (found) devices_.push_back(std::move(s));
    }
    if (devices_.empty()) no_device();
    enumerated_ = true;
  }

  [[noreturn]] static void no_device() {
    LOOM_THROW(Error) << "vulkan: no Vulkan device with a compute queue found: install a driver, for example Debian's "
                         "mesa-vulkan-drivers (lavapipe, Vulkan on the CPU)";
  }

  void open_device(DeviceState& s, int id) {
    // Every feature the device has that the kernels may use, enabled.
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f2.features.shaderInt64 = s.int64;
    f2.features.shaderFloat64 = s.features.fp64;
    f2.features.shaderInt16 = s.features.fp16;
    if (s.properties.apiVersion >= VK_API_VERSION_1_2) {
      f2.pNext = &f11;
      f11.pNext = &f12;
      f11.storageBuffer16BitAccess = s.features.fp16;
      f12.shaderFloat16 = s.features.fp16;
      f12.shaderInt8 = s.features.int8;
      f12.storageBuffer8BitAccess = s.features.int8;
    }
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue.queueFamilyIndex = s.family;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    info.pNext = &f2;
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &queue;
    check(vkCreateDevice(s.physical, &info, nullptr, &s.device), "cannot open " + s.describe());
    vkGetDeviceQueue(s.device, s.family, 0, &s.queue);
    VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = s.family;
    check(vkCreateCommandPool(s.device, &pool, nullptr, &s.commands), "cannot create a command pool");
    VkPipelineCacheCreateInfo cache{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    check(vkCreatePipelineCache(s.device, &cache, nullptr, &s.cache), "cannot create a pipeline cache");
    DeviceState* state = &s;
    s.pool = std::make_unique<runtime::WorkspacePool>(
        [state, id](size_t bytes) { return static_cast<void*>(allocate(*state, id, bytes)); },
        [state](void* p) {
          flush(*state);  // no recorded command may still use it
          release(*state, static_cast<Buffer*>(p));
        });
  }

 public:
  static uint32_t memory_type(const DeviceState& s, uint32_t bits, VkMemoryPropertyFlags wanted) {
    for (uint32_t k = 0; k < s.memory.memoryTypeCount; ++k) {
      if ((bits & (1u << k)) && (s.memory.memoryTypes[k].propertyFlags & wanted) == wanted) return k;
    }
    return UINT32_MAX;
  }

  // A buffer of `bytes` with memory of `wanted` properties (device-local
  // for tensors, host-visible for staging; any memory where the device
  // has no such type).
  static Buffer* allocate(DeviceState& s, int id, size_t bytes, bool staging = false) {
    VkDeviceSize size = std::max<VkDeviceSize>((bytes + 3) / 4 * 4, 4);
    if (!staging && size > s.properties.limits.maxStorageBufferRange) {
      LOOM_THROW(Error) << "vulkan: cannot allocate " << readable_bytes(bytes) << " on vulkan:" << id
                        << ": more than one storage buffer may hold on " << s.describe() << " ("
                        << readable_bytes(s.properties.limits.maxStorageBufferRange) << ")";
    }
    auto b = std::make_unique<Buffer>();
    b->size = size;
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = size;
    info.usage = staging ? VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT
                         : VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    check(vkCreateBuffer(s.device, &info, nullptr, &b->buffer), "cannot create a buffer");
    VkMemoryRequirements needs;
    vkGetBufferMemoryRequirements(s.device, b->buffer, &needs);
    VkMemoryPropertyFlags wanted = staging ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                           : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    uint32_t type = memory_type(s, needs.memoryTypeBits, wanted);
    if (type == UINT32_MAX && !staging) type = memory_type(s, needs.memoryTypeBits, 0);
    if (type == UINT32_MAX) {
      vkDestroyBuffer(s.device, b->buffer, nullptr);
      LOOM_THROW(Error) << "vulkan: " << s.describe() << " has no host-visible, coherent memory for staging copies";
    }
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = needs.size;
    alloc.memoryTypeIndex = type;
    VkResult r = vkAllocateMemory(s.device, &alloc, nullptr, &b->memory);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY && drop_cache(s))
      r = vkAllocateMemory(s.device, &alloc, nullptr, &b->memory);
    if (r != VK_SUCCESS) {
      vkDestroyBuffer(s.device, b->buffer, nullptr);
      check(r,
            "cannot allocate " + readable_bytes(bytes) + " on vulkan:" + std::to_string(id) + ": out of device memory");
    }
    check(vkBindBufferMemory(s.device, b->buffer, b->memory, 0), "cannot bind a buffer's memory");
    return b.release();
  }
  static void release(DeviceState& s, Buffer* b) {
    if (!b) return;
    vkDestroyBuffer(s.device, b->buffer, nullptr);
    vkFreeMemory(s.device, b->memory, nullptr);
    delete b;
  }
  // A device buffer of `bytes`: a freed one of the same size, else new.
  static Buffer* take(DeviceState& s, int id, size_t bytes) {
    VkDeviceSize size = std::max<VkDeviceSize>((bytes + 3) / 4 * 4, 4);
    {
      std::lock_guard<std::recursive_mutex> lock(s.mutex);
      auto it = s.cached.find(size);
      if (it != s.cached.end()) {
        Buffer* b = it->second;
        s.cached.erase(it);
        s.cached_bytes -= size;
        return b;
      }
    }
    return allocate(s, id, bytes);
  }
  // Keeps a freed device buffer for reuse; past kCachedBytes, waits for
  // the device and frees the kept ones.
  static void give(DeviceState& s, Buffer* b) {
    std::lock_guard<std::recursive_mutex> lock(s.mutex);
    s.cached.emplace(b->size, b);
    s.cached_bytes += b->size;
    if (s.cached_bytes > kCachedBytes) drop_cache(s);
  }
  // Frees the kept buffers (after the device is done with them); whether
  // there were any.
  static bool drop_cache(DeviceState& s) {
    std::lock_guard<std::recursive_mutex> lock(s.mutex);
    if (s.cached.empty()) return false;
    flush(s);
    for (auto& [size, b] : s.cached) release(s, b);
    s.cached.clear();
    s.cached_bytes = 0;
    return true;
  }

 private:
  std::mutex mutex_;
  bool enumerated_ = false;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::vector<std::unique_ptr<DeviceState>> devices_;
};

// ---- the batch -------------------------------------------------------------------------

// Orders every command recorded so far before every later one.
void barrier_after(VkCommandBuffer cmd) {
  VkMemoryBarrier m{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  m.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  m.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                    VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(
      cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &m, 0,
      nullptr, 0, nullptr);
}

// The open command buffer, begun if none is (the caller holds s.mutex):
// an idle batch reused, or a new one.
VkCommandBuffer batch(DeviceState& s) {
  if (s.open.cmd) return s.open.cmd;
  Batch b;
  if (!s.idle.empty()) {
    b = s.idle.back();
    s.idle.pop_back();
  } else {
    VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    info.commandPool = s.commands;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(s.device, &info, &b.cmd), "cannot allocate a command buffer");
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerBatch * kBuffersPerSet};
    VkDescriptorPoolCreateInfo pool{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pool.maxSets = kSetsPerBatch;
    pool.poolSizeCount = 1;
    pool.pPoolSizes = &size;
    check(vkCreateDescriptorPool(s.device, &pool, nullptr, &b.descriptors), "cannot create a descriptor pool");
    VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(vkCreateFence(s.device, &fence, nullptr, &b.fence), "cannot create a fence");
  }
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(b.cmd, &begin), "cannot begin a command buffer");  // resets it
  s.open = b;
  return s.open.cmd;
}

// Waits for the oldest batch in flight; its descriptor sets go back to
// its pool and it becomes idle.
void retire_oldest(DeviceState& s) {
  Batch b = s.in_flight.front();
  s.in_flight.pop_front();
  s.idle.push_back(b);  // reusable whatever the wait says: its fence is reset below or the device is lost
  check(vkWaitForFences(s.device, 1, &b.fence, VK_TRUE, UINT64_MAX), "waiting for " + s.describe());
  check(vkResetFences(s.device, 1, &b.fence), "cannot reset a fence");
  check(vkResetDescriptorPool(s.device, b.descriptors, 0), "cannot reset a descriptor pool");
}

// Submits the open batch without waiting (past kInFlight batches, waits
// for the oldest).
void submit(DeviceState& s) {
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  if (!s.open.cmd) return;
  Batch b = s.open;
  s.open = Batch{};
  b.recorded = 0;
  check(vkEndCommandBuffer(b.cmd), "cannot end a command buffer");
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.commandBufferCount = 1;
  info.pCommandBuffers = &b.cmd;
  VkResult r = vkQueueSubmit(s.queue, 1, &info, b.fence);
  if (r != VK_SUCCESS) {
    s.idle.push_back(b);
    check(r, "cannot submit work to " + s.describe());
  }
  s.in_flight.push_back(b);
  while (s.in_flight.size() > kInFlight) retire_oldest(s);
}

// Submits the open batch and waits for every batch in flight.
void flush(DeviceState& s) {
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  submit(s);
  while (!s.in_flight.empty()) retire_oldest(s);
}

size_t tensor_bytes(const DLTensor& t) {
  size_t bytes = 1;
  for (int i = 0; i < t.ndim; ++i) bytes *= static_cast<size_t>(t.shape[i]);
  return bytes * ((t.dtype.bits * t.dtype.lanes + 7) / 8);
}

// Copies between a device buffer and host memory through the device's
// staging buffer (grown to the largest copy up to kStagingKept; a larger
// copy gets a buffer of its own, freed after it).
void host_copy(DeviceState& s, int id, Buffer* device, size_t offset, char* host, size_t bytes, bool to_device) {
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  Buffer* staging = s.staging;
  void* mapped = s.staged;
  bool own = false;
  if (!staging || staging->size < bytes) {
    if (bytes <= kStagingKept && s.staging) {  // the old one is idle: every copy waits for its work
      vkUnmapMemory(s.device, s.staging->memory);
      Vulkan::release(s, s.staging);
      s.staging = nullptr;
      s.staged = nullptr;
    }
    staging = Vulkan::allocate(s, id, bytes, true);
    mapped = nullptr;
    VkResult r = vkMapMemory(s.device, staging->memory, 0, VK_WHOLE_SIZE, 0, &mapped);
    if (r != VK_SUCCESS) Vulkan::release(s, staging);
    check(r, "cannot map a staging buffer");
    own = bytes > kStagingKept;
    if (!own) {
      s.staging = staging;
      s.staged = mapped;
    }
  }
  auto done = [&] {
    if (!own) return;
    vkUnmapMemory(s.device, staging->memory);
    Vulkan::release(s, staging);
  };
  try {
    if (to_device) std::memcpy(mapped, host, bytes);
    VkCommandBuffer cmd = batch(s);
    VkBufferCopy region{to_device ? 0 : offset, to_device ? offset : 0, bytes};
    vkCmdCopyBuffer(cmd, to_device ? staging->buffer : device->buffer, to_device ? device->buffer : staging->buffer, 1,
                    &region);
    barrier_after(cmd);
    flush(s);
    if (!to_device) std::memcpy(host, mapped, bytes);
  } catch (...) {
    done();
    throw;
  }
  done();
}

class VulkanDeviceAPI : public runtime::DeviceAPI {
 public:
  void* alloc(Device d, size_t bytes, size_t) override {
    return Vulkan::take(Vulkan::get().open(d.device_id), d.device_id, bytes);
  }
  // Kept for the next allocation of its size, without waiting (see the
  // file's comment).
  void free(Device d, void* ptr) override {
    if (!ptr) return;
    Vulkan::give(Vulkan::get().open(d.device_id), static_cast<Buffer*>(ptr));
  }
  void copy(const DLTensor& from, DLTensor& to, void*) override {
    size_t bytes = tensor_bytes(from);
    if (bytes == 0) return;
    bool from_device = from.device.device_type == kDLVulkan, to_device = to.device.device_type == kDLVulkan;
    auto* src = static_cast<Buffer*>(from.data);
    auto* dst = static_cast<Buffer*>(to.data);
    if (from_device && to_device && from.device.device_id == to.device.device_id) {
      DeviceState& s = Vulkan::get().open(to.device.device_id);
      std::lock_guard<std::recursive_mutex> lock(s.mutex);
      VkCommandBuffer cmd = batch(s);
      VkBufferCopy region{from.byte_offset, to.byte_offset, bytes};
      vkCmdCopyBuffer(cmd, src->buffer, dst->buffer, 1, &region);
      barrier_after(cmd);
    } else if (from_device && to_device) {  // two devices: through the host
      std::string staging(bytes, '\0');
      host_copy(Vulkan::get().open(from.device.device_id), from.device.device_id, src, from.byte_offset, staging.data(),
                bytes, false);
      host_copy(Vulkan::get().open(to.device.device_id), to.device.device_id, dst, to.byte_offset, staging.data(),
                bytes, true);
    } else if (to_device) {
      host_copy(Vulkan::get().open(to.device.device_id), to.device.device_id, dst, to.byte_offset,
                const_cast<char*>(static_cast<const char*>(from.data)) + from.byte_offset, bytes, true);
    } else if (from_device) {
      host_copy(Vulkan::get().open(from.device.device_id), from.device.device_id, src, from.byte_offset,
                static_cast<char*>(to.data) + to.byte_offset, bytes, false);
    } else {
      LOOM_THROW(Error) << "vulkan: a copy with neither side on a Vulkan device";
    }
  }
  void synchronize(Device d, void*) override { flush(Vulkan::get().open(d.device_id)); }
  void* alloc_workspace(Device d, size_t bytes) override { return Vulkan::get().open(d.device_id).pool->alloc(bytes); }
  // Back to the pool without waiting: a block handed out again is used by
  // later commands of the same queue, which the barrier after each command
  // orders after every use of it so far.
  void free_workspace(Device d, void* ptr) override { Vulkan::get().open(d.device_id).pool->release(ptr); }
};

// ---- the module ------------------------------------------------------------------------

// How a scalar travels in the push constants: its size (its alignment
// too) and whether it is a float.
struct ScalarKind {
  int bytes;
  bool is_float;
};
ScalarKind scalar_kind(const runtime::KernelNode& k, size_t i) {
  static const std::map<std::string, ScalarKind> kinds = {{"float32", {4, true}}, {"float64", {8, true}},
                                                          {"int64", {8, false}},  {"uint64", {8, false}},
                                                          {"int32", {4, false}},  {"uint32", {4, false}}};
  auto found = kinds.find(k.args[i].as_string());
  if (found == kinds.end()) {
    LOOM_THROW(Error) << "vulkan kernel '" << k.name << "': argument " << i << " of kind '" << k.args[i].as_string()
                      << "' cannot be a push constant (32- and 64-bit scalars only)";
  }
  return found->second;
}

// Compiled kernels on one device (a runtime::KernelModuleNode: the base
// keeps the kernel table, each kernel's GLSL as its source and its SPIR-V
// as its binary, checks each call and saves the module).
class VulkanModuleNode : public runtime::KernelModuleNode {
 public:
  std::string type_key() const override { return "vulkan"; }
  std::string inspect_source(const std::string& format) const override {
    if (format != "glsl" && format != "vulkan") {
      LOOM_THROW(Error) << "vulkan module: no source format '" << format << "' (it has: glsl)";
    }
    std::string out;
    for (size_t k = 0; k < kernels.size(); ++k) out += kernel(k).source + "\n";
    return out;
  }
  // Every kernel has SPIR-V: whole words, starting with SPIR-V's magic
  // number.  Pipelines are made at a kernel's first launch.
  void restore() override {
    for (size_t k = 0; k < kernels.size(); ++k) {
      const runtime::KernelNode& kernel = this->kernel(k);
      size_t size = kernel.binary.defined() ? kernel.binary.data().size() : 0;
      uint32_t magic = 0;
      if (size >= 4) std::memcpy(&magic, kernel.binary.data().data(), 4);
      if (size == 0 || size % 4 != 0 || magic != 0x07230203) {
        LOOM_THROW(Error) << "vulkan module: kernel '" << kernel.name << "' has no SPIR-V (" << size << " bytes"
                          << (size && size % 4 ? ", not whole words"
                              : size           ? ", no SPIR-V magic"
                                               : "")
                          << ")";
      }
    }
  }
  LOOM_OBJECT(VulkanModuleNode, runtime::KernelModuleNode, "vulkan.Module");

 private:
  // What a kernel's pipelines share: its shader module and layouts.
  struct Program {
    VkShaderModule shader = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    uint32_t buffers = 0, push_bytes = 0;
    std::vector<std::pair<uint32_t, ScalarKind>> scalars;  // push-constant offset of each scalar argument
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, VkPipeline> pipelines;  // by block size
  };

  Program& program(DeviceState& s, size_t index) const {
    Program& p = programs_[index];
    if (p.shader) return p;
    const runtime::KernelNode& k = kernel(index);
    for (size_t i = 0; i < k.args.size(); ++i) {
      if (k.args[i].as_string() == "buffer") {
        ++p.buffers;
        continue;
      }
      ScalarKind kind = scalar_kind(k, i);
      p.push_bytes = (p.push_bytes + kind.bytes - 1) / kind.bytes * kind.bytes;
      p.scalars.emplace_back(p.push_bytes, kind);
      p.push_bytes += kind.bytes;
    }
    if (p.buffers > kBuffersPerSet) {
      LOOM_THROW(Error) << "vulkan kernel '" << k.name << "' takes " << p.buffers << " buffers; Loom binds at most "
                        << kBuffersPerSet;
    }
    if (p.push_bytes > s.properties.limits.maxPushConstantsSize) {
      LOOM_THROW(Error) << "vulkan kernel '" << k.name << "': its scalars take " << p.push_bytes
                        << " bytes, more than the " << s.properties.limits.maxPushConstantsSize << " of push constants "
                        << s.describe() << " has";
    }
    VkShaderModuleCreateInfo shader{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    const std::string& spirv = k.binary.data();  // whole words (restore)
    std::vector<uint32_t> words(spirv.size() / 4);
    std::memcpy(words.data(), spirv.data(), spirv.size());
    shader.codeSize = spirv.size();
    shader.pCode = words.data();
    check(vkCreateShaderModule(s.device, &shader, nullptr, &p.shader), "cannot load kernel '" + k.name + "'");
    std::vector<VkDescriptorSetLayoutBinding> bindings(p.buffers);
    for (uint32_t b = 0; b < p.buffers; ++b) {
      bindings[b] = {b, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    }
    VkDescriptorSetLayoutCreateInfo set{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    set.bindingCount = p.buffers;
    set.pBindings = bindings.data();
    check(vkCreateDescriptorSetLayout(s.device, &set, nullptr, &p.set_layout), "cannot create a descriptor set layout");
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, p.push_bytes};
    VkPipelineLayoutCreateInfo layout{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout.setLayoutCount = 1;
    layout.pSetLayouts = &p.set_layout;
    layout.pushConstantRangeCount = p.push_bytes ? 1 : 0;
    layout.pPushConstantRanges = &range;
    check(vkCreatePipelineLayout(s.device, &layout, nullptr, &p.layout), "cannot create a pipeline layout");
    return p;
  }

  VkPipeline pipeline(DeviceState& s, Program& p, size_t index, const uint32_t block[3]) const {
    auto key = std::make_tuple(block[0], block[1], block[2]);
    auto found = p.pipelines.find(key);
    if (found != p.pipelines.end()) return found->second;
    VkSpecializationMapEntry entries[3] = {{0, 0, 4}, {1, 4, 4}, {2, 8, 4}};
    VkSpecializationInfo spec{3, entries, sizeof(uint32_t) * 3, block};
    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = p.shader;
    info.stage.pName = "main";
    info.stage.pSpecializationInfo = &spec;
    info.layout = p.layout;
    VkPipeline made = VK_NULL_HANDLE;
    check(vkCreateComputePipelines(s.device, s.cache, 1, &info, nullptr, &made),
          "cannot make the pipeline of kernel '" + kernel(index).name + "'");
    p.pipelines.emplace(key, made);
    return made;
  }

  // Recorded into the device's batch (not waited for).
  void launch(size_t index, const runtime::LaunchSizes& sizes, const Any* args) const override {
    const runtime::KernelNode& k = kernel(index);
    DeviceState& s = Vulkan::get().open(device_id);
    const VkPhysicalDeviceLimits& limits = s.properties.limits;
    uint32_t grid[3], block[3];
    uint64_t threads = 1;
    for (int d = 0; d < 3; ++d) {
      int64_t g = sizes.grid[d], b = sizes.block[d];
      if (g > limits.maxComputeWorkGroupCount[d] || b > limits.maxComputeWorkGroupSize[d]) {
        LOOM_THROW(Error) << "vulkan kernel '" << k.name << "': a launch of " << g << " workgroups of " << b
                          << " threads along axis " << d << " is more than " << s.describe() << " runs (at most "
                          << limits.maxComputeWorkGroupCount[d] << " of " << limits.maxComputeWorkGroupSize[d] << ")";
      }
      grid[d] = static_cast<uint32_t>(g);
      block[d] = static_cast<uint32_t>(b);
      threads *= static_cast<uint64_t>(b);
    }
    if (threads > limits.maxComputeWorkGroupInvocations) {
      LOOM_THROW(Error) << "vulkan kernel '" << k.name << "': a workgroup of " << threads << " threads is more than "
                        << s.describe() << " runs (at most " << limits.maxComputeWorkGroupInvocations
                        << "; lower the target's max-workgroup-size)";
    }
    std::lock_guard<std::recursive_mutex> lock(s.mutex);
    Program& p = program(s, index);
    VkPipeline pipe = pipeline(s, p, index, block);
    if (s.open.recorded >= static_cast<int>(kSetsPerBatch)) submit(s);
    VkCommandBuffer cmd = batch(s);
    VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    alloc.descriptorPool = s.open.descriptors;
    alloc.descriptorSetCount = 1;
    alloc.pSetLayouts = &p.set_layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    check(vkAllocateDescriptorSets(s.device, &alloc, &set), "cannot allocate a descriptor set");
    std::vector<VkDescriptorBufferInfo> infos;
    std::string push(p.push_bytes, '\0');
    size_t scalar = 0;
    for (size_t i = 0; i < k.args.size(); ++i) {
      const Any& a = args[i];
      if (k.args[i].as_string() == "buffer") {
        auto* b = static_cast<Buffer*>(a.as_opaque_ptr());
        if (!b) LOOM_THROW(Error) << "vulkan kernel '" << k.name << "': argument " << i << " is not a Vulkan buffer";
        infos.push_back({b->buffer, 0, VK_WHOLE_SIZE});
        continue;
      }
      auto [offset, kind] = p.scalars[scalar++];
      if (kind.is_float && kind.bytes == 4) {
        float v = static_cast<float>(a.as_float());
        std::memcpy(&push[offset], &v, 4);
      } else if (kind.is_float) {
        double v = a.as_float();
        std::memcpy(&push[offset], &v, 8);
      } else if (kind.bytes == 4) {
        auto v = static_cast<int32_t>(a.as_int());
        std::memcpy(&push[offset], &v, 4);
      } else {
        int64_t v = a.as_int();
        std::memcpy(&push[offset], &v, 8);
      }
    }
    std::vector<VkWriteDescriptorSet> writes(infos.size());
    for (size_t b = 0; b < infos.size(); ++b) {
      writes[b] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[b].dstSet = set;
      writes[b].dstBinding = static_cast<uint32_t>(b);
      writes[b].descriptorCount = 1;
      writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[b].pBufferInfo = &infos[b];
    }
    if (!writes.empty())
      vkUpdateDescriptorSets(s.device, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
    if (p.push_bytes) vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p.push_bytes, push.data());
    vkCmdDispatch(cmd, grid[0], grid[1], grid[2]);
    barrier_after(cmd);
    ++s.open.recorded;
  }

  mutable std::map<size_t, Program> programs_;  // by kernel index, made on first launch
};

}  // namespace

std::shared_ptr<runtime::DeviceAPI> make_device_api() { return std::make_shared<VulkanDeviceAPI>(); }

std::string describe_device(int device_id) { return Vulkan::get().at(device_id).describe(); }

Features device_features(int device_id) {
  DeviceState& s = Vulkan::get().at(device_id);
  if (!s.int64) {
    LOOM_THROW(Error) << "vulkan: " << s.describe()
                      << " lacks shaderInt64, which Loom's kernels need for their index "
                         "arithmetic";
  }
  return s.features;
}

int64_t max_workgroup_size(int device_id) {
  return Vulkan::get().at(device_id).properties.limits.maxComputeWorkGroupInvocations;
}

runtime::Module make_module(Array kernels, int device_id) {
  auto node = make_object<VulkanModuleNode>();
  node->kernels = std::move(kernels);
  node->device_id = device_id;
  return runtime::KernelModuleNode::finish(node);
}

void register_module_kind() { runtime::KernelModuleNode::register_loader<VulkanModuleNode>("vulkan"); }

std::string take_validation_messages() {
  std::lock_guard<std::mutex> lock(messages_mutex);
  std::string out;
  out.swap(messages);
  return out;
}

}  // namespace loom::vulkan
