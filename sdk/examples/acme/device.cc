// The device "acme": Acme's memory, as a DeviceAPI (loom/runtime/device_api.h).
// DLPack has no code for a vendor's accelerator, so the plugin names its
// device with a code from the vendor range (Device::register_type) before
// it registers the API; "acme:0" then reads as this device in Python,
// YAML and loomc, and loads this plugin on first use.
//
// On the board, Acme's memory is reached through its driver; here, as on a
// board that shares the host's memory, it is host memory, so copies are
// memcpy and synchronisation has nothing to wait for.
#include <loom/runtime/device_api.h>

#include <cstdlib>
#include <cstring>

#include "acme.h"

namespace acme {

namespace {
class AcmeDeviceAPI : public loom::runtime::DeviceAPI {
 public:
  void* alloc(loom::Device device, size_t bytes, size_t alignment) override {
    check(device);
    if (alignment < 64) alignment = 64;  // Acme's DMA works on 64-byte lines
    void* p = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
    if (!p) LOOM_THROW(Error) << "acme: cannot allocate " << bytes << " bytes";
    return p;
  }
  void free(loom::Device, void* ptr) override { std::free(ptr); }
  void copy(const DLTensor& from, DLTensor& to, void*) override {
    size_t bytes = 1;
    for (int i = 0; i < from.ndim; ++i) bytes *= static_cast<size_t>(from.shape[i]);
    bytes *= (from.dtype.bits * from.dtype.lanes + 7) / 8;
    std::memcpy(static_cast<char*>(to.data) + to.byte_offset, static_cast<const char*>(from.data) + from.byte_offset,
                bytes);
  }
  void synchronize(loom::Device device, void*) override { check(device); }
  void* alloc_workspace(loom::Device device, size_t bytes) override { return alloc(device, bytes, 64); }
  void free_workspace(loom::Device device, void* ptr) override { free(device, ptr); }

 private:
  static void check(loom::Device device) {
    if (device.device_id != 0) {
      LOOM_THROW(Error) << "acme: there is one Acme DSP (acme:0), not " << device.to_string();
    }
  }
};
}  // namespace

void register_device() {
  loom::Device::register_type("acme", kDeviceCode);
  loom::runtime::DeviceAPIRegistry::register_api("acme", std::make_shared<AcmeDeviceAPI>());
}

}  // namespace acme
