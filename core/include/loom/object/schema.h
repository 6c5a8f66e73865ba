// Typed schemas: the one mechanism behind operator attributes, PassContext
// config keys, pass options and target attributes.  A schema is a list of
// fields (name, type, default, doc); values are checked against it with
// messages that name the owner, the key, the expected type and, for an
// unknown key, the closest known one.
//
// Types: "int", "float" (an int is accepted), "bool", "str", "dtype",
// "device", "Array", "Map", "Any".  An int field may have bounds (min,
// max, inclusive) and a str field a list of the values it takes
// (`one_of`): every value set through the schema, a YAML config or a
// PassContext is checked against them, and listings show them
// (docs/reliability.md, "Cost").
#ifndef LOOM_OBJECT_SCHEMA_H_
#define LOOM_OBJECT_SCHEMA_H_

#include <optional>
#include <string>
#include <vector>

#include "loom/object/containers.h"
#include "loom/support/json.h"

namespace loom {

// A row of a schema: {name, type, default (none: required), doc}, with
// bounds named where an int field has them:
//
//   SchemaField{"max_depth", "int", Any(int64_t{8}), "the most operators in one group"}.between(1, 256)
struct SchemaField {
  std::string name;
  std::string type;
  Any default_value;  // none: required
  std::string doc;
  std::optional<int64_t> min = std::nullopt;  // int fields: the least value accepted
  std::optional<int64_t> max = std::nullopt;  // int fields: the greatest value accepted
  std::vector<std::string> choices = {};      // str fields: the values accepted (empty: any)

  SchemaField between(int64_t least, int64_t greatest) const {
    SchemaField out = *this;
    out.min = least;
    out.max = greatest;
    return out;
  }
  SchemaField at_least(int64_t least) const {
    SchemaField out = *this;
    out.min = least;
    return out;
  }
  SchemaField one_of(std::vector<std::string> values) const {
    SchemaField out = *this;
    out.choices = std::move(values);
    return out;
  }
};

// Why `value` is outside `field`'s bounds ("must be from 0 to 1024, got
// 5000"; "must be one of auto, NHWC, NCHWc, got 'x'"), or "" when it is
// inside them (or the field has none).
std::string bounds_problem(const SchemaField& field, const Any& value);
// The bounds as text: "0 to 1024", "at least 1", "one of a, b", "" when
// there are none.
std::string bounds_text(const SchemaField& field);

const std::vector<std::string>& schema_types();
bool value_has_type(const Any& value, const std::string& type);

// Throws Error if a field's type is not one of schema_types() (with a
// suggestion) or a name repeats.  `owner` is used in the message
// ("operator 'conv2d'").
void check_schema(const std::vector<SchemaField>& schema, const std::string& owner);

// `values` checked against `schema`, defaults filled in.  Throws TypeError:
//   "<owner> has no <noun> 'x'; did you mean 'y'? (<noun>s: a, b)"
//   "<owner>: <noun> 'x' must be int, got str 'y'"
//   "<owner>: required <noun> 'x' is missing"
Map apply_schema(const std::vector<SchemaField>& schema, const Map& values, const std::string& owner,
                 const std::string& noun);

// Schemas as JSON, for plugin declarations (loom/plugin.h): an array of
// {"name", "type", "default", "doc"}, the default plain JSON (null when
// required; a dtype or device as its text) read back by the field's type.
void write_schema_json(JsonWriter& json, const std::vector<SchemaField>& schema);
// One value as a schema default is written: plain JSON (a dtype or device
// as its text, arrays and maps nested); Error for anything else.
void write_value(JsonWriter& json, const Any& value);
// Throws Error naming `where` and the field for anything malformed.
std::vector<SchemaField> read_schema_json(const JsonValue& value, const std::string& where);

}  // namespace loom

#endif  // LOOM_OBJECT_SCHEMA_H_
