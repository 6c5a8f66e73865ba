#include "loom/object/schema.h"

#include <algorithm>
#include <set>

#include "loom/support/strings.h"

namespace loom {

const std::vector<std::string>& schema_types() {
  static const std::vector<std::string> types = {"int", "float", "bool", "str", "dtype",
                                                 "device", "Array", "Map", "Any"};
  return types;
}

bool value_has_type(const Any& value, const std::string& type) {
  if (type == "Any") return true;
  if (type == "int") return value.kind() == AnyKind::kInt;
  if (type == "float") return value.kind() == AnyKind::kFloat || value.kind() == AnyKind::kInt;
  if (type == "bool") return value.kind() == AnyKind::kBool;
  if (type == "str") return value.kind() == AnyKind::kStr;
  if (type == "dtype") return value.kind() == AnyKind::kDataType;
  if (type == "device") return value.kind() == AnyKind::kDevice;
  if (type == "Array") return value.kind() == AnyKind::kObject && value.object()->is_instance<ArrayNode>();
  if (type == "Map") return value.kind() == AnyKind::kObject && value.object()->is_instance<MapNode>();
  return false;
}

void check_schema(const std::vector<SchemaField>& schema, const std::string& owner) {
  std::set<std::string> names;
  for (const auto& field : schema) {
    const auto& types = schema_types();
    if (std::find(types.begin(), types.end(), field.type) == types.end()) {
      LOOM_THROW(Error) << owner << ": '" << field.name << "' has unknown type '" << field.type << "'"
                        << did_you_mean(field.type, types);
    }
    if (!names.insert(field.name).second) LOOM_THROW(Error) << owner << ": '" << field.name << "' is declared twice";
    if (!field.default_value.is_none() && !value_has_type(field.default_value, field.type)) {
      LOOM_THROW(Error) << owner << ": the default of '" << field.name << "' is " << field.default_value.describe()
                        << ", not " << field.type;
    }
  }
}

Map apply_schema(const std::vector<SchemaField>& schema, const Map& values, const std::string& owner,
                 const std::string& noun) {
  std::map<std::string, Any> out;
  std::vector<std::string> known;
  for (const auto& field : schema) known.push_back(field.name);
  if (values.defined()) {
    for (const auto& item : values->items) {
      auto field = std::find_if(schema.begin(), schema.end(), [&](const SchemaField& f) { return f.name == item.first; });
      if (field == schema.end()) {
        LOOM_THROW(TypeError) << owner << " has no " << noun << " '" << item.first << "'"
                              << did_you_mean(item.first, known)
                              << (known.empty() ? " (it takes no " + noun + "s)"
                                                : " (" + noun + "s: " + join(known, ", ") + ")");
      }
      if (!value_has_type(item.second, field->type)) {
        LOOM_THROW(TypeError) << owner << ": " << noun << " '" << item.first << "' must be " << field->type << ", got "
                              << item.second.describe();
      }
      out[item.first] = item.second;
    }
  }
  for (const auto& field : schema) {
    if (out.count(field.name)) continue;
    if (field.default_value.is_none()) {
      LOOM_THROW(TypeError) << owner << ": required " << noun << " '" << field.name << "' is missing";
    }
    out[field.name] = field.default_value;
  }
  return Map(out);
}

}  // namespace loom
