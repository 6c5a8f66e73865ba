// The module-tree loader (the blob of an exported library): any bytes
// load or are an Error; a loaded VM module's bytecode and memory plans
// are read.
#include "fuzz_util.h"
#include "loom/runtime/module.h"
#include "loom/runtime/vm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;  // NOLINT
  runtime::Module m;
  if (fuzz::refused([&] { m = runtime::load_module_tree(fuzz::bytes(data, size)); })) return 0;
  if (m->type_key() == "vm") {
    fuzz::refused([&] { m->inspect_source("bytecode"); });
    for (const std::string& name : m->function_names()) fuzz::refused([&] { runtime::memory_plan(m, name); });
  }
  return 0;
}
