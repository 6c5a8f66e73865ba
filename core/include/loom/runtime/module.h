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

// Host code a module contributes to an exported library: files the system
// compiler builds and links as they are (".c" sources, ".s" assembly,
// ".o" position-independent objects) and the LoomBackendFunc functions they
// define (loom/runtime/c_backend_api.h).
struct LinkedCode {
  std::vector<std::pair<std::string, std::string>> files;      // (file name, contents)
  std::vector<std::pair<std::string, std::string>> functions;  // (function name, C symbol)
};

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
  // Host code is linked into an exported library instead of serialized: a
  // module that returns code here is stored in the tree blob as a
  // "library" record and comes back as the library module of the file.
  virtual std::optional<LinkedCode> linked_code() const { return std::nullopt; }
  // What its calls so far did, as one JSON object (a simulator's cycle
  // counts per function: docs/npu.md, "Profile"); "" when the module keeps
  // no such record.  `loomc run --profile` prints it, Python's
  // Module.profile() returns it parsed.
  virtual std::string profile() const { return ""; }
  // Starts (clearing what was recorded) or stops recording each kernel
  // call (docs/rpc.md, "Profiles and traces"); the VM does, a kind that
  // always records (the npu simulator) or never can ignores it.
  virtual void set_profiling(bool on) {}
  // Lines on its own state beyond its functions, for the module tree (the
  // VM's memory plan per function); none by default.
  virtual std::vector<std::string> describe() const { return {}; }

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

// The module tree as text (`loomc inspect`, a module printed in Python):
// per module "KIND: N functions (NAMES)", its describe() lines, its source
// in `source_format` if one is given, then its imports indented.
std::string module_tree(const Module& m, const std::string& source_format = "", int depth = 0);

// Loaders: (bytes: str) -> Module, one per type_key.
class ModuleLoaderRegistry {
 public:
  static void register_loader(const std::string& type_key, Function loader);
  // The loader, loading the plugin that provides "runtime:TYPE_KEY" if
  // needed; Error naming the type key and the plugin that would provide it.
  static Function get(const std::string& type_key);
  // As get(), but nullopt when no loader is registered or provided (a
  // provider that fails to load still throws its PluginError).
  static std::optional<Function> find(const std::string& type_key);
  static std::vector<std::string> list();
  // Who registered the loader ("core" or a plugin name); nullopt if none is.
  static std::optional<std::string> owner(const std::string& type_key);
};

// The whole tree as one blob: every module's type key, the plugin that
// provides its loader, its own bytes and the indices of its imports (shared
// children stored once).  Modules with linked_code() are stored as
// "library" records without bytes.
std::string save_module_tree(const Module& root);
// Restores a tree saved by save_module_tree; "library" records become
// `library` (the module of the file the blob came from), which also imports
// their children.  Throws Error for malformed or truncated bytes, for a
// module kind without a loader (naming the plugin that made it) and for a
// library record without a library.
Module load_module_tree(const std::string& bytes, const Module& library = Module());

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_MODULE_H_
