// NamedRegistry<Entry>: the one implementation of the registry rules that
// every core registry shares (docs/architecture.md, "Registries"):
//   - a name is registered once; replacing needs allow_override;
//   - entries record their owner (RegistrationScope::current_owner()) and
//     every change is undone if the owning plugin's init fails;
//   - a miss asks for the capability "KIND:NAME" (lazy plugin loading) and
//     then fails with a LookupError suggesting the closest name among those
//     registered and those discovered plugins provide.
// Entry must have `std::string name` and `std::string owner` members.
#ifndef LOOM_SUPPORT_REGISTRY_H_
#define LOOM_SUPPORT_REGISTRY_H_

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loom/support/error.h"
#include "loom/support/registration.h"
#include "loom/support/strings.h"

namespace loom {

template <class Entry>
class NamedRegistry {
 public:
  // what: "function", "operator", ... (for messages); kind: the capability
  // kind that a miss requests ("function" -> "function:NAME");
  // overridable: whether its public register call takes allow_override
  // (so the message for a name registered twice offers it only then).
  NamedRegistry(std::string what, std::string kind, bool overridable = false)
      : what_(std::move(what)), kind_(std::move(kind)), overridable_(overridable) {
    // Registries live for the whole process (they are never destroyed).
    register_capability_kind(
        kind_, [this](const std::string& name) { return entry(name).has_value(); },
        [this](const std::string& owner) { return names_owned_by(owner); });
  }

  void add(Entry entry, bool allow_override = false) {
    check_name(entry.name);
    entry.owner = RegistrationScope::current_owner();
    std::string name = entry.name;
    std::optional<Entry> previous;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto found = entries_.find(name);
      if (found != entries_.end()) {
        if (!allow_override) {
          LOOM_THROW(Error) << what_ << " '" << name << "' is already registered by " << found->second.owner
                            << "; a name is registered once"
                            << (overridable_ ? " (pass allow_override=true to replace it deliberately)" : "");
        }
        previous = found->second;
      }
      entries_[name] = std::move(entry);
    }
    record_restore(name, std::move(previous));
  }

  // Changes an existing entry in place (journaled like add).
  template <class Mutate>
  void update(const std::string& name, Mutate mutate) {
    std::optional<Entry> previous;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto found = entries_.find(name);
      if (found == entries_.end()) LOOM_THROW(LookupError) << "no " << what_ << " named '" << name << "' to update";
      previous = found->second;
      mutate(found->second);
    }
    record_restore(name, std::move(previous));
  }

  // The entry, without loading anything.
  std::optional<Entry> entry(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = entries_.find(name);
    if (found == entries_.end()) return std::nullopt;
    return found->second;
  }

  // The entry, loading the plugin that provides it if needed.
  std::optional<Entry> find(const std::string& name) const {
    if (auto e = entry(name)) return e;
    if (request_capability(kind_ + ":" + name)) return entry(name);
    return std::nullopt;
  }

  Entry get(const std::string& name) const {
    if (auto e = find(name)) return *e;
    std::vector<std::string> candidates = names();
    for (auto& loadable : available_capabilities(kind_)) candidates.push_back(std::move(loadable));
    LOOM_THROW(LookupError) << "no " << what_ << " named '" << name << "' is registered or provided by a plugin"
                            << did_you_mean(name, candidates) << unknown_providers_note();
  }

  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const auto& item : entries_) out.push_back(item.first);
    return out;
  }

  std::vector<std::string> names_owned_by(const std::string& owner) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const auto& item : entries_)
      if (item.second.owner == owner) out.push_back(item.first);
    return out;
  }

  bool remove(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.erase(name) > 0;
  }

 private:
  void check_name(const std::string& name) const {
    bool ok = !name.empty() && name.front() != '.' && name.back() != '.' &&
              std::all_of(name.begin(), name.end(),
                          [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; });
    if (!ok) {
      LOOM_THROW(Error) << "invalid " << what_ << " name '" << name
                        << "': use letters, digits, '_' and '.' (e.g. 'hello.greet')";
    }
  }

  void record_restore(const std::string& name, std::optional<Entry> previous) {
    RegistrationScope::record_undo([this, name, previous = std::move(previous)]() {
      std::lock_guard<std::mutex> lock(mutex_);
      if (previous) {
        entries_[name] = *previous;
      } else {
        entries_.erase(name);
      }
    });
  }

  std::string what_;
  std::string kind_;
  bool overridable_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

}  // namespace loom

#endif  // LOOM_SUPPORT_REGISTRY_H_
