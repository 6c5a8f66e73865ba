// A complete Loom plugin.  Copy this folder, rename the plugin, and replace
// the function below with what your plugin provides.
//
// The manifest is data read by the core without running this file; the init
// body runs once, when the plugin is first needed, and registers what the
// plugin provides (the build runs it once too, to record those
// registrations: docs/plugins.md, "Declarations").  Throwing from init
// fails the load cleanly: everything registered so far is removed again.
#include <loom/plugin_sdk.h>

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("template_plugin") LOOM_PLUGIN_VERSION("0.1.0")
                         LOOM_PLUGIN_DESCRIPTION("Template: a starting point for out-of-tree plugins"));

LOOM_PLUGIN_INIT(ctx) {
  ctx.register_function(
      "template_plugin.scale", [](double value, double factor) { return value * factor; },
      "Multiplies value by factor.");
}
