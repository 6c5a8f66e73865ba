#include "loom/support/registration.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace loom {

namespace {
thread_local RegistrationScope* active_scope = nullptr;
thread_local int resolving_depth = 0;

std::mutex& resolver_mutex() {
  static std::mutex mutex;
  return mutex;
}
CapabilityResolver& resolver() {
  static CapabilityResolver instance;
  return instance;
}
}  // namespace

RegistrationScope::RegistrationScope(std::string owner) : owner_(std::move(owner)), previous_(active_scope) {
  active_scope = this;
}

RegistrationScope::~RegistrationScope() {
  if (!done_) rollback();
  active_scope = previous_;
}

void RegistrationScope::commit() {
  undo_.clear();
  done_ = true;
}

void RegistrationScope::rollback() {
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
  undo_.clear();
  done_ = true;
}

std::string RegistrationScope::current_owner() { return active_scope ? active_scope->owner_ : std::string("core"); }

void RegistrationScope::record_undo(std::function<void()> undo) {
  if (active_scope) active_scope->undo_.push_back(std::move(undo));
}

namespace {
struct CapabilityKind {
  std::function<bool(const std::string&)> is_registered;
  std::function<std::vector<std::string>(const std::string&)> owned_by;
};
std::map<std::string, CapabilityKind>& capability_kinds() {
  static auto* kinds = new std::map<std::string, CapabilityKind>();
  return *kinds;
}
}  // namespace

void register_capability_kind(const std::string& kind, std::function<bool(const std::string& name)> is_registered,
                              std::function<std::vector<std::string>(const std::string& owner)> owned_by) {
  std::lock_guard<std::mutex> lock(resolver_mutex());
  capability_kinds()[kind] = CapabilityKind{std::move(is_registered), std::move(owned_by)};
}

std::vector<std::string> capabilities_owned_by(const std::string& owner) {
  std::map<std::string, CapabilityKind> kinds;
  {
    std::lock_guard<std::mutex> lock(resolver_mutex());
    kinds = capability_kinds();
  }
  std::vector<std::string> out;
  for (const auto& [kind, entry] : kinds) {
    if (!entry.owned_by) continue;
    for (const std::string& name : entry.owned_by(owner)) out.push_back(kind + ":" + name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<bool> capability_registered(const std::string& capability) {
  size_t colon = capability.find(':');
  if (colon == std::string::npos) return std::nullopt;
  std::function<bool(const std::string&)> check;
  {
    std::lock_guard<std::mutex> lock(resolver_mutex());
    auto found = capability_kinds().find(capability.substr(0, colon));
    if (found == capability_kinds().end()) return std::nullopt;
    check = found->second.is_registered;
  }
  return check(capability.substr(colon + 1));
}

void set_capability_resolver(CapabilityResolver new_resolver) {
  std::lock_guard<std::mutex> lock(resolver_mutex());
  resolver() = std::move(new_resolver);
}

namespace {
CapabilityResolver current_resolver() {
  std::lock_guard<std::mutex> lock(resolver_mutex());
  return resolver();
}
}  // namespace

bool request_capability(const std::string& capability) {
  CapabilityResolver current = current_resolver();
  // A resolver that itself misses a capability must not recurse forever.
  if (!current.request || resolving_depth > 8) return false;
  ++resolving_depth;
  bool found = false;
  try {
    found = current.request(capability);
  } catch (...) {
    --resolving_depth;
    throw;
  }
  --resolving_depth;
  return found;
}

std::vector<std::string> with_available(std::vector<std::string> registered, const std::string& kind) {
  for (std::string& name : available_capabilities(kind)) registered.push_back(std::move(name));
  std::sort(registered.begin(), registered.end());
  registered.erase(std::unique(registered.begin(), registered.end()), registered.end());
  return registered;
}

std::vector<std::string> available_capabilities(const std::string& kind) {
  CapabilityResolver current = current_resolver();
  return current.available ? current.available(kind) : std::vector<std::string>{};
}

std::string unknown_providers_note() {
  CapabilityResolver current = current_resolver();
  std::vector<std::string> files = current.unknown ? current.unknown() : std::vector<std::string>{};
  if (files.empty()) return "";
  std::string out = "; " + std::to_string(files.size()) + " plugin file" + (files.size() == 1 ? "" : "s") +
                    " that could not be read may provide it: ";
  for (size_t i = 0; i < files.size(); ++i) out += (i ? ", " : "") + files[i];
  return out;
}

}  // namespace loom
