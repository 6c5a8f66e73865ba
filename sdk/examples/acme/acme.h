// The Acme DSP backend: what its files share.  Acme is a vendor's DSP
// programmed in C (its compiler is the system C compiler here), with its
// own memory (host memory here, as on a board that shares it).
#ifndef ACME_ACME_H_
#define ACME_ACME_H_

#include <loom/runtime/module.h>
#include <loom/target/target.h>

namespace acme {

// swish.cc: the operator acme.swish and the pass AcmeFuseSwish.
void register_swish();
// codegen.cc: the codegen of target kind acme (prim functions, and the
// regions partitioning gives it) and the runtime module kind "acme".
loom::runtime::Module codegen(const loom::ir::IRModule& module, const loom::target::Target& target);
loom::runtime::Module load_module(const std::string& bytes);
void register_module_type();
// device.cc: the device "acme" and its DeviceAPI.
constexpr int32_t kDeviceCode = 100;  // from the vendor range (Device::kVendorFirst..kVendorLast)
void register_device();

}  // namespace acme

#endif  // ACME_ACME_H_
