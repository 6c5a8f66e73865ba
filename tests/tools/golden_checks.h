// The directives a golden file (tests/fixtures/passes, tests/fixtures/codegen;
// docs/passes.md, "Golden tests") states its expectations with, when a whole
// expected module would say more than the case tests:
//
//   # check: TEXT          TEXT occurs in the printed output, after the previous
//                          check's match (FileCheck's CHECK)
//   # check-next: TEXT     ... on the line right after the previous match
//   # check-not: TEXT      TEXT does not occur between the previous match and
//                          the next check's (or the end of the output)
//   # expect-error@+N: M   (a line of the input) an error whose message contains M
//   # expect-error@-N: M   is reported at the line N below / above this one
//   CODE  # expect-error: M   ... at this line
//
// Whitespace runs in TEXT and in the output compare as one space.  An
// error's location is the SOURCE:LINE:COL a parse error starts with, or,
// for a diagnostic "@f: message" (ir::Diagnostic's form, one per line of
// the error), the line that defines @f in the case's input.
//
// A line that looks like one of these directives but is not well formed
// ("# check:" with no text, "# CHECK:", "# check-nxt:", "# expect-error@1:")
// is an Error naming its file and line, never a comment.
#ifndef LOOM_TESTS_TOOLS_GOLDEN_CHECKS_H_
#define LOOM_TESTS_TOOLS_GOLDEN_CHECKS_H_

#include <optional>
#include <string>
#include <vector>

namespace loom::golden {

struct Check {
  enum class Kind { kCheck, kNext, kNot } kind = Kind::kCheck;
  std::string text;  // whitespace runs as one space, trimmed
  int line = 0;      // of the directive, in its file
};

// The check a line states; nullopt when the line is no check directive.
// Throws Error "PATH:LINE: ..." for a malformed one.
std::optional<Check> parse_check(const std::string& line, const std::string& path, int line_number);

// Throws Error "PATH:LINE: ..." when the checks cannot run as a sequence (a
// check-next with no check before it, only check-not lines).
void validate_checks(const std::vector<Check>& checks, const std::string& path);

// "" when every check holds on `output`; else the check that failed (its
// PATH:LINE and text), why, and the part of the output it searched, with
// the output's line numbers.
std::string run_checks(const std::vector<Check>& checks, const std::string& output, const std::string& path);

struct ExpectedError {
  int line = 0;            // where the error must be reported, in the file
  std::string message;     // what its message must contain
  int directive_line = 0;  // of the expect-error
};

// The located error a line of a case's input states (`# expect-error@+N: M`
// on its own line, or `CODE  # expect-error: M` after code); nullopt when
// it states none, including the plain `# expect-error: M` line that ends a
// case.  Throws Error "PATH:LINE: ..." for a malformed one.
std::optional<ExpectedError> parse_expected_error(const std::string& line, const std::string& path, int line_number);

// One error (or one line of an error) with its location.
struct Diagnostic {
  int line = 0;         // in the file; 0: no location
  std::string where;    // "line 12", "@f (line 12)", "@f (not defined in the input)", ""
  std::string message;  // without the location
};

// The located diagnostics of an error's text: each line that starts with
// "PATH:LINE:COL: " or "@f: " (the line defining @f found among
// `input_lines`, numbered from `first_input_line` in the file).
std::vector<Diagnostic> diagnostics_of(const std::string& error, const std::string& path,
                                       const std::vector<std::string>& input_lines, int first_input_line);

// "" when each expected error is a diagnostic at its line containing its
// message and every located diagnostic is expected; else what was
// expected and what came.  `error` is empty when the run succeeded.
std::string match_errors(const std::vector<ExpectedError>& expected, const std::string& error,
                         const std::vector<Diagnostic>& diagnostics, const std::string& path);

// Whitespace runs as one space (the comparison checks use).
std::string squeeze_spaces(const std::string& text);

// Whether a comment line looks like a directive that `known` lists (or a
// close misspelling of one, or one in other case): "# NAME:" or "# NAME@".
// For rejecting a directive where it would otherwise be read as a comment.
bool looks_like_directive(const std::string& line, const std::vector<std::string>& known, std::string* name);

}  // namespace loom::golden

#endif  // LOOM_TESTS_TOOLS_GOLDEN_CHECKS_H_
