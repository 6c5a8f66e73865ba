// The Acme DSP backend: what its files share.  Acme is a vendor's DSP
// programmed in C (its compiler is the system C compiler here), with its
// own memory (host memory here, as on a board that shares it).
//
// Two plugins: acme (the compiler half: operator, pass, target kind,
// pattern table, codegen; links the compiler) and acme_runtime (the
// runtime half: device and runtime module; links the runtime library
// alone, so a deployed model needs no compiler).  Only declarations here,
// so that the runtime half's files see no compiler header.
#ifndef ACME_ACME_H_
#define ACME_ACME_H_

#include <cstdint>

namespace loom {
class PluginContext;
namespace ir {
class IRModule;
}
namespace target {
class Target;
}
namespace runtime {
class Module;
}
}  // namespace loom

namespace acme {

// swish.cc (acme): the operator acme.swish and the pass AcmeFuseSwish.
void register_swish();
// codegen.cc (acme): the codegen of target kind acme (prim functions, and
// the regions partitioning gives it).
loom::runtime::Module codegen(const loom::ir::IRModule& module, const loom::target::Target& target);
// runtime.cc (acme_runtime): the runtime module kind "acme", its loader
// and acme.make_module, through which the codegen makes its modules.
void register_runtime_module(loom::PluginContext& ctx);
// device.cc (acme_runtime): the device "acme" and its DeviceAPI.
constexpr int32_t kDeviceCode = 100;  // from the vendor range (Device::kVendorFirst..kVendorLast)
void register_device();

}  // namespace acme

#endif  // ACME_ACME_H_
