// The OpenCL runtime (docs/target-opencl.md): device:opencl, a DeviceAPI
// over the ICD loader, and the runtime module `opencl` that holds a
// program's source and binary and launches its kernels.  Only
// opencl_runtime.cc includes OpenCL's headers.  It is the runtime half
// (plugin opencl_runtime, linking libloom_runtime only): the compiler half
// (plugin opencl) reaches it through the global functions
// opencl.make_module and opencl.find_device.
#ifndef LOOM_PLUGINS_OPENCL_OPENCL_RUNTIME_H_
#define LOOM_PLUGINS_OPENCL_OPENCL_RUNTIME_H_

#include <loom/runtime/device_api.h>
#include <loom/runtime/kernel_module.h>
#include <loom/runtime/module.h>

#include <memory>
#include <string>
#include <vector>

namespace loom::opencl {

// The DeviceAPI registered as "opencl".  Devices are numbered across every
// platform the ICD loader finds, in its order; nothing is opened until the
// first use.
std::shared_ptr<runtime::DeviceAPI> make_device_api();

// What a device is: "PLATFORM / DEVICE (OpenCL VERSION)", for messages and
// listings; Error naming the package to install when there is no platform.
std::string describe_device(int device_id);
// The index of the first device whose platform's name contains `platform`
// (any platform for ""), counting `device` devices in; Error naming what
// there is when none matches.
int find_device(const std::string& platform, int device);

// A program built for device `device_id` from `source` (its kernels in
// `kernels`, runtime.Kernel objects: name and argument kinds): built now,
// so a kernel that does not build is an Error with the build log and the
// IR function's name.
runtime::Module make_module(std::string source, Array kernels, int device_id);
// Registers the module kind opencl (its object type and loader), from the
// plugin's init.
void register_module_kind();

}  // namespace loom::opencl

#endif  // LOOM_PLUGINS_OPENCL_OPENCL_RUNTIME_H_
