// JSON for machine-readable CLI output and the IR's JSON form: a streaming
// writer (escapes strings, tracks commas) and a reader that builds a
// JsonValue tree.  The reader reports errors as ParseError with
// "SOURCE:LINE:COL: message", limits nesting depth, and never reads past
// the input: truncated or malformed text is an error, not a crash.
#ifndef LOOM_SUPPORT_JSON_H_
#define LOOM_SUPPORT_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/support/error.h"

namespace loom {

std::string json_quote(std::string_view text);

struct JsonValue {
  enum class Kind { kNull, kBool, kInt, kFloat, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in document order
  int line = 0, column = 0;                               // where the value starts

  const JsonValue* find(const std::string& key) const;
  const char* kind_name() const;
};

// Parses one JSON document.  Integers without a fraction or exponent that
// fit in int64 are kInt; other numbers kFloat.  Duplicate object keys and
// nesting deeper than `max_depth` are errors.
JsonValue parse_json(std::string_view text, const std::string& source = "<json>", int max_depth = 256);

// A value as compact JSON text: ", " between array elements and members,
// ": " after keys; numbers as the writer writes them.
std::string to_json(const JsonValue& value);

std::string base64_encode(std::string_view bytes);
// Throws Error for characters outside the alphabet or bad padding.
std::string base64_decode(std::string_view text);

class JsonWriter {
 public:
  explicit JsonWriter(int indent = 2) : indent_(indent) {}
  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(int64_t number);
  JsonWriter& value(double number);
  JsonWriter& value(bool flag);
  JsonWriter& null();
  JsonWriter& string_array(const std::vector<std::string>& items);
  const std::string& str() const { return out_; }

 private:
  JsonWriter& open(char bracket);
  JsonWriter& close(char bracket);
  void before_value();
  void newline();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
  int indent_;
};

}  // namespace loom

#endif  // LOOM_SUPPORT_JSON_H_
