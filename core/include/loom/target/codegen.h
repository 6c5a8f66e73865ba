// Codegens (docs/architecture.md, "Registries"): one per target kind,
// registered by the plugin that provides the kind; the capability
// "codegen:KIND" loads that plugin on first use.
//
// A codegen is a packed function (module: ir.IRModule, target: Target) ->
// runtime.Module.  It receives the prim functions of a module, and the
// extern functions of kinds that do not build themselves
// (with the module's attributes) and returns a module whose functions of
// the same names run them in destination-passing style: one NDArray per
// buffer parameter, scalars taken from the buffers' shapes.
#ifndef LOOM_TARGET_CODEGEN_H_
#define LOOM_TARGET_CODEGEN_H_

#include <string>
#include <vector>

#include "loom/object/function.h"

namespace loom::target {

class CodegenRegistry {
 public:
  static void register_codegen(const std::string& target_kind, Function codegen);
  // The codegen for `target_kind`, loading its plugin if needed; Error
  // naming the kind when none exists.
  static Function get(const std::string& target_kind);
  static std::vector<std::string> list();
};

}  // namespace loom::target

#endif  // LOOM_TARGET_CODEGEN_H_
