// Registration scopes make a plugin's init transactional.
//
// Every core registry (functions, object types, and later target kinds,
// passes, ...) records what it registers with the active RegistrationScope:
// the owner's name and a way to undo it.  The plugin manager opens a scope
// around a plugin's init; if init fails, the scope rolls back every
// registration in reverse order, so a broken plugin leaves nothing behind.
// Without an active scope the owner is "core" and nothing is recorded.
//
// The same file holds the capability hook: a registry that misses a name asks
// request_capability("function:NAME") before giving up, and the plugin
// manager answers by loading the plugin whose manifest provides it.  For its
// "did you mean" a registry also asks available_capabilities("function"):
// the names that plugins not loaded yet would provide.
#ifndef LOOM_SUPPORT_REGISTRATION_H_
#define LOOM_SUPPORT_REGISTRATION_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace loom {

class RegistrationScope {
 public:
  explicit RegistrationScope(std::string owner);
  ~RegistrationScope();  // rolls back unless commit() was called
  RegistrationScope(const RegistrationScope&) = delete;
  RegistrationScope& operator=(const RegistrationScope&) = delete;

  const std::string& owner() const { return owner_; }
  void commit();
  void rollback();

  // Owner of registrations made now on this thread ("core" without a scope).
  static std::string current_owner();
  // Records how to undo a registration just made; no-op without a scope.
  static void record_undo(std::function<void()> undo);

 private:
  std::string owner_;
  std::vector<std::function<void()>> undo_;
  RegistrationScope* previous_;
  bool done_ = false;
};

// Capability hook, installed by the plugin manager.
//   request:   loads what provides `capability` ("function:hello.greet",
//              "target:llvm", ...); true if something was loaded.
//   available: the NAMEs of every KIND:NAME capability that could be loaded.
//   unknown:   the plugin files whose capabilities are unknown because their
//              manifest could not be read, each as "PATH (REASON)".
// Any may be empty.
struct CapabilityResolver {
  std::function<bool(const std::string& capability)> request;
  std::function<std::vector<std::string>(const std::string& kind)> available;
  std::function<std::vector<std::string>()> unknown;
};
void set_capability_resolver(CapabilityResolver resolver);
bool request_capability(const std::string& capability);
std::vector<std::string> available_capabilities(const std::string& kind);
// What a "no KIND named NAME" message adds when some plugin files could not
// be read, so a capability they would have provided is not simply missing:
// "; N plugin file(s) that could not be read may provide it: PATH (REASON)".
// Empty when every plugin file was read.
std::string unknown_providers_note();
// `registered` and the names discovered plugins would provide for `kind`,
// sorted, each once (what a frontend lists: "every operator", ...).
std::vector<std::string> with_available(std::vector<std::string> registered, const std::string& kind);

// Capability kinds the core can verify: the registry of KIND answers whether
// NAME is registered ("function" -> the function registry, ...).  Every
// NamedRegistry registers its kind.  The plugin manager uses this to check
// that a plugin's init registered everything its manifest provides.
// It also lists the NAMEs an owner registered, so what a plugin provides
// can be read off its registrations (`loomc plugins declare`).
void register_capability_kind(const std::string& kind, std::function<bool(const std::string& name)> is_registered,
                              std::function<std::vector<std::string>(const std::string& owner)> owned_by = nullptr);
// Whether "KIND:NAME" is registered; nullopt when KIND has no checker.
std::optional<bool> capability_registered(const std::string& capability);
// Every "KIND:NAME" that `owner` registered, sorted.
std::vector<std::string> capabilities_owned_by(const std::string& owner);

}  // namespace loom

#endif  // LOOM_SUPPORT_REGISTRATION_H_
