// A small streaming JSON writer for machine-readable CLI output and, later,
// the IR's JSON form.  It escapes strings and tracks commas; it does not
// check that the caller's begin/end calls balance beyond a debug check.
#ifndef LOOM_SUPPORT_JSON_H_
#define LOOM_SUPPORT_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

std::string json_quote(std::string_view text);

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
