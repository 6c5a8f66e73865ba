// The hello plugin: the smallest real plugin, used by the main demo and the
// tests of discovery and lazy loading.  It provides three functions:
//   hello.greet(name: str) -> str
//   hello.add(a: int, b: int) -> int
//   hello.describe(value: Any) -> str   (the core's generic printer)
#include <loom/object/structural.h>
#include <loom/plugin_sdk.h>

LOOM_PLUGIN_MANIFEST(LOOM_PLUGIN_NAME("hello") LOOM_PLUGIN_VERSION("1.0.0")
                         LOOM_PLUGIN_DESCRIPTION("Demo plugin: greets, adds and describes values"));

LOOM_PLUGIN_INIT(ctx) {
  ctx.register_function(
      "hello.greet", [](std::string who) { return "hello, " + who + "!"; }, "Greets `who`.");
  ctx.register_function(
      "hello.add", [](int64_t a, int64_t b) { return a + b; }, "Adds two integers.");
  ctx.register_function(
      "hello.describe", [](loom::Any value) { return loom::repr(value); },
      "Prints any value with the core's generic printer.");
}
