#include "loom/support/json.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cstdio>

#include "loom/support/error.h"

namespace loom {

std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
          out += buffer;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_ += '\n';
  out_.append(first_.size() * indent_, ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    newline();
  }
}

JsonWriter& JsonWriter::open(char bracket) {
  before_value();
  out_ += bracket;
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
  LOOM_CHECK(!first_.empty()) << "unbalanced '" << bracket << "'";
  bool empty = first_.back();
  first_.pop_back();
  if (!empty) newline();
  out_ += bracket;
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value();
  out_ += json_quote(name);
  out_ += indent_ > 0 ? ": " : ":";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  before_value();
  out_ += json_quote(text);
  return *this;
}

JsonWriter& JsonWriter::value(int64_t number) {
  before_value();
  out_ += std::to_string(number);
  return *this;
}

JsonWriter& JsonWriter::value(double number) {
  before_value();
  if (!std::isfinite(number)) {
    out_ += "null";  // JSON has no NaN or infinity
    return *this;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.17g", number);
  out_ += buffer;
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
  before_value();
  out_ += flag ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::string_array(const std::vector<std::string>& items) {
  begin_array();
  for (const auto& item : items) value(item);
  return end_array();
}

}  // namespace loom

// ---------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------
namespace loom {

const JsonValue* JsonValue::find(const std::string& key) const {
  for (const auto& item : object)
    if (item.first == key) return &item.second;
  return nullptr;
}

std::string to_json(const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::Kind::kNull:
      return "null";
    case JsonValue::Kind::kBool:
      return v.boolean ? "true" : "false";
    case JsonValue::Kind::kInt:
      return std::to_string(v.integer);
    case JsonValue::Kind::kFloat: {
      if (!std::isfinite(v.number)) return "null";
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), "%.17g", v.number);
      return buffer;
    }
    case JsonValue::Kind::kString:
      return json_quote(v.string);
    case JsonValue::Kind::kArray: {
      std::string out = "[";
      for (size_t k = 0; k < v.array.size(); ++k) out += (k ? ", " : "") + to_json(v.array[k]);
      return out + "]";
    }
    case JsonValue::Kind::kObject: {
      std::string out = "{";
      for (size_t k = 0; k < v.object.size(); ++k)
        out += (k ? ", " : "") + json_quote(v.object[k].first) + ": " + to_json(v.object[k].second);
      return out + "}";
    }
  }
  return "null";
}

const char* JsonValue::kind_name() const {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "a boolean";
    case Kind::kInt:
      return "an integer";
    case Kind::kFloat:
      return "a number";
    case Kind::kString:
      return "a string";
    case Kind::kArray:
      return "an array";
    case Kind::kObject:
      return "an object";
  }
  return "?";
}

namespace {
class JsonReader {
 public:
  JsonReader(std::string_view text, const std::string& source, int max_depth)
      : text_(text), source_(source), max_depth_(max_depth) {}

  JsonValue document() {
    skip_space();
    JsonValue value = parse_value(0);
    skip_space();
    if (pos_ < text_.size()) fail("unexpected text after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& message) { throw ParseError(source_, line_, column_, message); }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  char next() {
    char c = text_[pos_++];
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    return c;
  }
  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) next();
  }
  void expect_word(const char* word) {
    int line = line_, column = column_;
    for (const char* w = word; *w; ++w) {
      if (at_end()) fail("unexpected end of input in '" + std::string(word) + "'");
      if (next() != *w)
        throw ParseError(source_, line, column, "invalid literal; expected '" + std::string(word) + "'");
    }
  }

  JsonValue parse_value(int depth) {
    if (depth > max_depth_) fail("nesting deeper than " + std::to_string(max_depth_) + " levels");
    if (at_end()) fail("unexpected end of input; expected a value");
    JsonValue value;
    value.line = line_;
    value.column = column_;
    char c = peek();
    if (c == '{') {
      value.kind = JsonValue::Kind::kObject;
      next();
      skip_space();
      if (!at_end() && peek() == '}') {
        next();
        return value;
      }
      while (true) {
        skip_space();
        if (at_end()) fail("unexpected end of input in an object");
        if (peek() != '"') fail("expected a string key");
        int key_line = line_, key_column = column_;
        std::string key = parse_string();
        if (value.find(key)) throw ParseError(source_, key_line, key_column, "duplicate key \"" + key + "\"");
        skip_space();
        if (at_end()) fail("unexpected end of input; expected ':'");
        if (next() != ':') fail("expected ':' after a key");
        skip_space();
        JsonValue item = parse_value(depth + 1);
        value.object.emplace_back(std::move(key), std::move(item));
        skip_space();
        if (at_end()) fail("unexpected end of input in an object; expected ',' or '}'");
        char sep = next();
        if (sep == '}') return value;
        if (sep != ',') fail("expected ',' or '}' in an object");
      }
    }
    if (c == '[') {
      value.kind = JsonValue::Kind::kArray;
      next();
      skip_space();
      if (!at_end() && peek() == ']') {
        next();
        return value;
      }
      while (true) {
        skip_space();
        value.array.push_back(parse_value(depth + 1));
        skip_space();
        if (at_end()) fail("unexpected end of input in an array; expected ',' or ']'");
        char sep = next();
        if (sep == ']') return value;
        if (sep != ',') fail("expected ',' or ']' in an array");
      }
    }
    if (c == '"') {
      value.kind = JsonValue::Kind::kString;
      value.string = parse_string();
      return value;
    }
    if (c == 't') {
      expect_word("true");
      value.kind = JsonValue::Kind::kBool;
      value.boolean = true;
      return value;
    }
    if (c == 'f') {
      expect_word("false");
      value.kind = JsonValue::Kind::kBool;
      return value;
    }
    if (c == 'n') {
      expect_word("null");
      return value;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(value);
    fail(std::string("unexpected character '") + c + "'");
  }

  JsonValue parse_number(JsonValue value) {
    size_t start = pos_;
    bool is_float = false;
    if (peek() == '-') next();
    if (at_end() || !(peek() >= '0' && peek() <= '9')) fail("invalid number");
    while (!at_end()) {
      char c = peek();
      if (c >= '0' && c <= '9') {
        next();
      } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || (c == '-' && pos_ > start)) {
        is_float = true;
        next();
      } else {
        break;
      }
    }
    std::string text(text_.substr(start, pos_ - start));
    auto fail_here = [&](const std::string& message) { throw ParseError(source_, value.line, value.column, message); };
    char* end = nullptr;
    errno = 0;
    if (!is_float) {
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (errno == ERANGE) fail_here("integer " + text + " does not fit in 64 bits");
      value.kind = JsonValue::Kind::kInt;
      value.integer = v;
    } else {
      value.number = std::strtod(text.c_str(), &end);
      value.kind = JsonValue::Kind::kFloat;
    }
    if (!end || *end != '\0') fail_here("invalid number '" + text + "'");
    return value;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  uint32_t parse_hex4() {
    uint32_t cp = 0;
    for (int i = 0; i < 4; ++i) {
      if (at_end()) fail("unexpected end of input in a \\u escape");
      char h = next();
      cp <<= 4;
      if (h >= '0' && h <= '9')
        cp |= h - '0';
      else if (h >= 'a' && h <= 'f')
        cp |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F')
        cp |= h - 'A' + 10;
      else
        fail("invalid \\u escape");
    }
    return cp;
  }

  std::string parse_string() {
    next();  // opening quote
    std::string out;
    while (true) {
      if (at_end()) fail("unexpected end of input in a string");
      if (static_cast<unsigned char>(peek()) < 0x20) fail("control character in a string (escape it)");
      char c = next();
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) fail("unexpected end of input in an escape");
      char e = next();
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = parse_hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (at_end() || next() != '\\' || at_end() || next() != 'u') fail("unpaired surrogate in \\u escape");
            uint32_t low = parse_hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("invalid low surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  std::string_view text_;
  std::string source_;
  int max_depth_;
  size_t pos_ = 0;
  int line_ = 1, column_ = 1;
};

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}  // namespace

JsonValue parse_json(std::string_view text, const std::string& source, int max_depth) {
  return JsonReader(text, source, max_depth).document();
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kBase64[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint8_t(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= uint8_t(bytes[i + 1]) << 8;
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kBase64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) LOOM_THROW(Error) << "invalid base64: length " << text.size() << " is not a multiple of 4";
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = text[i + k];
      uint32_t d;
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        ++pad;
        d = 0;
      } else {
        if (pad) LOOM_THROW(Error) << "invalid base64: data after '=' padding";
        const char* at = std::strchr(kBase64, c);
        if (!at || c == '\0') LOOM_THROW(Error) << "invalid base64 character at offset " << (i + k);
        d = static_cast<uint32_t>(at - kBase64);
      }
      v = (v << 6) | d;
    }
    out += static_cast<char>((v >> 16) & 0xFF);
    if (pad < 2) out += static_cast<char>((v >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(v & 0xFF);
  }
  return out;
}

}  // namespace loom
