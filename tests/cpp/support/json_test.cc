#include "loom/support/json.h"

#include <gtest/gtest.h>

namespace loom {

TEST(Json, QuotesAndEscapes) { EXPECT_EQ(json_quote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\""); }

TEST(Json, WritesNestedContainersCompactly) {
  JsonWriter json(0);
  json.begin_object();
  json.key("name").value("x");
  json.key("n").value(int64_t{3});
  json.key("f").value(0.5);
  json.key("ok").value(true);
  json.key("none").null();
  json.key("list").string_array({"a", "b"});
  json.key("empty").begin_array().end_array();
  json.end_object();
  EXPECT_EQ(json.str(), R"({"name":"x","n":3,"f":0.5,"ok":true,"none":null,"list":["a","b"],"empty":[]})");
}

TEST(Json, NonFiniteNumbersBecomeNull) {
  JsonWriter json(0);
  json.begin_array().value(1.0 / 0.0).end_array();
  EXPECT_EQ(json.str(), "[null]");
}

}  // namespace loom

namespace loom {
// to_json writes a parsed value back: every kind, nesting, escapes; parsing
// its text again gives the same text.
TEST(Json, ToJsonWritesAParsedValueBack) {
  std::string text = R"({"a": [1, -2, 0.5, "x\"y"], "b": {"c": null, "d": true, "e": false}, "f": []})";
  JsonValue v = parse_json(text);
  EXPECT_EQ(to_json(v), text);
  EXPECT_EQ(to_json(parse_json(to_json(v))), text);
  EXPECT_EQ(to_json(parse_json("[[\"split\",\"i\",16]]")), "[[\"split\", \"i\", 16]]");
}
}  // namespace loom
