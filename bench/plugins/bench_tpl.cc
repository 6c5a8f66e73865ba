// The plugin the benchmarks copy.  Every occurrence of the 12-byte name
// "bench_tpl_00" (manifest name, capability, function name) is rewritten in
// each copy to bench_tpl_01, bench_tpl_02, ..., which keeps the file valid
// and makes each copy a distinct plugin.
#include "loom/plugin_sdk.h"

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("bench_tpl_00") LOOM_PLUGIN_VERSION("1.0.0")
                         LOOM_PLUGIN_DESCRIPTION("benchmark fixture: a trivial plugin")
                             LOOM_PLUGIN_PROVIDES("function:bench_tpl_00.f"));

LOOM_PLUGIN_INIT(ctx) {
  ctx.register_function("bench_tpl_00.f", [](int64_t v) { return v + 1; });
}
