#include "loom/object/schema.h"

#include <algorithm>
#include <set>

#include "loom/support/strings.h"

namespace loom {

const std::vector<std::string>& schema_types() {
  static const std::vector<std::string> types = {"int",    "float", "bool", "str", "dtype",
                                                 "device", "Array", "Map",  "Any"};
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

std::string bounds_text(const SchemaField& field) {
  if (!field.choices.empty()) return "one of " + join(field.choices, ", ");
  if (field.min && field.max) return std::to_string(*field.min) + " to " + std::to_string(*field.max);
  if (field.min) return "at least " + std::to_string(*field.min);
  if (field.max) return "at most " + std::to_string(*field.max);
  return "";
}

std::string bounds_problem(const SchemaField& field, const Any& value) {
  if (!field.choices.empty() && value.kind() == AnyKind::kStr) {
    const std::string& v = value.as_string();
    if (std::find(field.choices.begin(), field.choices.end(), v) != field.choices.end()) return "";
    return "must be " + bounds_text(field) + ", got '" + v + "'" + did_you_mean(v, field.choices);
  }
  if (value.kind() != AnyKind::kInt) return "";
  int64_t v = value.as_int();
  if ((field.min && v < *field.min) || (field.max && v > *field.max)) {
    std::string range = bounds_text(field);
    return "must be " + (field.min && field.max ? "from " + range : range) + ", got " + std::to_string(v);
  }
  return "";
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
    if ((field.min || field.max) && field.type != "int") {
      LOOM_THROW(Error) << owner << ": '" << field.name << "' has bounds but is " << field.type << ", not int";
    }
    if (!field.choices.empty() && field.type != "str") {
      LOOM_THROW(Error) << owner << ": '" << field.name << "' has choices but is " << field.type << ", not str";
    }
    if (field.min && field.max && *field.min > *field.max) {
      LOOM_THROW(Error) << owner << ": '" << field.name << "' has no value in its bounds (" << *field.min << " > "
                        << *field.max << ")";
    }
    if (std::string why = bounds_problem(field, field.default_value); !why.empty()) {
      LOOM_THROW(Error) << owner << ": the default of '" << field.name << "' " << why;
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
      auto field =
          std::find_if(schema.begin(), schema.end(), [&](const SchemaField& f) { return f.name == item.first; });
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
      if (std::string why = bounds_problem(*field, item.second); !why.empty()) {
        LOOM_THROW(TypeError) << owner << ": " << noun << " '" << item.first << "' " << why;
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

void write_value(JsonWriter& json, const Any& value) {
  switch (value.kind()) {
    case AnyKind::kNone:
      json.null();
      return;
    case AnyKind::kBool:
      json.value(value.as_bool());
      return;
    case AnyKind::kInt:
      json.value(value.as_int());
      return;
    case AnyKind::kFloat:
      json.value(value.as_float());
      return;
    case AnyKind::kStr:
      json.value(value.as_string());
      return;
    case AnyKind::kDataType:
      json.value(value.as_dtype().to_string());
      return;
    case AnyKind::kDevice:
      json.value(value.as_device().to_string());
      return;
    default:
      break;
  }
  if (const auto* a = dynamic_cast<const ArrayNode*>(value.object())) {
    json.begin_array();
    for (const Any& item : a->items) write_value(json, item);
    json.end_array();
    return;
  }
  if (const auto* m = dynamic_cast<const MapNode*>(value.object())) {
    json.begin_object();
    for (const auto& [key, item] : m->items) {
      json.key(key);
      write_value(json, item);
    }
    json.end_object();
    return;
  }
  LOOM_THROW(Error) << "a schema default cannot be " << value.describe();
}

namespace {

Any read_value(const JsonValue& v, const std::string& type) {
  auto bad = [&]() -> Any { LOOM_THROW(Error) << v.kind_name() << " is not a value of type " << type; };
  switch (v.kind) {
    case JsonValue::Kind::kNull:
      return Any();
    case JsonValue::Kind::kBool:
      return type == "bool" || type == "Any" ? Any(v.boolean) : bad();
    case JsonValue::Kind::kInt:
      if (type == "float") return Any(static_cast<double>(v.integer));
      return type == "int" || type == "Any" ? Any(v.integer) : bad();
    case JsonValue::Kind::kFloat:
      return type == "float" || type == "Any" ? Any(v.number) : bad();
    case JsonValue::Kind::kString:
      if (type == "dtype") return Any(DataType::parse(v.string));
      if (type == "device") return Any(Device::parse(v.string));
      return type == "str" || type == "Any" ? Any(v.string) : bad();
    case JsonValue::Kind::kArray: {
      if (type != "Array" && type != "Any") return bad();
      std::vector<Any> items;
      for (const JsonValue& item : v.array) items.push_back(read_value(item, "Any"));
      return Array(items);
    }
    case JsonValue::Kind::kObject: {
      if (type != "Map" && type != "Any") return bad();
      std::map<std::string, Any> items;
      for (const auto& [key, item] : v.object) items[key] = read_value(item, "Any");
      return Map(items);
    }
  }
  return bad();
}

const std::string& string_member(const JsonValue& object, const char* key, const std::string& where) {
  const JsonValue* v = object.find(key);
  if (!v || v->kind != JsonValue::Kind::kString) LOOM_THROW(Error) << where << ": '" << key << "' must be a string";
  return v->string;
}
}  // namespace

void write_schema_json(JsonWriter& json, const std::vector<SchemaField>& schema) {
  json.begin_array();
  for (const SchemaField& f : schema) {
    json.begin_object().key("name").value(f.name).key("type").value(f.type).key("default");
    write_value(json, f.default_value);
    json.key("doc").value(f.doc);
    if (f.min) json.key("min").value(*f.min);
    if (f.max) json.key("max").value(*f.max);
    if (!f.choices.empty()) {
      json.key("choices").begin_array();
      for (const std::string& c : f.choices) json.value(c);
      json.end_array();
    }
    json.end_object();
  }
  json.end_array();
}

std::vector<SchemaField> read_schema_json(const JsonValue& value, const std::string& where) {
  if (value.kind != JsonValue::Kind::kArray) LOOM_THROW(Error) << where << " must be an array of fields";
  std::vector<SchemaField> out;
  for (const JsonValue& field : value.array) {
    if (field.kind != JsonValue::Kind::kObject) LOOM_THROW(Error) << where << ": a field must be an object";
    SchemaField f;
    f.name = string_member(field, "name", where);
    std::string at = where + ", field '" + f.name + "'";
    f.type = string_member(field, "type", at);
    const auto& types = schema_types();
    if (std::find(types.begin(), types.end(), f.type) == types.end()) {
      LOOM_THROW(Error) << at << ": unknown type '" << f.type << "'" << did_you_mean(f.type, types)
                        << " (types: " << join(types, ", ") << ")";
    }
    f.doc = string_member(field, "doc", at);
    const JsonValue* d = field.find("default");
    if (!d) LOOM_THROW(Error) << at << ": no 'default'";
    try {
      f.default_value = read_value(*d, f.type);
    } catch (const Error& e) {
      LOOM_THROW(Error) << at << ": the default: " << e.what();
    }
    for (auto [key, bound] : {std::pair{"min", &f.min}, std::pair{"max", &f.max}}) {
      if (const JsonValue* b = field.find(key)) {
        if (b->kind != JsonValue::Kind::kInt) LOOM_THROW(Error) << at << ": '" << key << "' must be an integer";
        *bound = b->integer;
      }
    }
    if (const JsonValue* c = field.find("choices")) {
      if (c->kind != JsonValue::Kind::kArray) LOOM_THROW(Error) << at << ": 'choices' must be an array of strings";
      for (const JsonValue& v : c->array) {
        if (v.kind != JsonValue::Kind::kString) LOOM_THROW(Error) << at << ": 'choices' must be an array of strings";
        f.choices.push_back(v.string);
      }
    }
    out.push_back(std::move(f));
  }
  check_schema(out, where);
  return out;
}

}  // namespace loom
