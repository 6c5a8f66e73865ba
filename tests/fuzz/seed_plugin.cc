// A plugin with a manifest and nothing else: the ELF seed of the manifest
// fuzz target (a real shared object as the core reads plugins).
#include <loom/plugin_sdk.h>

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("fuzz_seed") LOOM_PLUGIN_VERSION("1.0.0")
                         LOOM_PLUGIN_DESCRIPTION("the fuzzers' seed plugin"));
