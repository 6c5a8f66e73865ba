// The lexer of the IR text format (docs/ir-text-format.md): the text as
// tokens, each with its line and column, for the parser.
#ifndef LOOM_SRC_TEXT_LEXER_H_
#define LOOM_SRC_TEXT_LEXER_H_

#include <cstddef>
#include <string>
#include <vector>

namespace loom::text {

enum class Tok { kIdent, kLocal, kGlobal, kInt, kFloat, kString, kPunct, kEnd };

struct Token {
  Tok kind;
  std::string text;  // identifier/name without sigil, literal text, decoded string, punctuation
  int line, column;
  size_t offset;
};

// The tokens of `text`, the last one kEnd.  Throws ParseError at a
// character or literal that starts no token.
std::vector<Token> lex(const std::string& text, const std::string& source);

// A ParseError at (line, column) of `source` whose message is followed by
// the source line and a caret under the column.
[[noreturn]] void fail_at(const std::string& text, const std::string& source, int line, int column,
                          const std::string& message);

}  // namespace loom::text

#endif  // LOOM_SRC_TEXT_LEXER_H_
