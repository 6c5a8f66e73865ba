// The type registry.  Indices are dense and never reused; a type removed by a
// rolled-back plugin init stays as a tombstone so that indices stay stable.
// The table is reserved up front so that readers (is_instance_of on every
// cast) never race with a registration that would grow it.
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "loom/object/reflection.h"
#include "loom/support/error.h"
#include "loom/support/registration.h"
#include "loom/support/strings.h"

namespace loom {

namespace {
constexpr size_t kMaxTypes = 1 << 14;

struct Registry {
  std::recursive_mutex mutex;
  std::vector<std::unique_ptr<TypeInfo>> types;
  std::atomic<size_t> count{0};
  std::unordered_map<std::string, uint32_t> by_key;

  Registry() {
    types.reserve(kMaxTypes);
    auto root = std::make_unique<TypeInfo>();
    root->index = 0;
    root->key = Object::_type_key;
    root->owner = "core";
    by_key[root->key] = 0;
    types.push_back(std::move(root));
    count = 1;
  }
};

Registry& registry() {
  static Registry* instance = new Registry();  // never destroyed: used by static destructors
  return *instance;
}
}  // namespace

namespace {
// Objects released while another is being deleted on this thread.  The
// queue is reached through a trivially destructible pointer, so objects
// released by thread-local destructors after it went are deleted directly.
struct PendingDeletes {
  std::vector<const Object*> queue;
  bool deleting = false;
};
thread_local PendingDeletes* t_pending = nullptr;
struct PendingDeletesOwner {
  ~PendingDeletesOwner() {
    delete t_pending;
    t_pending = nullptr;
  }
};
thread_local PendingDeletesOwner t_pending_owner;
}  // namespace

void Object::destroy(const Object* object) {
  if (!t_pending) {
    (void)&t_pending_owner;  // constructed now, so it frees the queue at thread exit
    t_pending = new PendingDeletes();
  }
  PendingDeletes& pending = *t_pending;
  if (pending.deleting) {
    pending.queue.push_back(object);
    return;
  }
  pending.deleting = true;
  delete object;
  while (!pending.queue.empty()) {
    const Object* next = pending.queue.back();
    pending.queue.pop_back();
    delete next;
  }
  pending.deleting = false;
}

const FieldInfo* TypeInfo::field(const std::string& name) const {
  for (const auto& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

uint32_t TypeRegistry::register_type(const char* key, uint32_t parent_index, TypeDescriber describe) {
  Registry& r = registry();
  std::lock_guard<std::recursive_mutex> lock(r.mutex);
  auto found = r.by_key.find(key);
  if (found != r.by_key.end()) {
    const TypeInfo& existing = *r.types[found->second];
    if (existing.parent_index != parent_index) {
      LOOM_THROW(Error) << "object type '" << key << "' is already registered with parent '"
                        << r.types[existing.parent_index]->key << "' (by " << existing.owner
                        << "); cannot register it again with parent '" << r.types[parent_index]->key << "'";
    }
    return found->second;
  }
  if (r.types.size() >= kMaxTypes) LOOM_THROW(Error) << "too many object types (" << kMaxTypes << ")";
  LOOM_CHECK(parent_index < r.types.size()) << "bad parent index for " << key;

  auto info = std::make_unique<TypeInfo>();
  info->index = static_cast<uint32_t>(r.types.size());
  info->key = key;
  info->parent_index = parent_index;
  const TypeInfo& parent = *r.types[parent_index];
  info->ancestors.push_back(parent_index);
  info->ancestors.insert(info->ancestors.end(), parent.ancestors.begin(), parent.ancestors.end());
  info->fields = parent.fields;
  info->structural = parent.structural;
  info->owner = RegistrationScope::current_owner();
  describe(*info);

  uint32_t index = info->index;
  r.by_key[info->key] = index;
  r.types.push_back(std::move(info));
  r.count.store(r.types.size(), std::memory_order_release);
  RegistrationScope::record_undo([index]() {
    Registry& reg = registry();
    std::lock_guard<std::recursive_mutex> undo_lock(reg.mutex);
    TypeInfo& dead = *reg.types[index];
    reg.by_key.erase(dead.key);
    dead.key = "<removed " + dead.key + ">";
    dead.fields.clear();
    dead.create = nullptr;
  });
  return index;
}

const TypeInfo& TypeRegistry::info(uint32_t index) {
  Registry& r = registry();
  LOOM_CHECK(index < r.count.load(std::memory_order_acquire)) << "unknown type index " << index;
  return *r.types[index];
}

const TypeInfo* TypeRegistry::find(const std::string& key) {
  Registry& r = registry();
  std::lock_guard<std::recursive_mutex> lock(r.mutex);
  auto found = r.by_key.find(key);
  return found == r.by_key.end() ? nullptr : r.types[found->second].get();
}

const TypeInfo& TypeRegistry::info(const std::string& key) {
  if (const TypeInfo* info = find(key)) return *info;
  LOOM_THROW(LookupError) << "unknown object type '" << key << "'" << did_you_mean(key, list_keys());
}

bool TypeRegistry::is_derived_from(uint32_t child, uint32_t ancestor) {
  if (child == ancestor) return true;
  const auto& ancestors = info(child).ancestors;
  return std::find(ancestors.begin(), ancestors.end(), ancestor) != ancestors.end();
}

std::vector<std::string> TypeRegistry::list_keys() {
  Registry& r = registry();
  std::lock_guard<std::recursive_mutex> lock(r.mutex);
  std::vector<std::string> keys;
  for (const auto& entry : r.by_key) keys.push_back(entry.first);
  std::sort(keys.begin(), keys.end());
  return keys;
}

const std::string& Object::type_key() const { return TypeRegistry::info(type_index_).key; }

bool Object::is_instance_of(uint32_t index) const { return TypeRegistry::is_derived_from(type_index_, index); }

void throw_downcast_error(const Object* object, const char* target_key) {
  LOOM_THROW(TypeError) << "expected " << target_key << ", got " << object->type_key();
}

}  // namespace loom
