#include "loom/support/strings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace loom {

std::vector<std::string> split(std::string_view text, char separator, bool skip_empty) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    std::string part(text.substr(start, end - start));
    if (!part.empty() || !skip_empty) parts.push_back(std::move(part));
    start = end + 1;
  }
  return parts;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += separator;
    out += parts[i];
  }
  return out;
}

std::string trim(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

bool is_c_identifier(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  for (char c : text)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

std::string c_string_literal(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c >= 32 && c < 127 && c != '"' && c != '\\' && c != '?') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\%03o", c);
      out += buf;
    }
  }
  return out + "\"";
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// Optimal string alignment distance: insertions, deletions, substitutions
// and transpositions of adjacent characters (the commonest typo) cost 1.
// Three rows of the table (O(|b|) memory); returns `limit` as soon as the
// distance is known to reach it.
size_t edit_distance(std::string_view a, std::string_view b, size_t limit) {
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) >= limit) return limit;
  std::vector<size_t> two_up(b.size() + 1), up(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) up[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    size_t row_min = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({up[j] + 1, row[j - 1] + 1, up[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], two_up[j - 2] + 1);
      row_min = std::min(row_min, row[j]);
    }
    if (row_min >= limit) return limit;
    std::swap(two_up, up);
    std::swap(up, row);
  }
  return std::min(up[b.size()], limit);
}

std::string closest_match(std::string_view name, const std::vector<std::string>& candidates) {
  // Suggestions are for typos in names a person wrote: a longer name (a
  // generated one, or hostile input) gets none, so the cost stays bounded
  // by candidates x kMaxSuggestedName^2 whatever the lengths.
  if (name.size() > kMaxSuggestedName) return "";
  std::string best;
  size_t best_distance = std::max<size_t>(2, name.size() / 3) + 1;
  for (const auto& candidate : candidates) {
    if (candidate.size() > kMaxSuggestedName) continue;
    size_t d = edit_distance(name, candidate, best_distance);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best = closest_match(name, candidates);
  return best.empty() ? std::string() : "; did you mean '" + best + "'?";
}

std::string source_excerpt(const std::string& text, int line, int column) {
  size_t start = 0;
  for (int l = 1; l < line && start != std::string::npos; ++l) {
    start = text.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos || start > text.size()) return "";
  size_t end = text.find('\n', start);
  std::string source_line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  // A long line (generated input) is shown as a window around the column.
  constexpr size_t kBefore = 60, kAfter = 40;
  // A reader's column may lie past the line's end (yaml-cpp counts some
  // bytes differently): the caret then points just after the line.
  size_t caret = std::min(static_cast<size_t>(std::max(0, column - 1)), source_line.size());
  if (source_line.size() > kBefore + kAfter + 20) {
    size_t from = caret > kBefore ? caret - kBefore : 0;
    std::string window = source_line.substr(from, kBefore + kAfter);
    bool cut_end = from + window.size() < source_line.size();
    source_line = (from ? "..." : "") + window + (cut_end ? "..." : "");
    caret = caret - from + (from ? 3 : 0);
  }
  return "\n  " + source_line + "\n  " + std::string(caret, ' ') + "^";
}

std::string format_double(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  double magnitude = std::fabs(value);
  auto round_trips = [&]() { return std::strtod(buffer, nullptr) == value; };
  bool found = false;
  if (magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e16)) {
    // Up to 17 significant digits: 17 decimals plus the leading zeros of
    // magnitudes below 1 (at most 4 here).
    for (int decimals = 0; decimals <= 21 && !found; ++decimals) {
      std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
      found = round_trips();
    }
  }
  for (int precision = 1; precision <= 17 && !found; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    found = round_trips();
  }
  std::string text = buffer;
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

}  // namespace loom
