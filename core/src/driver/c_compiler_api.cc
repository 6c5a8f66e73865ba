// The compiler table of the C API (loom/c_api.h, docs/c-api.md), exported
// by libloom_core: IR text in and out, and passes run by name, so that a
// program or a pass written in another language can transform a module.
#include <sstream>
#include <string>
#include <vector>

#include "../runtime/c_api_internal.h"
#include "loom/ir/module.h"
#include "loom/support/strings.h"
#include "loom/text/text.h"
#include "loom/transform/pass.h"

namespace loom::c_api {
namespace {

ir::IRModule module_of(LoomObject* handle) { return handle_as<ir::IRModule>(handle, "an IRModule"); }

LoomStatus ir_parse(const char* text, const char* name, LoomObject** out) {
  return guard([&] {
    if (!out) throw Error("the out-parameter out is NULL");
    if (!text) throw Error("the IR text is NULL");
    *out = give(text::parse_module(text, name ? name : "<text>"));
  });
}

LoomStatus ir_print(LoomObject* module, LoomValue* out) {
  return guard([&] {
    if (!out) throw Error("the out-parameter out is NULL");
    *out = to_value(Any(text::print_module(module_of(module))));
  });
}

LoomStatus run_passes(LoomObject* module, const char* passes, int32_t opt_level, LoomObject** out) {
  return guard([&] {
    if (!out) throw Error("the out-parameter out is NULL");
    if (!passes) throw Error("the pass list is NULL");
    std::vector<transform::Pass> list;
    for (const std::string& name : split(passes, ',', false)) {
      std::string n = trim(name);
      if (!n.empty()) list.push_back(transform::PassRegistry::get(n));
    }
    transform::PassContext context;
    context.opt_level = opt_level;
    *out = give(transform::sequential(list)(module_of(module), context));
  });
}

// Version 1: frozen.  New entries go at the end of LoomCompilerApi, in a new version.
const LoomCompilerApi kCompilerApi = {
    sizeof(LoomCompilerApi), LOOM_API_VERSION, ir_parse, ir_print, run_passes,
};

}  // namespace
}  // namespace loom::c_api

extern "C" const LoomCompilerApi* LoomGetCompilerApi(uint32_t version) {
  return loom::c_api::version_supported(version, "LoomCompilerApi") ? &loom::c_api::kCompilerApi : nullptr;
}
