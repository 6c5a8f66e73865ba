// The JSON loader: any document loads or is an Error; what loads is
// checked (a module), printed, hashed and saved again.
#include "fuzz_util.h"
#include "loom/graph/well_formed.h"
#include "loom/ir/module.h"
#include "loom/ir/text.h"
#include "loom/object/serialization.h"
#include "loom/object/structural.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;  // NOLINT
  Any root;
  if (fuzz::refused([&] { root = load_json(fuzz::bytes(data, size), "fuzz.json"); })) return 0;
  if (root.kind() == AnyKind::kObject && root.as_object_ref().as<ir::IRModuleNode>()) {
    fuzz::refused([&] { graph::check_module(downcast<ir::IRModule>(root.as_object_ref())); });
  }
  fuzz::refused([&] { ir::to_text(root); });
  fuzz::refused([&] { structural_hash(root); });
  fuzz::refused([&] { save_json(root); });
  return 0;
}
