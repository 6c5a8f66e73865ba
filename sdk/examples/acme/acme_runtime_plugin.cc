// The Acme plugin's runtime half: what an exported library with Acme code
// needs at run time, and nothing of the compiler (docs/plugins.md, "Write
// a backend", step 7):
//   the device "acme" and its DeviceAPI ............... device.cc
//   the runtime module kind "acme" and its loader ...... runtime.cc
// It links the runtime library alone (RUNTIME_ONLY in CMakeLists.txt);
// the compiler half, acme_plugin.cc, requires it.
#include <loom/plugin_sdk.h>

#include "acme.h"

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("acme_runtime") LOOM_PLUGIN_VERSION("1.0.0")
                         LOOM_PLUGIN_DESCRIPTION("Acme DSP's runtime half: device acme, the runtime module acme"));

LOOM_PLUGIN_INIT(ctx) {
  acme::register_device();
  acme::register_runtime_module(ctx);
}
