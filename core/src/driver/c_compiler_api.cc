// The compiler table of the C API (loom/c_api.h, docs/c-api.md), exported
// by libloom_core: IR text in and out, and passes run by name, so that a
// program or a pass written in another language can transform a module.
#include <algorithm>
#include <cstring>
#include <memory>
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

LoomStatus pass_register(const LoomPassInfo* info, LoomPassFunction fn, void* resource, void (*finalizer)(void*)) {
  return guard([&] {
    LoomPassInfo i =
        with_defaults(info, LoomPassInfo{sizeof(LoomPassInfo), nullptr, 0, nullptr}, "pass_register's LoomPassInfo");
    if (!i.name || !*i.name) throw Error("pass_register: the pass has no name");
    if (!fn) throw Error(std::string("pass_register('") + i.name + "'): the pass function is NULL");
    std::string name = i.name;
    std::shared_ptr<void> owned = owned_resource(resource, finalizer);
    auto body = [fn, owned, name](const ir::IRModule& module, const transform::PassContext&) {
      LoomObject* in = give(module);
      LoomObject* out = nullptr;
      LoomStatus status = call_back([&] { return fn(owned.get(), in, &out); });
      take(in);                      // the pass borrowed it
      ObjectRef result = take(out);  // the pass's reference to its result becomes this function's
      if (status != LOOM_OK)
        throw Error("pass " + name + " (through the C API) failed: " +
                    (*last_error() ? std::string(last_error()) : std::string("(no error message)")));
      if (!result.defined()) throw Error("pass " + name + " (through the C API) returned no module");
      if (!result.get()->is_instance<ir::IRModuleNode>())
        throw Error("pass " + name + " (through the C API) returned a " + result.get()->type_key() +
                    ", not an IRModule");
      return ir::IRModule(result.object_ptr());
    };
    transform::PassInfo pass_info =
        transform::PassInfo::named(name).opt_level(i.opt_level).summary(i.summary ? i.summary : "");
    transform::PassRegistry::register_pass(transform::module_pass(pass_info, body));
  });
}

// Version 1: frozen.  New entries go at the end of LoomCompilerApi, in a new version.
const LoomCompilerApi kCompilerApi = {
    sizeof(LoomCompilerApi), LOOM_API_VERSION, ir_parse, ir_print, run_passes, pass_register,
};

}  // namespace
}  // namespace loom::c_api

extern "C" const LoomCompilerApi* LoomGetCompilerApi(uint32_t version) {
  return loom::c_api::version_supported(version, "LoomCompilerApi") ? &loom::c_api::kCompilerApi : nullptr;
}
