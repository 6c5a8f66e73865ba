#include "loom/object/containers.h"

#include "loom/object/function.h"

#include "loom/support/strings.h"

namespace loom {

LOOM_REGISTER_OBJECT(StringNode);
LOOM_REGISTER_OBJECT(ArrayNode);
LOOM_REGISTER_OBJECT(MapNode);
LOOM_REGISTER_OBJECT(FunctionNode);

String::String(std::string value) : ObjectRef(make_object<StringNode>(std::move(value))) {}

Array::Array(std::vector<Any> items) {
  auto node = make_object<ArrayNode>();
  node->items = std::move(items);
  data_ = node;
}

Map::Map(std::map<std::string, Any> items) {
  auto node = make_object<MapNode>();
  node->items = std::move(items);
  data_ = node;
}

const Any& Map::at(const std::string& key) const {
  if (get()) {
    auto found = get()->items.find(key);
    if (found != get()->items.end()) return found->second;
  }
  std::vector<std::string> keys;
  if (get())
    for (const auto& item : get()->items) keys.push_back(item.first);
  LOOM_THROW(LookupError) << "no key '" << key << "' in map" << did_you_mean(key, keys);
}

}  // namespace loom

namespace loom::detail {

void for_each_element(const Any& value, const std::function<void(const Any&, const std::string&)>& f) {
  const Object* object = value.object();
  if (object && object->is_instance<ArrayNode>()) {
    const auto& items = static_cast<const ArrayNode*>(object)->items;
    for (size_t i = 0; i < items.size(); ++i) f(items[i], "element " + std::to_string(i));
  } else if (object && object->is_instance<MapNode>()) {
    for (const auto& [key, item] : static_cast<const MapNode*>(object)->items) f(item, "entry '" + key + "'");
  }
}

}  // namespace loom::detail
