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
// manager answers by loading the plugin whose manifest provides it.
#ifndef LOOM_SUPPORT_REGISTRATION_H_
#define LOOM_SUPPORT_REGISTRATION_H_

#include <functional>
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

// Capability hook.  Returns true if something was loaded that may provide
// `capability` ("function:hello.greet", "target:llvm", ...).
using CapabilityResolver = std::function<bool(const std::string& capability)>;
void set_capability_resolver(CapabilityResolver resolver);
bool request_capability(const std::string& capability);

}  // namespace loom

#endif  // LOOM_SUPPORT_REGISTRATION_H_
