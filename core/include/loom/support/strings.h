// Small string helpers shared by every registry: splitting, joining and the
// "did you mean" suggestion that every unknown-name error carries.
#ifndef LOOM_SUPPORT_STRINGS_H_
#define LOOM_SUPPORT_STRINGS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

std::vector<std::string> split(std::string_view text, char separator, bool skip_empty = true);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
std::string trim(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);
bool ends_with(std::string_view text, std::string_view suffix);
// A C identifier: a letter or '_', then letters, digits and '_'.
bool is_c_identifier(std::string_view text);
// `text` as a C string literal, quotes included: printable ASCII as it
// is, but for '"', '\\' and '?' (trigraphs), which are octal escapes like
// every other byte.
std::string c_string_literal(std::string_view text);

// "\n  <line LINE of text>\n  <spaces>^": the source line and a caret under
// COLUMN (1-based), appended to located error messages.
std::string source_excerpt(const std::string& text, int line, int column);

// The shortest decimal text that reads back as the same double: fixed
// notation for ordinary magnitudes ("10.0", "0.001"), exponent otherwise
// ("1e+20"); "nan", "inf", "-inf".
std::string format_double(double value);

// Edit distance between a and b, counting a swap of adjacent characters as
// one edit (optimal string alignment); `limit` when it is `limit` or more
// (computed in O(|b|) memory, stopping early).
size_t edit_distance(std::string_view a, std::string_view b, size_t limit = SIZE_MAX);

// Names longer than this get no suggestion (docs/reliability.md, "Cost").
constexpr size_t kMaxSuggestedName = 64;

// The candidate closest to `name`, or "" when none is close enough to be a
// plausible typo (distance at most max(2, len/3)) or either is longer than
// kMaxSuggestedName.
std::string closest_match(std::string_view name, const std::vector<std::string>& candidates);

// "; did you mean 'x'?" or "" -- appended to unknown-name errors.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace loom

#endif  // LOOM_SUPPORT_STRINGS_H_
