// The lexer of the IR text format (lexer.h).
#include "lexer.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "loom/support/error.h"
#include "loom/support/json.h"
#include "loom/support/strings.h"

namespace loom::text {

namespace {

const char* kPunctuation[] = {"->", "//", "==", "!=", "<=", ">=", "&&", "||", "(", ")", "[", "]", "{", "}",
                              ",",  ":",  ";",  "=",  "<",  ">",  "+",  "-",  "*", "/", "%", "!", ".", "?"};

class Lexer {
 public:
  Lexer(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    while (true) {
      skip();
      Token t{Tok::kEnd, "", line_, column_, pos_};
      if (pos_ >= text_.size()) {
        tokens.push_back(t);
        return tokens;
      }
      char c = text_[pos_];
      // '%' directly followed by a name character is a local's sigil;
      // otherwise it is the floor-mod operator.
      bool sigil =
          (c == '@') || (c == '%' && pos_ + 1 < text_.size() &&
                         (std::isalnum(static_cast<unsigned char>(text_[pos_ + 1])) || text_[pos_ + 1] == '_'));
      if (sigil) {
        advance();
        t.kind = c == '%' ? Tok::kLocal : Tok::kGlobal;
        if (c == '@' && pos_ < text_.size() && text_[pos_] == '"') {
          t.text = string_literal();
        } else {
          t.text = name(c == '@');
          if (t.text.empty()) fail(t, std::string("expected a name after '") + c + "'");
        }
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        t.kind = Tok::kIdent;
        t.text = name(true);
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        // After '.', a number is a tuple index: x.0.2 is (x.0).2, not x.(0.2).
        bool index = !tokens.empty() && tokens.back().kind == Tok::kPunct && tokens.back().text == ".";
        number(t, index);
      } else if (text_.compare(pos_, 3, "\"\"\"") == 0) {
        t.kind = Tok::kString;
        t.text = multiline_string();
      } else if (c == '"') {
        t.kind = Tok::kString;
        t.text = string_literal();
      } else {
        t.kind = Tok::kPunct;
        for (const char* p : kPunctuation) {
          size_t n = std::strlen(p);
          if (text_.compare(pos_, n, p) == 0) {
            t.text = p;
            break;
          }
        }
        if (t.text.empty()) fail(t, std::string("unexpected character '") + c + "'");
        for (size_t i = 0; i < t.text.size(); ++i) advance();
      }
      tokens.push_back(std::move(t));
    }
  }

  [[noreturn]] void fail(const Token& t, const std::string& message) {
    fail_at(text_, source_, t.line, t.column, message);
  }

 private:
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }
  void skip() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        advance();
      } else {
        break;
      }
    }
  }
  std::string name(bool allow_dot) {
    size_t start = pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (allow_dot && c == '.' && pos_ > start)) {
        advance();
      } else {
        break;
      }
    }
    return text_.substr(start, pos_ - start);
  }
  void number(Token& t, bool integer_only) {
    size_t start = pos_;
    bool is_float = false;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) advance();
    if (integer_only) {
      t.kind = Tok::kInt;
      t.text = text_.substr(start, pos_ - start);
      return;
    }
    if (pos_ + 1 < text_.size() && text_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(text_[pos_ + 1]))) {
      is_float = true;
      advance();
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) advance();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t look = pos_ + 1;
      if (look < text_.size() && (text_[look] == '+' || text_[look] == '-')) ++look;
      if (look < text_.size() && std::isdigit(static_cast<unsigned char>(text_[look]))) {
        is_float = true;
        while (pos_ < look) advance();
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) advance();
      }
    }
    t.kind = is_float ? Tok::kFloat : Tok::kInt;
    t.text = text_.substr(start, pos_ - start);
  }
  // A JSON string literal, decoded.
  std::string string_literal() {
    Token start{Tok::kString, "", line_, column_, pos_};
    size_t begin = pos_;
    advance();
    while (true) {
      if (pos_ >= text_.size()) fail(start, "unterminated string");
      char c = text_[pos_];
      if (c == '\n') fail(start, "unterminated string (a string ends on its line; write \\n)");
      advance();
      if (c == '\\') {
        if (pos_ >= text_.size()) fail(start, "unterminated string");
        advance();
      } else if (c == '"') {
        break;
      }
    }
    try {
      return parse_json(text_.substr(begin, pos_ - begin)).string;
    } catch (const ParseError& e) {
      fail(start, "invalid string literal: " + e.message());
    }
  }

  // A multi-line string: """, a line break, then the lines verbatim (no
  // escapes) up to the next """.  The line break after the opening """ is
  // not part of the string.
  std::string multiline_string() {
    Token start{Tok::kString, "", line_, column_, pos_};
    for (int k = 0; k < 3; ++k) advance();
    if (pos_ >= text_.size() || text_[pos_] != '\n')
      fail(start, "a multi-line string's opening \"\"\" ends its line (the text starts on the next line)");
    advance();
    size_t begin = pos_;
    while (text_.compare(pos_, 3, "\"\"\"") != 0) {
      if (pos_ >= text_.size()) fail(start, "unterminated multi-line string (it ends with \"\"\")");
      advance();
    }
    std::string out = text_.substr(begin, pos_ - begin);
    for (int k = 0; k < 3; ++k) advance();
    return out;
  }

  const std::string& text_;
  std::string source_;
  size_t pos_ = 0;
  int line_ = 1, column_ = 1;
};

}  // namespace

std::vector<Token> lex(const std::string& text, const std::string& source) { return Lexer(text, source).run(); }

void fail_at(const std::string& text, const std::string& source, int line, int column, const std::string& message) {
  throw ParseError(source, line, column, message + source_excerpt(text, line, column));
}

}  // namespace loom::text
