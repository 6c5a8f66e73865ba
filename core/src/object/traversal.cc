#include "loom/object/traversal.h"

#include "loom/object/containers.h"
#include "loom/support/stack.h"

namespace loom {

namespace {
// The handler registered for the type or its nearest registered ancestor.
template <class Handler>
const Handler* resolve(uint32_t type_index, const std::unordered_map<uint32_t, Handler>& handlers,
                       std::unordered_map<uint32_t, const Handler*>& resolved) {
  auto cached = resolved.find(type_index);
  if (cached != resolved.end()) return cached->second;
  const Handler* found = nullptr;
  auto direct = handlers.find(type_index);
  if (direct != handlers.end()) {
    found = &direct->second;
  } else {
    for (uint32_t ancestor : TypeRegistry::info(type_index).ancestors) {
      auto it = handlers.find(ancestor);
      if (it != handlers.end()) {
        found = &it->second;
        break;
      }
    }
  }
  resolved[type_index] = found;
  return found;
}
}  // namespace

const Visitor::Handler* Visitor::handler_for(uint32_t type_index) { return resolve(type_index, handlers_, resolved_); }

void Visitor::visit(const Any& value) {
  if (value.kind() != AnyKind::kObject) return;
  const Object* node = value.object();
  if (memoize_ && !seen_.insert(node).second) return;
  with_stack([&] {  // one more level of stack per level of nesting
    if (const Handler* handler = handler_for(node->type_index())) {
      (*handler)(node);
    } else {
      visit_children(node);
    }
  });
}

void Visitor::visit_children(const Object* node) {
  if (node->is_instance<ArrayNode>()) {
    for (const Any& item : static_cast<const ArrayNode*>(node)->items) visit(item);
  } else if (node->is_instance<MapNode>()) {
    for (const auto& item : static_cast<const MapNode*>(node)->items) visit(item.second);
  } else {
    for (const auto& field : TypeRegistry::info(node->type_index()).fields) visit(field.get(node));
  }
}

const Mutator::Handler* Mutator::handler_for(uint32_t type_index) { return resolve(type_index, handlers_, resolved_); }

Any Mutator::mutate(const Any& value) {
  if (value.kind() != AnyKind::kObject) return value;
  const Object* node = value.object();
  if (memoize_) {
    auto found = memo_.find(node);
    if (found != memo_.end()) return found->second;
  }
  ObjectRef self = value.as_object_ref();
  Any result = with_stack([&] {  // one more level of stack per level of nesting
    if (const Handler* handler = handler_for(node->type_index())) return (*handler)(self);
    return Any(mutate_children(self));
  });
  if (memoize_) memo_[node] = result;
  return result;
}

ObjectRef Mutator::mutate_children(const ObjectRef& self) {
  const Object* node = self.get();
  if (node->is_instance<ArrayNode>()) {
    const auto& items = static_cast<const ArrayNode*>(node)->items;
    std::vector<Any> out;
    out.reserve(items.size());
    bool changed = false;
    for (const Any& item : items) {
      out.push_back(mutate(item));
      changed |= out.back().object() != item.object();
    }
    return changed ? Array(std::move(out)) : self;
  }
  if (node->is_instance<MapNode>()) {
    std::map<std::string, Any> out;
    bool changed = false;
    for (const auto& item : static_cast<const MapNode*>(node)->items) {
      Any v = mutate(item.second);
      changed |= v.object() != item.second.object();
      out.emplace(item.first, std::move(v));
    }
    return changed ? Map(std::move(out)) : self;
  }
  const TypeInfo& info = TypeRegistry::info(node->type_index());
  std::vector<Any> values;
  values.reserve(info.fields.size());
  bool changed = false;
  for (const auto& field : info.fields) {
    if (field.flags & kDerived) {
      values.emplace_back();
      continue;
    }
    Any old_value = field.get(node);
    Any new_value = mutate(old_value);
    changed |= new_value.object() != old_value.object();
    values.push_back(std::move(new_value));
  }
  if (!changed) return self;
  if (!info.create) LOOM_THROW(Error) << "cannot copy a node of abstract type " << info.key;
  ObjectPtr<Object> copy = info.create();
  for (size_t i = 0; i < info.fields.size(); ++i)
    if (!(info.fields[i].flags & kDerived)) info.fields[i].set(copy.get(), values[i]);
  if (info.get_bytes) info.set_bytes(copy.get(), info.get_bytes(node));
  return ObjectRef(copy);
}

}  // namespace loom
