// IRModule: global names to functions of any variant, module attributes (the C1
// constraints: what must hold on the platform) and global infos (see docs/ir.md).
#ifndef LOOM_IR_MODULE_H_
#define LOOM_IR_MODULE_H_

#include <optional>
#include <string>
#include <vector>

#include "loom/ir/function.h"

namespace loom::ir {

class IRModuleNode : public Object {
 public:
  Map functions;     // name -> BaseFunc, ordered by name
  Map attrs;         // "target", "host", "device_placement", ...
  Map global_infos;  // module-level data shared by functions
  LOOM_OBJECT(IRModuleNode, Object, "ir.IRModule");
  static void reflect(ReflectionBuilder<IRModuleNode>& r) {
    r.field("functions", &IRModuleNode::functions)
        .elements<BaseFunc>()
        .field("attrs", &IRModuleNode::attrs)
        .field("global_infos", &IRModuleNode::global_infos);
  }
};

class IRModule : public ObjectRef {
 public:
  LOOM_OBJECT_REF(IRModule, ObjectRef, IRModuleNode)
  // IRModule() is an undefined handle; IRModule::empty() an empty module.
  explicit IRModule(std::map<std::string, Any> functions, Map attrs = Map::empty(), Map global_infos = Map::empty());

  static IRModule empty() { return IRModule(std::map<std::string, Any>{}); }

  std::vector<std::string> names() const;
  bool contains(const std::string& name) const;
  // Throws LookupError (with a suggestion) for an unknown name.
  BaseFunc lookup(const std::string& name) const;
  // A new module with `name` bound to `func` (replacing any previous one).
  // It copies the function table: a pass that changes many functions
  // collects them and calls with_functions once.
  IRModule with_function(const std::string& name, BaseFunc func) const;
  // A new module with each name of `updates` bound to its function; the
  // same module when `updates` is empty.
  IRModule with_functions(const std::map<std::string, Any>& updates) const;
  IRModule with_attr(const std::string& key, Any value) const;
};

}  // namespace loom::ir

#endif  // LOOM_IR_MODULE_H_
