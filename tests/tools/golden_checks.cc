// The check and located-error directives of the golden files
// (golden_checks.h): parsing each line strictly, and matching them against a
// case's output or error with messages that show what was searched.
#include "golden_checks.h"

#include <algorithm>
#include <cctype>

#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::golden {

namespace {

std::string at(const std::string& path, int line) { return path + ":" + std::to_string(line) + ": "; }

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// After '#' and spaces: the directive's word (letters and '-') and what follows it.
bool directive_word(const std::string& line, std::string* word, std::string* rest) {
  std::string t = trim(line);
  if (t.empty() || t[0] != '#') return false;
  size_t k = 1;
  while (k < t.size() && t[k] == ' ') ++k;
  size_t start = k;
  while (k < t.size() && (std::isalpha(static_cast<unsigned char>(t[k])) || t[k] == '-')) ++k;
  if (k == start) return false;
  *word = t.substr(start, k - start);
  *rest = t.substr(k);
  return true;
}

// "+N" or "-N" (N > 0 unless `allow_zero`) then ':' and a message: the offset
// and the message; throws for anything else.
std::pair<int, std::string> offset_and_message(const std::string& text, const std::string& path, int line,
                                               bool allow_zero) {
  const std::string usage =
      "write '# expect-error@+N: MESSAGE' (the error is reported N lines below), '@-N' (above), or "
      "'CODE  # expect-error: MESSAGE' (at that line)";
  size_t k = 0;
  int sign = 0;
  if (k < text.size() && (text[k] == '+' || text[k] == '-')) sign = text[k++] == '+' ? 1 : -1;
  size_t digits = k;
  while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) ++k;
  if (sign == 0 || k == digits || k - digits > 6) {
    throw Error(at(path, line) + "malformed expect-error offset '@" + text.substr(0, text.find(':')) + "': " + usage);
  }
  int offset = sign * std::stoi(text.substr(digits, k - digits));
  if (k >= text.size() || text[k] != ':')
    throw Error(at(path, line) + "expect-error needs ':' after its offset: " + usage);
  std::string message = trim(text.substr(k + 1));
  if (message.empty()) throw Error(at(path, line) + "expect-error states no message: " + usage);
  if (offset == 0 && !allow_zero) {
    throw Error(at(path, line) +
                "'# expect-error@+0' points at its own comment line, where no error is reported: " + usage);
  }
  return {offset, message};
}

struct Position {
  size_t line = 0, column = 0;
};

// The first occurrence of `text` in `lines` at or after `from` and before
// `until` (a match must end by `until`); nullopt when none.
std::optional<Position> find(const std::vector<std::string>& lines, const std::string& text, Position from,
                             Position until) {
  for (size_t l = from.line; l < lines.size() && l <= until.line; ++l) {
    size_t start = l == from.line ? from.column : 0;
    size_t c = lines[l].find(text, std::min(start, lines[l].size()));
    if (c == std::string::npos) continue;
    if (l == until.line && c + text.size() > until.column) return std::nullopt;
    return Position{l, c};
  }
  return std::nullopt;
}

std::string numbered(const std::vector<std::string>& original, size_t from, size_t to) {
  std::string out;
  for (size_t l = from; l < to && l < original.size(); ++l) {
    std::string number = std::to_string(l + 1);
    out += std::string(number.size() < 4 ? 4 - number.size() : 0, ' ') + number + " | " + original[l] + "\n";
  }
  return out.empty() ? "  (nothing)\n" : out;
}

}  // namespace

std::string squeeze_spaces(const std::string& text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
      space = true;
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  if (space) out += ' ';
  return out;
}

bool looks_like_directive(const std::string& line, const std::vector<std::string>& known, std::string* name) {
  std::string word, rest;
  if (!directive_word(line, &word, &rest)) return false;
  std::string w = lower(word);
  bool punctuated = !rest.empty() && (rest[0] == ':' || rest[0] == '@' || trim(rest).rfind(':', 0) == 0);
  // The check and expect families are reserved words at a comment's start;
  // the other directives only with their colon.
  bool reserved = w == "check" || starts_with(w, "check-") || w == "expect" || starts_with(w, "expect-");
  bool listed = std::find(known.begin(), known.end(), w) != known.end();
  bool misspelt = false;
  for (const std::string& k : known) misspelt = misspelt || (k.size() >= 5 && edit_distance(w, k, 2) <= 1);
  if (reserved || (punctuated && (listed || misspelt))) {
    *name = word;
    return true;
  }
  return false;
}

std::optional<Check> parse_check(const std::string& line, const std::string& path, int line_number) {
  std::string word, rest;
  if (!directive_word(line, &word, &rest)) return std::nullopt;
  std::string w = lower(word);
  if (w != "check" && !starts_with(w, "check-")) return std::nullopt;
  const std::string usage = "write '# check: TEXT', '# check-next: TEXT' or '# check-not: TEXT'";
  Check check;
  if (word == "check") {
    check.kind = Check::Kind::kCheck;
  } else if (word == "check-next") {
    check.kind = Check::Kind::kNext;
  } else if (word == "check-not") {
    check.kind = Check::Kind::kNot;
  } else {
    throw Error(at(path, line_number) + "'# " + word + "' is not a check directive: " + usage);
  }
  if (rest.empty() || rest[0] != ':') {
    throw Error(at(path, line_number) + "'# " + word + "' needs a ':' right after it: " + usage);
  }
  check.text = trim(squeeze_spaces(rest.substr(1)));
  if (check.text.empty()) throw Error(at(path, line_number) + "'# " + word + ":' states no text to find: " + usage);
  check.line = line_number;
  return check;
}

void validate_checks(const std::vector<Check>& checks, const std::string& path) {
  bool matched_before = false;
  for (const Check& c : checks) {
    if (c.kind == Check::Kind::kNext && !matched_before) {
      throw Error(at(path, c.line) + "'# check-next:' needs a '# check:' before it (the line it follows)");
    }
    if (c.kind != Check::Kind::kNot) matched_before = true;
  }
}

std::string run_checks(const std::vector<Check>& checks, const std::string& output, const std::string& path) {
  std::vector<std::string> original = split(output, '\n', false);
  if (!original.empty() && original.back().empty()) original.pop_back();
  std::vector<std::string> lines;
  for (const std::string& l : original) lines.push_back(squeeze_spaces(l));
  const Position end{lines.empty() ? 0 : lines.size() - 1, lines.empty() ? 0 : lines.back().size()};

  Position from;  // the end of the previous match
  const Check* previous = nullptr;
  size_t previous_line = 0;  // of the previous match
  std::vector<const Check*> nots;
  auto after = [&]() {
    return previous ? "after output line " + std::to_string(previous_line + 1) + ", where the check of " + path + ":" +
                          std::to_string(previous->line) + " matched"
                    : std::string("in the output");
  };
  // The check-nots pending, over [from, until).
  auto check_nots = [&](Position until) -> std::string {
    for (const Check* n : nots) {
      if (auto hit = find(lines, n->text, from, until)) {
        return at(path, n->line) + "check-not '" + n->text + "' occurs at output line " +
               std::to_string(hit->line + 1) + ", " + after() + "; searched:\n" +
               numbered(original, from.line, until.line + 1);
      }
    }
    nots.clear();
    return "";
  };
  for (const Check& c : checks) {
    if (c.kind == Check::Kind::kNot) {
      nots.push_back(&c);
      continue;
    }
    std::optional<Position> match;
    if (c.kind == Check::Kind::kNext) {
      size_t next = previous_line + 1;
      if (next < lines.size()) match = find(lines, c.text, Position{next, 0}, Position{next, lines[next].size()});
      if (!match) {
        std::string message = at(path, c.line) + "check-next '" + c.text + "' is not on the line after output line " +
                              std::to_string(previous_line + 1) + ", where the check of " + path + ":" +
                              std::to_string(previous->line) + " matched";
        if (auto later = find(lines, c.text, from, end))
          message += "; it occurs at output line " + std::to_string(later->line + 1);
        return message + "; searched:\n" + numbered(original, previous_line, next + 1);
      }
    } else {
      match = find(lines, c.text, from, end);
      if (!match) {
        std::string message = at(path, c.line) + "check '" + c.text + "' does not occur " + after();
        if (auto earlier = find(lines, c.text, Position{}, end)) {
          message += "; it occurs at output line " + std::to_string(earlier->line + 1) + ", before that match";
        }
        return message + "; searched:\n" + numbered(original, from.line, lines.size());
      }
    }
    if (std::string problem = check_nots(*match); !problem.empty()) return problem;
    from = Position{match->line, match->column + c.text.size()};
    previous = &c;
    previous_line = match->line;
  }
  if (!lines.empty()) {
    if (std::string problem = check_nots(Position{end.line, end.column}); !problem.empty()) return problem;
  }
  return "";
}

std::optional<ExpectedError> parse_expected_error(const std::string& line, const std::string& path, int line_number) {
  std::string t = trim(line);
  const std::string marker = "# expect-error";
  if (starts_with(t, "#")) {
    if (!starts_with(t, marker + "@")) return std::nullopt;
    auto [offset, message] = offset_and_message(t.substr(marker.size() + 1), path, line_number, false);
    return ExpectedError{line_number + offset, message, line_number};
  }
  size_t k = line.find(marker);
  if (k == std::string::npos) return std::nullopt;
  std::string rest = line.substr(k + marker.size());
  if (starts_with(rest, "@")) {
    auto [offset, message] = offset_and_message(rest.substr(1), path, line_number, true);
    return ExpectedError{line_number + offset, message, line_number};
  }
  if (!starts_with(rest, ":")) {
    throw Error(at(path, line_number) +
                "'# expect-error' after code needs ':' and the message (the error at this line)");
  }
  std::string message = trim(rest.substr(1));
  if (message.empty()) throw Error(at(path, line_number) + "expect-error states no message");
  return ExpectedError{line_number, message, line_number};
}

std::vector<Diagnostic> diagnostics_of(const std::string& error, const std::string& path,
                                       const std::vector<std::string>& input_lines, int first_input_line) {
  std::vector<Diagnostic> out;
  for (const std::string& raw : split(error, '\n', true)) {
    std::string s = trim(raw);
    if (starts_with(s, path + ":")) {
      // PATH:LINE:COL: message
      size_t k = path.size() + 1, digits = k;
      while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
      if (k == digits || k - digits > 9 || k >= s.size() || s[k] != ':') continue;
      int line = std::stoi(s.substr(digits, k - digits));
      size_t colon = s.find(": ", k);
      if (colon == std::string::npos) continue;
      out.push_back(Diagnostic{line, "line " + std::to_string(line), s.substr(colon + 2)});
    } else if (starts_with(s, "@")) {
      // @f: message, at the line that defines @f
      size_t k = 1;
      while (k < s.size() && (std::isalnum(static_cast<unsigned char>(s[k])) || s[k] == '_' || s[k] == '.')) ++k;
      if (k == 1 || s.compare(k, 2, ": ") != 0) continue;
      std::string name = s.substr(0, k);
      Diagnostic d{0, name + " (not defined in the input)", s.substr(k + 2)};
      for (size_t i = 0; i < input_lines.size(); ++i) {
        std::string line = trim(input_lines[i]);
        if (!starts_with(line, name)) continue;
        std::string after = trim(line.substr(name.size()));
        if (!starts_with(after, "=")) continue;
        d.line = first_input_line + static_cast<int>(i);
        d.where = name + " (line " + std::to_string(d.line) + ")";
        break;
      }
      out.push_back(d);
    }
  }
  return out;
}

std::string match_errors(const std::vector<ExpectedError>& expected, const std::string& error,
                         const std::vector<Diagnostic>& diagnostics, const std::string& path) {
  std::string problems;
  std::vector<bool> used(diagnostics.size(), false);
  for (const ExpectedError& e : expected) {
    bool found = false;
    for (size_t k = 0; k < diagnostics.size() && !found; ++k) {
      if (diagnostics[k].line == e.line && diagnostics[k].message.find(e.message) != std::string::npos) {
        used[k] = found = true;
      }
    }
    if (found) continue;
    problems += at(path, e.directive_line) + "expected an error at line " + std::to_string(e.line) + " containing '" +
                e.message + "'";
    std::string there;
    for (const Diagnostic& d : diagnostics)
      if (d.line == e.line) there += (there.empty() ? "" : "; ") + std::string("'") + d.message + "'";
    problems += error.empty()   ? "; the run succeeded\n"
                : there.empty() ? "; no error is reported there\n"
                                : "; the error there says " + there + "\n";
  }
  for (size_t k = 0; k < diagnostics.size(); ++k) {
    if (used[k] || diagnostics[k].line == 0) continue;
    problems +=
        "an error at " + diagnostics[k].where + " that no expect-error states: '" + diagnostics[k].message + "'\n";
  }
  if (problems.empty()) return "";
  if (!error.empty()) {
    problems += "the error:\n";
    for (const std::string& l : split(error, '\n', false)) problems += "  " + l + "\n";
    std::string where;
    for (const Diagnostic& d : diagnostics) where += (where.empty() ? "" : ", ") + d.where;
    problems += where.empty() ? "(it has no location: neither FILE:LINE:COL nor '@f:')\n"
                              : "(its located parts: " + where + ")\n";
  }
  return problems;
}

}  // namespace loom::golden
