// runtime::Module: the one interface of every compiled artifact
// (docs/runtime.md).  A compiled model is a tree of modules of different
// kinds: host code that calls device kernels, an extern body, a command
// stream.  Each kind has a type_key and a loader registered for it (by a
// plugin: the capability "runtime:TYPE_KEY"), so a saved tree can be
// restored in another process.
#ifndef LOOM_RUNTIME_MODULE_H_
#define LOOM_RUNTIME_MODULE_H_

#include <optional>
#include <string>
#include <vector>

#include "loom/object/containers.h"
#include "loom/object/function.h"
#include "loom/object/reflection.h"

namespace loom::runtime {

class Module;

class ModuleNode : public Object {
 public:
  std::vector<ObjectRef> imports;  // child modules

  // The kind of module; a loader is registered under it.
  virtual std::string type_key() const = 0;
  // A function this module itself defines, if any.
  virtual std::optional<Function> own_function(const std::string& name) const = 0;
  // Names of the functions it defines (for listings and suggestions).
  virtual std::vector<std::string> function_names() const = 0;
  // Its own state (not its imports) as bytes its loader reads back.  The
  // default says the kind cannot be saved.
  virtual std::string save_to_binary() const;
  // Source in `format` ("asm", "ll", "c", ...), or an Error naming the
  // formats it has.
  virtual std::string inspect_source(const std::string& format) const;

  LOOM_ABSTRACT_OBJECT(ModuleNode, Object, "runtime.Module");
  static void reflect(ReflectionBuilder<ModuleNode>& r) { r.structural(StructuralKind::kUnique); }
};

class Module : public ObjectRef {
 public:
  LOOM_OBJECT_REF(Module, ObjectRef, ModuleNode)
  // Unlike IR nodes, runtime modules change after creation (imports).
  ModuleNode* node() const { return const_cast<ModuleNode*>(get()); }

  // The function `name` of this module or, depth first, of its imports;
  // LookupError with the closest name when none defines it.
  Function get_function(const std::string& name) const;
  std::optional<Function> find_function(const std::string& name) const;
  void import_module(const Module& child) const;
  std::vector<Module> imports() const;
};

// Loaders: (bytes: str) -> Module, one per type_key.
class ModuleLoaderRegistry {
 public:
  static void register_loader(const std::string& type_key, Function loader);
  // The loader, loading the plugin that provides "runtime:TYPE_KEY" if
  // needed; Error naming the type key and the plugin that would provide it.
  static Function get(const std::string& type_key);
  static std::vector<std::string> list();
};

// The whole tree as one blob: every module's type key, its own bytes and
// the indices of its imports (shared children stored once).
std::string save_module_tree(const Module& root);
// Restores a tree saved by save_module_tree.  Throws Error for malformed
// or truncated bytes and for a module kind without a loader.
Module load_module_tree(const std::string& bytes);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_MODULE_H_
