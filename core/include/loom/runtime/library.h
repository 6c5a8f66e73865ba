// Host libraries, export_library and load_module (docs/runtime.md).
//
// A host library is a shared object of compiled host code that follows
// loom/runtime/c_backend_api.h.  Its functions call the functions of the
// module it is bound to (that module's imports) by name.  export_library
// links the host code of a module tree and the serialized rest of the tree
// into one such library; load_module opens it and restores the tree.
#ifndef LOOM_RUNTIME_LIBRARY_H_
#define LOOM_RUNTIME_LIBRARY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/runtime/module.h"

namespace loom::runtime {

// An opened host library.  Thread-safe; stays loaded while referenced.
class HostLibrary {
 public:
  // Opens `path`; Error naming the file when it is not a regular file, not
  // a shared library, not a Loom host library, truncated or corrupt (the
  // file is validated before it is loaded: docs/reliability.md, "Files"),
  // or of another library ABI.  Opening runs the library's constructors.
  static std::shared_ptr<HostLibrary> open(const std::string& path);
  // Reads what `path` holds (its function names and module blob) without
  // loading it: no code of the file runs.  Its functions cannot be called.
  static std::shared_ptr<HostLibrary> inspect(const std::string& path);
  // Host code already in memory (a JIT's): the same functions, slots and
  // table as a file would give, found by `lookup` (null for a missing
  // symbol).  `owner` keeps the code mapped while the library lives;
  // `name` stands for the path in messages.
  static std::shared_ptr<HostLibrary> adopt(const std::string& name, const std::function<void*(const char*)>& lookup,
                                            std::shared_ptr<void> owner);
  ~HostLibrary();

  // Binds the library to `context`: its functions' calls by name look in
  // context's imports.  The caller keeps `context` alive while functions of
  // the library can run (module functions hold their module).
  void bind(const ModuleNode* context);

  const std::string& path() const;
  std::vector<std::string> function_names() const;
  // The function `name` as a packed function; `keep_alive` (the module) is
  // held by it.
  std::optional<Function> function(const std::string& name, const ObjectRef& keep_alive) const;
  // The serialized module tree stored in the library, if any.
  std::optional<std::string> blob() const;

  struct Impl;

 private:
  explicit HostLibrary(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The module of a loaded library (type key "library").
class LibraryModuleNode : public ModuleNode {
 public:
  std::shared_ptr<HostLibrary> library;
  std::string type_key() const override { return "library"; }
  std::optional<Function> own_function(const std::string& name) const override;
  std::vector<std::string> function_names() const override;
  std::string save_to_binary() const override;
  LOOM_OBJECT(LibraryModuleNode, ModuleNode, "runtime.LibraryModule");
};

// The base of a module kind whose functions are host code a codegen
// compiled (the c, llvm and asm kinds, a vendor's C dialect): its functions
// (name, C symbol of the LoomBackendFunc) and the library they run in,
// bound to this module (so their calls by name look in its imports).  A
// kind adds its own state, type_key, and linked_code or save_to_binary.
class HostCodeModuleNode : public ModuleNode {
 public:
  std::vector<std::pair<std::string, std::string>> functions;  // (name, symbol)
  std::shared_ptr<HostLibrary> library;
  std::vector<std::string> function_names() const override;
  // Function `name` of the library, or nullopt for a name not in `functions`.
  std::optional<Function> own_function(const std::string& name) const override;
  LOOM_ABSTRACT_OBJECT(HostCodeModuleNode, ModuleNode, "runtime.HostCodeModule");
};

// Compiles and links host code into the shared object `output` with the
// system C compiler ($CC, else `cc`), adding the table, ABI marker and
// runtime slots of c_backend_api.h, and `blob` as __loom_module_blob when
// not empty.  The file appears atomically (written next to it, then
// renamed), so a library loaded from the same path keeps working.  Error
// with the compiler's output when it fails; Error for two functions of the
// same name.
void link_host_library(const std::vector<LinkedCode>& code, const std::string& blob, const std::string& output);

// Compiles the C file `source` (named `name` in messages) to a relocatable
// object (-fPIC) with the system C compiler ($CC, else `cc`) and `flags`,
// the host ABI's headers on the include path; the object's bytes.  Error
// with the compiler's output when it fails.
std::string compile_c_object(const std::string& name, const std::string& source, const std::vector<std::string>& flags);

// Links `code` into a private temporary library, opens it and binds it to
// `context`: the in-memory path of a module kind whose host code the
// system compiler builds.
std::shared_ptr<HostLibrary> build_host_library(const LinkedCode& code, const ModuleNode* context);

// Writes `root` and its whole import tree to one shared library at `path`.
void export_library(const Module& root, const std::string& path);

// Opens a library written by export_library (or any host library) and
// restores its module tree, loading the plugins that provide the module
// kinds it needs.  Loading the same unchanged file again gives the same
// tree while it is alive.  The library's code runs (its constructors when
// it is loaded): load only libraries you trust.
Module load_module(const std::string& path);

// The module tree of the library at `path` as inspect_library reads it,
// without loading the library or running any of its code: the host
// library's functions are listed but cannot be called; the other modules
// of the tree are restored by their loaders (Loom's and plugins' code).
// For `loomc inspect`.
Module inspect_library(const std::string& path);

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_LIBRARY_H_
